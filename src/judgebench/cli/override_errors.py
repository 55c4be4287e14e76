"""Hydra's own errors (a misspelt key, an option that does not exist, bad override syntax) as one
``judgebench: error:`` line, exit 2, with a "did you mean" for a near miss (difflib), instead of Hydra's
several lines and its HYDRA_FULL_ERROR hint. Split from errors.py, which prints every other error: these
are the ones Hydra raises before any judgebench code runs.
"""

from __future__ import annotations

import re
import sys
from typing import Any

from judgebench.errors import EXIT_CODE, PREFIX, CellError, _one_line, did_you_mean, hydra_full_error, scrub


def _no_such_key(override: str, full_key: str, parent: Any) -> str:
    """One line for an override of a key the config does not have: the closest key of its node, or its keys."""
    path, _, leaf = full_key.rpartition(".")
    name = parent.get("name") if path and hasattr(parent, "get") else None
    where = f"{path} ({name})" if name else path or "the config"
    best = closest_setting(leaf, parent)
    if best:
        suggestion = f"; did you mean {path + '.' if path else ''}{best}?"
    else:
        suggestion = f"; its settings: {', '.join(k for k in _settings(parent) if '.' not in k) or 'none'}"
    return f"{override}: {where} has no setting {leaf!r}{suggestion}"


def closest_setting(leaf: str, node: Any) -> str | None:
    """The key of ``node`` (or of one of its sub-nodes: ``backend.temperature``) whose name is closest to a misspelt
    ``leaf`` (difflib), None when none is close."""
    keys = _settings(node)
    close = did_you_mean(leaf, [k.rpartition(".")[2] for k in keys])
    if not close:
        return None
    match = close[len("; did you mean ") : -1]
    return next(k for k in keys if k.rpartition(".")[2] == match)


def _settings(node: Any) -> list[str]:
    """The keys of a config node and of its sub-nodes (``backend.temperature``), Hydra's own and ``_target_`` left
    out."""
    out: list[str] = []
    for k in sorted(node.keys() if hasattr(node, "keys") else [], key=str):
        if str(k) == "hydra" or str(k).startswith("_"):
            continue
        out.append(str(k))
        try:
            child = node.get(k)
        except Exception:  # an interpolation that cannot resolve here
            continue
        if hasattr(child, "keys"):
            out += [f"{k}.{c}" for c in sorted(child.keys(), key=str) if not str(c).startswith("_")]
    return out


def hydra_error_line(exc: BaseException) -> str | None:
    """The one ``judgebench: error:`` line for an exception Hydra would report with its own several lines, None
    when it is no user's error (a bug keeps Hydra's traceback)."""
    from hydra.errors import ConfigCompositionException, MissingConfigException, OverrideParseException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError

    if isinstance(exc, CellError):  # already one line (reported()); Hydra would add its HYDRA_FULL_ERROR hint
        return _one_line(str(exc))
    if isinstance(exc, ConfigCompositionException):
        cause = exc.__cause__
        asked = re.search(r"use \+(\S+)", str(exc))
        if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and getattr(cause, "full_key", None):
            override = asked.group(1) if asked else str(cause.full_key)
            return PREFIX + scrub(_no_such_key(override, str(cause.full_key), getattr(cause, "parent_node", None)))
        return PREFIX + scrub(_one_line(str(exc)))
    if isinstance(exc, OverrideParseException):
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else "bad override"
        override = getattr(exc, "override", None)
        return PREFIX + scrub(
            f"{override}: {first} (see https://hydra.cc/docs/advanced/override_grammar/basic)"
            if override
            else _one_line(str(exc))
        )
    if isinstance(exc, MissingConfigException):
        return PREFIX + scrub(_one_line(str(exc)))
    return None


def report_hydra_errors() -> None:
    """Route Hydra's error reporting (``hydra._internal.utils.run_and_report``, which every ``@hydra.main`` goes
    through) through :func:`hydra_error_line`: one line and exit 2 instead of Hydra's report, its
    HYDRA_FULL_ERROR hint and exit 1. HYDRA_FULL_ERROR=1 keeps Hydra's behaviour; anything else is Hydra's."""
    import hydra._internal.utils as hydra_utils

    original = hydra_utils.run_and_report
    if getattr(original, "judgebench", False):
        return

    def run_and_report(func: Any) -> Any:
        try:
            return func()
        except Exception as exc:
            line = None if hydra_full_error() else hydra_error_line(exc)
            if line is None:
                error = exc  # exc itself is unbound once the handler ends; again() may be kept

                def again() -> Any:
                    raise error

                return original(again)
            print(line, file=sys.stderr, flush=True)
            sys.exit(EXIT_CODE)

    run_and_report.judgebench = True  # type: ignore[attr-defined]
    hydra_utils.run_and_report = run_and_report
