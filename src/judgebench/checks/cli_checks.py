"""Checks on the command line and environment of ``judgebench run`` (``python run.py``), made before Hydra
starts (Hydra writes .hydra/ first).

An unknown option of a config group (``judge=gpt5``) is one ``judgebench: error:`` line naming the option
probably meant (difflib) and the valid ones, exit 2, instead of Hydra's multi-line report with exit 1. An empty
``JUDGEBENCH_CACHE_DIR`` is
treated as unset: ``${oc.env:...}`` would otherwise give an empty cache_dir, i.e. the working directory.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

EMPTY_AS_UNSET = ("JUDGEBENCH_CACHE_DIR", "JUDGEBENCH_TREC_DL_DIR")


def unset_empty_env(names: Sequence[str] = EMPTY_AS_UNSET) -> None:
    for name in names:
        if name in os.environ and not os.environ[name].strip():
            del os.environ[name]


def _searchpath(arg: str) -> list[Path] | None:
    """The file:// entries of a ``hydra.searchpath=[...]`` override; None when one is not a plain directory
    (pkg://...), so that the check steps aside rather than refuse an option it cannot see."""
    value = arg.partition("=")[2].strip().strip("[]")
    out = []
    for entry in (e.strip().strip("'\"") for e in value.split(",") if e.strip()):
        if not entry.startswith("file://"):
            return None
        out.append(Path(entry[len("file://") :]).expanduser())
    return out


def _config_dirs(argv: Sequence[str], primary: Path) -> list[Path] | None:
    """Where config groups are looked up: the package's conf/, --config-dir, and hydra.searchpath (None: unknown)."""
    dirs = [primary]
    for arg in argv:
        if arg.lstrip("+").startswith("hydra.searchpath="):
            extra = _searchpath(arg)
            if extra is None:
                return None
            dirs += extra
    for i, arg in enumerate(argv):
        for flag in ("--config-dir", "-cd"):
            if arg == flag and i + 1 < len(argv):
                dirs.append(Path(argv[i + 1]).expanduser())
            elif arg.startswith(flag + "="):
                dirs.append(Path(arg.partition("=")[2]).expanduser())
    return dirs


def _options(group: str, dirs: list[Path]) -> list[str] | None:
    """The options of a config group (yaml files in its directory), None when no directory is that group."""
    found = [d / group for d in dirs if (d / group).is_dir()]
    if not found:
        return None
    return sorted({p.stem for d in found for p in d.glob("*.yaml")})


def _choices(override) -> list[str]:
    if override.is_sweep_override():
        try:
            return [str(v) for v in override.sweep_string_iterator()]
        except Exception:  # a range or glob sweep: left to Hydra
            return []
    value = override.value()
    return [] if value is None else [str(value)]


def unknown_option(argv: Sequence[str], primary: Path) -> str | None:
    """The message for the first ``group=option`` override whose option does not exist, else None."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    candidates = [a for a in argv if "=" in a and not a.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(candidates)
    except Exception:  # bad override syntax: Hydra's own message
        return None
    dirs = _config_dirs(argv, primary)
    if dirs is None:
        return None
    for override in parsed:
        group = override.key_or_group.split("@", 1)[0]
        if override.is_delete() or "." in group or group.startswith("hydra"):
            continue
        options = _options(group, dirs)
        if options is None:
            continue
        for choice in _choices(override):
            if choice not in options:
                import difflib

                name = group.rsplit("/", 1)[-1]
                close = difflib.get_close_matches(choice, options, n=1, cutoff=0.6)
                meant = f"did you mean {group}={close[0]}? " if close else ""
                return f"{group}={choice}: no such {name}; {meant}valid options: {', '.join(options)}"
    return None


def refuse_unknown_options(argv: Sequence[str], primary: Path) -> None:
    """An unknown group option: one ``judgebench: error:`` line (errors.print_error), exit 2."""
    message = unknown_option(argv, primary)
    if message:
        from judgebench import errors

        errors.print_error(message)
        raise SystemExit(errors.EXIT_CODE)
