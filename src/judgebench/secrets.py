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

Kept free of heavy imports so the command line can check overrides before anything starts.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

MASK = "***"
MIN_SECRET_LEN = 8
CREDENTIAL_WORDS = frozenset(
    {"key", "apikey", "token", "secret", "password", "passwd", "credential", "credentials", "authorization", "auth", "bearer"}
)
# Kept for callers that match a key's last word with a regex (the same words, at the end of the key).
SECRET_KEY = re.compile(r"(?:^|[_.-])(?:api[_-]?key|apikey|key|secret|token|password|passwd|credentials?|authorization|auth|bearer)$", re.I)
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


def scrub_tree(value: Any) -> Any:
    """scrub() applied to every string of a nested config/JSON tree (keys included)."""
    if isinstance(value, Mapping):
        return {scrub_tree(k): scrub_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [scrub_tree(v) for v in value]
    return scrub(value)


def mask_secrets(value: Any, key: str = "") -> Any:
    """Replace every value whose key names a secret, at any depth; scrub the others."""
    if isinstance(value, Mapping):
        return {k: mask_secrets(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_secrets(v, key) for v in value]
    if key and is_secret_key(key) and value not in (None, ""):
        return MASK
    return scrub(value)


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
