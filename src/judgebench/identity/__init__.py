"""What makes two judges (rankers, rewriters) the same: a hash of the settings that change their output.

Names are for people and can collide: `judge=gemini_flash judge.backend.model=gemini-3.7-flash` keeps
the name of the default model's judge, two simulated judges with different weights share one name.
Every job run is tagged with the hash of its judge, system (ranker + perturbation) and rewriter, and
compare keys its columns by (name, model, hash), so distinct configurations never merge.

Settings that only say how the work is done (concurrency, rate limits, retries, timeouts, prices, online
or batch mode, device, batch size, paths, the server's URL) leave the hash alone: the same judge behind another
rate limit gives the same labels.

A class's ``_target_`` path enters every hash, yet a path is where the code lives, not what the component computes:
a class that moved keeps the path stores were written with (STABLE_TARGETS), so its finished cells are still found.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from judgebench.secrets import mask_secrets

# How a remote API client paces and retries its calls (llm/remote/api.py's arguments): never what it computes, so
# neither a component's hash (OPERATIONAL) nor a cell's params (tracking/run_params.py's HOW) hold them.
PACING = frozenset(
    {
        "max_concurrency",
        "min_concurrency",
        "initial_concurrency",
        "adaptive",
        "requests_per_minute",
        "tokens_per_minute",
        "max_retries",
        "timeout_s",
        "backoff_base_s",
        "backoff_max_s",
    }
)
OPERATIONAL = PACING | frozenset(
    {
        "cache_dir",
        "progress",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "device",
        "batch_size",
        "batch_tokens",
        "base_url",
        "api_key_env",
        "memory_gb",
        "params_b",
        "mode",
        "batch",  # online or batch API: the same prompt gets the same answer (and cache entry) either way
    }
)

# Keys that say where or how a job runs, not what it computes: left out of the config hash.
NON_SEMANTIC = (
    "tracking_uri",
    "artifact_root",
    "cache_dir",
    "force",
    "progress",
    "progress_interval_s",
    "sweep_id",
    "experiment_name",
    "dry_run",
    "gpu_estimate",
    "memory_gb",
    "params_b",
)


# Settings added after stores existed, with their defaults: at the default such a setting is left out of every hash
# (the config hash and the component hashes), so a store written before it existed resumes with nothing rerun; any
# other value enters the hash, so a judge read on another label scale never reuses a finished cell.
LATE_DEFAULTS = {("judge", "scale"): "graded", ("dataset", "relevant_from"): 2}


def without_late_defaults(tree: Mapping, section: str | None = None) -> dict:
    """``tree`` (a whole resolved config, or the node of ``section``) less the LATE_DEFAULTS set to their default."""
    out = dict(tree)
    for (where, key), default in LATE_DEFAULTS.items():
        if section == where:
            if key in out and out[key] in (default, None):
                out.pop(key)
        elif (
            section is None and isinstance(out.get(where), Mapping) and out[where].get(key, default) in (default, None)
        ):
            out[where] = {k: v for k, v in out[where].items() if k != key}
    return out


# Where a class moved (docs/architecture.md, llm/): its path today -> the path it had when stores were written, the
# name every hash reads. Each old path is written in two pieces so that the module-moving tool, which rewrites every
# dotted path it knows as moved, leaves it as it was. tests/identity/test_stable_targets.py checks each today's path
# imports, each old one does not, and that every configured `_target_` in a moved package is here.
_OLD_LLM = "judgebench.llm"
STABLE_TARGETS = {
    "judgebench.llm.remote.api.GeminiBackend": _OLD_LLM + ".api.GeminiBackend",
    "judgebench.llm.remote.api.OpenAIBackend": _OLD_LLM + ".api.OpenAIBackend",
    "judgebench.llm.remote.api.APIBackend": _OLD_LLM + ".api.APIBackend",
}


def stable_targets(node: Any) -> Any:
    """``node`` with every ``_target_`` that moved named by its stable (old) path, at any depth (dicts and lists)."""
    if isinstance(node, Mapping):
        return {
            k: STABLE_TARGETS.get(v, v) if k == "_target_" and isinstance(v, str) else stable_targets(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [stable_targets(v) for v in node]
    return node


def _strip(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {str(k): _strip(v) for k, v in node.items() if k not in OPERATIONAL}
    if isinstance(node, (list, tuple)):
        return [_strip(v) for v in node]
    return node


def component_hash(*nodes: Mapping | None, length: int = 10) -> str:
    """Hash of one or more resolved config nodes (e.g. ranker and perturbation), secrets masked."""
    tree = [_strip(stable_targets(mask_secrets(dict(n)))) if n is not None else None for n in nodes]
    return hashlib.sha256(json.dumps(tree, sort_keys=True, default=str).encode()).hexdigest()[:length]
