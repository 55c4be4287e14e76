"""``judgebench models download``: fetch every Hugging Face model that some configs name, before the jobs run offline.

    judgebench models download ranker=prp_ul2,rankt5 judge=gemini_pro,gemini_flash
    judgebench models download google/flan-t5-xl          # a model by its hub id
    judgebench models download ranker=prp_ul2 --list      # what would be fetched, and its size; nothing fetched

Overrides are run.py's (``group=option``, comma lists sweep as in ``-m``, ``key=value``); every combination is
composed with Hydra's compose API and each ranker, judge and rewriter ``model_spec.model`` that is a hub id is
fetched into the hub cache (``HF_HOME``; :func:`judgebench.llm.local.hub.download`). The SmolLM2 alias and local
directories need nothing. Each model prints its id, size and destination.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence

from judgebench.errors import EXIT_CODE, print_error
from judgebench.exceptions import UserError


class DownloadFailed(UserError):
    """The hub could not list or send a model's files: names the model, the endpoint and the hub's error."""


USAGE = """usage: judgebench models download [MODEL_ID ...] [group=option[,option...] ...] [key=value ...] [--list]
  Fetch the Hugging Face models the composed configs name (ranker, judge, rewriter model_spec.model) into the
  hub cache (HF_HOME, default ~/.cache/huggingface), so that jobs can run with HF_HUB_OFFLINE=1.
  --list   print each model's files and size, fetch nothing"""
MODEL_PARTS = ("ranker", "judge", "rewriter")


def _expand(overrides: list[str]) -> list[list[str]]:
    """Every combination of the overrides' sweep values (``ranker=a,b judge=c`` -> [[ranker=a, judge=c], ...])."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    choices = []
    for text, parsed in zip(overrides, OverridesParser.create().parse_overrides(overrides)):
        if parsed.is_sweep_override():
            key = parsed.get_key_element()
            choices.append([f"{key}={v}" for v in parsed.sweep_string_iterator()])
        else:
            choices.append([text])
    return [list(combo) for combo in itertools.product(*choices)]


def models_named(overrides: list[str]) -> dict[str, list[str]]:
    """{model id: where it is named ("ranker PRP-FLAN-UL2", ...)} over every composed combination of ``overrides``."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from judgebench.config.config_dir import CONF_DIR

    found: dict[str, list[str]] = {}
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        for combo in _expand(overrides):
            cfg = compose("config", overrides=combo)
            for part in MODEL_PARTS:
                model = OmegaConf.select(cfg, f"{part}.model_spec.model", default=None, throw_on_missing=False)
                if model is None or str(model) == "???":
                    continue
                gguf = OmegaConf.select(cfg, f"{part}.model_spec.gguf_file", default=None)
                key = f"{model}::{gguf}" if gguf else str(model)
                where = f"{part} {OmegaConf.select(cfg, f'{part}.name', default='?')}"
                if where not in found.setdefault(key, []):
                    found[key].append(where)
    return found


def _gb(n: int) -> str:
    """Bytes as people read them (decimal units, as the hub shows sizes)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} B"


PROBE_TIMEOUT_S = 5.0
PROXY_ENV = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")
_REACHED: list[str] = []  # the endpoint, once it answered a connection in this process


def check_reachable() -> None:
    """One connection to the hub's host before the first hub call: offline, huggingface_hub retries a failed
    listing five times with backoff (~30 s) before its error. Behind a proxy the connection goes through it:
    then the hub client is left to say."""
    import socket
    import urllib.parse

    from judgebench.llm.local import hub

    url = hub.endpoint()
    if url in _REACHED or any(os.environ.get(v) for v in PROXY_ENV):
        return
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname or "", port), timeout=PROBE_TIMEOUT_S).close()
    except OSError as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise DownloadFailed(
            f"cannot reach {url} ({reason}): models download needs the network (or HF_ENDPOINT set to a "
            "mirror that answers); nothing was fetched"
        ) from None
    _REACHED.append(url)


def fetch(key: str, where: list[str], list_only: bool) -> int:
    """Plan and fetch one model; print its line; return the bytes planned."""
    from judgebench.llm.local import hub
    from judgebench.llm.local.offline_aliases import offline_model

    model, _, gguf = key.partition("::")
    named = f" ({', '.join(where)})" if where else ""
    offline = offline_model(model)
    if offline is not None:
        print(f"{model}{named}: shipped offline by the {offline.package} package, nothing to download")
        return 0
    if not hub.is_hub_id(model):
        print(f"{model}{named}: a local path, nothing to download")
        return 0
    check_reachable()
    try:
        plan = hub.plan_download(model, gguf or None)
        head = f"{model}{named}: {len(plan.files)} files, {_gb(plan.size)}"
        if list_only:
            print(f"{head} (--list: not fetched)")
            for name, size in sorted(plan.files.items()):
                print(f"    {name}  {_gb(size)}")
            return plan.size
        print(f"{head}: fetching into {hub.hub_cache_dir()} ...", flush=True)
        destination = hub.download(plan)
    except UserError:
        raise
    except Exception as exc:  # unknown or gated repository, no network, a broken transfer: one line naming the model
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        raise DownloadFailed(
            f"model {model} could not be fetched from {hub.endpoint()}: {type(exc).__name__}: {first}"
        ) from exc
    print(f"{model}: {_gb(plan.size)} -> {destination}", flush=True)
    return plan.size


def main(argv: Sequence[str]) -> int:
    args = list(argv)
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else EXIT_CODE
    if args[0] != "download":
        print_error(f"unknown models command {args[0]!r}\n{USAGE}")
        return EXIT_CODE
    from judgebench.llm.local import hub

    rest = args[1:]
    list_only = "--list" in rest
    rest = [a for a in rest if a != "--list"]
    overrides = [a for a in rest if "=" in a]
    ids = [a for a in rest if "=" not in a]
    bad = [a for a in ids if a.startswith("-")]
    if bad or not rest:
        print_error(
            f"models download: {'unknown option ' + bad[0] if bad else 'name a model or some overrides'}\n{USAGE}"
        )
        return EXIT_CODE
    if hub.offline():
        print_error(
            f"{hub.OFFLINE_ENV}=1 is set: models download needs the network; run it where there is one, "
            f"without {hub.OFFLINE_ENV}"
        )
        return EXIT_CODE
    from judgebench.checks import cli_checks
    from judgebench.config.config_dir import CONF_DIR

    unknown = cli_checks.unknown_option(overrides, CONF_DIR)
    if unknown:
        print_error(unknown)
        return EXIT_CODE
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    try:
        found = {i: [] for i in ids}
        for key, where in models_named(overrides).items():
            found.setdefault(key, []).extend(where)
        if not found:
            print(f"no local model in these configs ({' '.join(overrides)}): nothing to download")
            return 0
        total = sum(fetch(key, where, list_only) for key, where in found.items())
    except (UserError, HydraException, OmegaConfBaseException) as exc:  # a failed fetch, a bad override: one line
        first = (str(exc).strip().splitlines() or [""])[0]
        print_error(first if isinstance(exc, UserError) else f"models download: {first}")
        return EXIT_CODE
    verb = "listed" if list_only else "in the cache"
    print(
        f"{len(found)} models, {_gb(total)} {verb} ({hub.hub_cache_dir()}); jobs read them with HF_HUB_OFFLINE=1 and "
        "this HF_HOME"
    )
    return 0
