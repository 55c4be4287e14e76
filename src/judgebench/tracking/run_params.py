"""Which parts of a job's config become its MLflow params: the leaves that define the cell, masked, and the values
too long for a param set aside as artifact texts.

Params say what a cell computes, so that runs can be searched and compared by them; where and how a job runs
(class paths, caches, rate limits, devices, prices) and the dataset's file paths (the dataset input holds their
digest) stay in the full config, the run's ``config.yaml`` artifact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from judgebench.identity import PACING
from judgebench.secrets import mask_secrets

PARAM_MAX = 500  # longer values (prompts, path lists) go to artifacts, not params


def flatten(tree: Mapping, prefix: str = "") -> dict[str, Any]:
    """A nested mapping's leaves by their dotted paths."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{name}."))
        else:
            out[name] = v
    return out


# What defines a cell: these config groups and top-level keys are params; the rest of the config (where
# and how a job runs) is in config.yaml only.
CELL_GROUPS = ("dataset", "ranker", "perturbation", "judge", "rewriter", "simulation")
CELL_KEYS = ("job", "max_failed_share")
# Leaves that say how a component runs, not what it computes (class paths, caches, rate limits,
# devices, prices), and the dataset's file paths (the dataset input holds their digest and source).
HOW = {
    *PACING,
    "_target_",
    "cache_dir",
    "progress",
    "device",
    "dtype",
    "batch_size",
    "batch_tokens",
    "api_key_env",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "mode",
    "poll_interval_s",
    "max_requests",
    "max_bytes",
    "price_factor",
}  # batch mode: how, not what
DATASET_FILES = {"data_dir", "topics", "qrels", "pool", "passages", "ids"}


def cell_config(config: Mapping) -> dict[str, Any]:
    """The flattened leaves of the config that define the cell (None values left out)."""
    out = {}
    for k, v in flatten(config).items():
        parts = k.split(".")
        if parts[0] not in CELL_GROUPS and k not in CELL_KEYS:
            continue
        if v is None or parts[-1] in HOW or (parts[0] == "dataset" and parts[-1] in DATASET_FILES):
            continue
        out[k] = v
    return out


def params_from_config(config: Mapping) -> tuple[dict[str, str], dict[str, str]]:
    """The cell-defining params (cell_config), masked; values too long for a param are returned as artifact texts."""
    flat = cell_config(mask_secrets(config))
    params, long_values = {}, {}
    for k, v in flat.items():
        text = json.dumps(v) if isinstance(v, (list, dict)) else str(v)
        if len(text) > PARAM_MAX:
            long_values[k] = text
            params[k] = f"<artifact params/{k}.txt>"
        else:
            params[k] = text
    return params, long_values
