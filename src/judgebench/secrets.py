"""What counts as a secret, and keeping it out of everything the process writes or prints.

Two rules, shared by MLflow logging, artifacts, logging, error messages, the CLI and the sweep summary:

* a config key *named* like a credential (its last component has a word such as key, token, secret,
  password, credential, authorization, bearer) holds a secret: its value is masked (and refused on the
  command line); ``api_key_env`` and other ``*_env`` keys name a variable, they are not secrets;
* :func:`scrub` removes from any text the VALUES of the secrets the process knows (the environment
  variables the backends read, every variable whose name looks like a credential, and the ``api_key_env``
  names registered by the backends) and the userinfo of every URL (``http://user:KEY@host`` ->
  ``http://***@host``). Values shorter than :data:`MIN_SECRET_LEN` are left alone: they are no real key,
  and replacing them would mangle ordinary text.

One config-tree masker, :func:`mask_secrets`, with a rule saying which entries to mask: the values of secret keys
(params, logged configs, component hashes), or everything a saved config must not keep (:func:`secret_in_config`).
A secret written in a config or an override is refused here too (:func:`refuse_secret_overrides`,
:func:`refuse_secrets_in_config`): one line naming the key, never the value.

Kept free of heavy imports so the command line can check overrides before anything starts.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from judgebench.exceptions import SecretInConfig

MASK = "***"
MIN_SECRET_LEN = 8
CREDENTIAL_WORDS = frozenset(
    {
        "key",
        "apikey",
        "token",
        "secret",
        "password",
        "passwd",
        "credential",
        "credentials",
        "authorization",
        "auth",
        "bearer",
    }
)
# Kept for callers that match a key's last word with a regex (the same words, at the end of the key).
SECRET_KEY = re.compile(
    r"(?:^|[_.-])(?:api[_-]?key|apikey|key|secret|token|password|passwd|credentials?|authorization|auth|bearer)$", re.I
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Variables the backends read, whatever their value looks like.
KNOWN_SECRET_ENVS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
_REGISTERED: set[str] = set()
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/\s@?#'\"]+)@")


def _words(name: str) -> list[str]:
    name = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # camelCase -> camel_Case
    return [w for w in re.split(r"[^A-Za-z0-9]+", name.lower()) if w]


@lru_cache(maxsize=4096)
def is_secret_key(key: str) -> bool:
    """Whether a config key (dotted path or last component) names a credential, e.g. ``authorization``,
    ``hf_token``, ``apiKey``; not ``api_key_env`` (a variable name) nor ``max_output_tokens``."""
    words = _words(str(key).rsplit(".", 1)[-1])
    return bool(words) and words[-1] != "env" and any(w in CREDENTIAL_WORDS for w in words)


def register_secret_env(*names: str) -> None:
    """Environment variables whose values are secrets (a backend's api_key_env): scrubbed from all output."""
    _REGISTERED.update(n for n in names if isinstance(n, str) and ENV_NAME.match(n))


def secret_values() -> list[str]:
    """The secret values this process knows now, longest first (so a key containing another is masked whole)."""
    names = set(KNOWN_SECRET_ENVS) | _REGISTERED
    values = set()
    for k in list(os.environ):  # not .items(): another thread (MLflow) may delete a variable meanwhile
        v = os.environ.get(k) if (k in names or is_secret_key(k)) else None
        if v and len(v.strip()) >= MIN_SECRET_LEN:
            values.add(v)
    return sorted(values, key=len, reverse=True)


def mask_url(text: str) -> str:
    """Userinfo of every URL in text masked: ``https://user:pw@host/v1`` -> ``https://***@host/v1``."""
    return _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{MASK}@", text)


def scrub(text: Any) -> Any:
    """text with every known secret value and URL userinfo masked (non-strings are returned unchanged)."""
    if not isinstance(text, str) or not text:
        return text
    out = mask_url(text) if "@" in text else text
    for value in secret_values():
        if value in out:
            out = out.replace(value, MASK)
    return out


# A rule says whether one entry of a config tree holds a secret: (its dotted path, its key, its value already
# masked and scrubbed below it, whether it is an element of a list).
Rule = Callable[[str, str, Any, bool], bool]


def secret_key_entry(path: str, key: str, value: Any, in_list: bool) -> bool:
    """A value (or list element) under a key that names a secret (:func:`is_secret_key`), unless empty."""
    return bool(key) and is_secret_key(key) and not isinstance(value, list) and value not in (None, "")


def secret_in_config(path: str, key: str, value: Any, in_list: bool) -> bool:
    """What a saved config must not keep: a secret key's value, and any entry :func:`secret_problem` refuses (a key in
    an ``*_env`` setting, credentials in a URL, a known secret value), judged on the entry, not on a list's elements."""
    if secret_key_entry(path, key, value, in_list):
        return True
    if in_list or not key or isinstance(value, dict) or (isinstance(value, list) and not key.endswith("_env")):
        return False
    return secret_problem(path, value) is not None


def mask_secrets(value: Any, rule: Rule = secret_key_entry) -> Any:
    """The one config-tree masker: every entry that ``rule`` says holds a secret becomes MASK, every other string
    is scrubbed (:func:`scrub`), at any depth. The default rule masks the values of secret keys (params, logged
    configs, component hashes); :func:`secret_in_config` also masks what a saved config must not keep."""
    return _masked(value, rule, "", "", False)


def _masked(node: Any, rule: Rule, path: str, key: str, in_list: bool) -> Any:
    if isinstance(node, Mapping):
        return {k: _masked(v, rule, f"{path}.{k}" if path else str(k), str(k), False) for k, v in node.items()}
    out = [_masked(v, rule, path, key, True) for v in node] if isinstance(node, list) else scrub(node)
    return MASK if rule(path, key, out, in_list) else out


class ScrubFilter(logging.Filter):
    """Rewrites a log record's message (and its formatted traceback) with :func:`scrub`; drops nothing."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string: leave it to the handler to report
            return True
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = scrub(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = scrub(record.exc_text)
        return True


_INSTALLED: list[bool] = []


def install_log_scrubbing() -> None:
    """Scrub every log record of the process, whatever logger or handler it goes to (httpx, Hydra, MLflow).

    A filter on the root logger would miss records that propagate from child loggers, and Hydra replaces the
    handlers of every job with its own: so the filter runs in the record factory, where every record is made.
    """
    if _INSTALLED:
        return
    _INSTALLED.append(True)
    previous = logging.getLogRecordFactory()
    scrubber = ScrubFilter()

    def factory(*args, **kwargs):
        record = previous(*args, **kwargs)
        scrubber.filter(record)
        return record

    logging.setLogRecordFactory(factory)


# --------------------------------------------------------------------------- refusing a secret in a config


def _names_in(value: str) -> list[str]:
    """The variable names of an ``api_key_env`` override value: ``A``, ``[A,B]``, ``'A'``."""
    return [v.strip().strip("'\"") for v in value.strip().strip("[]").split(",") if v.strip()]


def secret_problem(key: str, value: Any) -> str | None:
    """What is wrong with a config entry that carries a secret (the value is never part of the answer)."""
    if value in (None, "", MASK) or (isinstance(value, (list, dict)) and not value):
        return None
    last = key.rsplit(".", 1)[-1]
    if last.lower().endswith("_env"):
        names = value if isinstance(value, list) else _names_in(str(value))
        if any(not isinstance(n, str) or not ENV_NAME.match(n) for n in names):
            return "env"
        return None
    if is_secret_key(last):
        return "secret"
    text = str(value)
    if mask_url(text) != text:
        return "url"
    if any(v in text for v in secret_values()):
        return "value"
    return None


def secret_override(argv: Sequence[str]) -> tuple[str, str] | None:
    """(key, problem) of the first ``key=value`` override that carries a secret, else None."""
    for arg in argv:
        if arg.startswith("-") or "=" not in arg:
            continue
        key, _, value = arg.partition("=")
        key = key.lstrip("+~")
        problem = secret_problem(key, value)
        if problem:
            return key, problem
    return None


def _secret_paths(node: Any, prefix: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for k, v in node.items():
            path = f"{prefix}{k}"
            problem = (
                secret_problem(path, v)
                if not isinstance(v, dict) and (not isinstance(v, list) or str(k).endswith("_env"))
                else None
            )
            if problem:
                yield path, problem
            elif isinstance(v, (dict, list)):
                yield from _secret_paths(v, f"{path}.")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            if isinstance(v, (dict, list)):
                yield from _secret_paths(v, f"{prefix}{i}.")
            elif secret_problem(f"{prefix}{i}", v) in ("url", "value"):
                yield f"{prefix}{i}", "url"


def _secret_message(key: str, problem: str = "secret") -> str:
    where = "they would be written to the run's output directory (.hydra/), MLflow and the shell history"
    if problem == "env":
        return (
            f"{key}: expected the name of an environment variable (letters, digits and _, e.g. OPENAI_API_KEY), "
            f"not a key (the value is not shown: {where}); set the variable and name it here"
        )
    if problem == "url":
        return (
            f"{key}: credentials inside a URL (user:password@) are not taken from the config or the command line "
            f"({where}); "
            "put the URL in the environment instead (OPENAI_BASE_URL) or use a URL without them"
        )
    return (
        f"{key}: API keys and other secrets are read from the environment only, never from the config or the "
        f"command line ({where}); remove it and "
        "set the variable the backend names instead (api_key_env, e.g. OPENAI_API_KEY or GEMINI_API_KEY)"
    )


def refuse_secret_overrides(argv: Sequence[str]) -> None:
    """Before Hydra writes anything: a secret on the command line is refused (value never in the message); the
    command line prints it as one line, exit 2."""
    found = secret_override(argv)
    if found is not None:
        raise SecretInConfig(_secret_message(*found))


def refuse_secrets_in_config(cfg) -> None:
    """A secret that came from a config file: mask it in Hydra's saved config.yaml and refuse the job."""
    from omegaconf import OmegaConf

    tree = OmegaConf.to_container(cfg, resolve=False)
    found = [(p, why) for p, why in _secret_paths(tree) if not p.startswith("hydra.")]
    if not found:
        return
    try:  # Hydra saved the composed config before the job started: mask the value there
        from hydra.core.hydra_config import HydraConfig

        saved = Path(HydraConfig.get().runtime.output_dir) / HydraConfig.get().output_subdir / "config.yaml"
        if saved.is_file():
            data = OmegaConf.to_container(OmegaConf.load(saved), resolve=False)
            OmegaConf.save(OmegaConf.create(mask_secrets(data, secret_in_config)), saved)
    except Exception:  # no Hydra context (tests) or output_subdir=null: nothing was saved
        pass
    raise SecretInConfig(_secret_message(*found[0]))
