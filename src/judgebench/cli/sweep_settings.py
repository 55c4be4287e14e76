"""The multirun's per-component settings, taken off the command line before Hydra starts (see the rule in
``hydra_plugins/judgebench_sweeper/group_settings.py`` and docs/running.md, "Settings in a sweep").

Hydra applies a plain override such as ``judge.noise=0.5`` to the sweep's own config, composed with the default
components (``judge=human``: no ``noise``), before any sweeper runs, and fails there. :func:`defer` takes such
settings off ``sys.argv`` in a multirun; the sweeper then adds each to the cells whose component has the key.
They are kept here, in the package, because Hydra's plugin scan executes the ``hydra_plugins`` modules afresh
(a list kept there would be another, empty one by the time the sweeper runs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

GROUPS = ("dataset", "ranker", "judge", "perturbation", "rewriter")  # the components a cell chooses
_DEFERRED: list[str] = []  # settings taken off this process's command line by defer(), for the sweeper


def setting_key(override: str) -> tuple[str, str] | None:
    """(group, key) of a plain component-setting override (``judge.backend.max_retries=2``); None otherwise."""
    key, eq, _ = override.partition("=")
    group, dot, rest = key.partition(".")
    if not eq or not dot or not rest or group not in GROUPS or key[:1] in "+~":
        return None
    return group, key


def _multirun(argv: Sequence[str], conf_dir: Path) -> bool:
    """A multirun: ``-m``/``--multirun``, ``hydra.mode=MULTIRUN``, or an experiment whose file sets that mode."""
    if any(a in ("-m", "--multirun") or a == "hydra.mode=MULTIRUN" for a in argv):
        return True
    for arg in argv:
        key, _, name = arg.partition("=")
        if key.lstrip("+") == "experiment" and name:
            try:
                node = yaml.safe_load((conf_dir / "experiment" / f"{name}.yaml").read_text(encoding="utf-8")) or {}
            except (OSError, yaml.YAMLError):
                continue
            if str((node.get("hydra") or {}).get("mode", "")).upper() == "MULTIRUN":
                return True
    return False


def defer(argv: list[str], conf_dir: Path) -> list[str]:
    """``argv`` (sys.argv) without the multirun's plain component settings, which the sweeper then applies per
    cell; unchanged outside a multirun (a single run's override of a missing key stays Hydra's error)."""
    _DEFERRED.clear()
    if not _multirun(argv[1:], conf_dir):
        return argv
    kept = [argv[0]]
    for arg in argv[1:]:
        (_DEFERRED if setting_key(arg) and not _sweep(arg) else kept).append(arg)
    return kept


def deferred() -> list[str]:
    """The settings :func:`defer` took off this process's command line."""
    return list(_DEFERRED)


def _sweep(arg: str) -> bool:
    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        return OverridesParser.create().parse_override(arg).is_sweep_override()
    except Exception:  # noqa: BLE001 - Hydra reports a malformed override itself
        return True
