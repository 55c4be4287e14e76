"""``judgebench cache stats|verify|export FILE|import FILE|compact|migrate --to LAYOUT [--root DIR]``.

Exit codes: 0 ok, 1 ``verify`` found corrupt entries (or ``--remove`` had to leave some, or ``migrate`` left
corrupt ones where they were), 2 error (one line on
stderr, no traceback; a ``--root`` that does not exist is an error, not a new cache, except for ``import``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from judgebench.cache import maintenance
from judgebench.cache.store import CallCache
from judgebench.exceptions import CacheError

DEFAULT_ROOT = ".cache/judgebench"  # the same default as conf/config.yaml cache_dir


def default_root() -> Path:
    return Path(os.environ.get("JUDGEBENCH_CACHE_DIR") or DEFAULT_ROOT).expanduser() / "calls"


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root",
        type=Path,
        default=None,
        help="cache directory (default: $JUDGEBENCH_CACHE_DIR/calls or ./.cache/judgebench/calls)",
    )
    p = argparse.ArgumentParser(prog="judgebench cache", description="Inspect and share the LLM call cache.")
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("stats", parents=[common], help="entries, size, corrupt, per backend/model")
    v = sub.add_parser("verify", parents=[common], help="check every entry's checksum")
    v.add_argument(
        "--remove",
        action="store_true",
        help="delete corrupt entries and temp files older than 1 h (left by killed writers)",
    )
    e = sub.add_parser("export", parents=[common], help="write all entries to one .jsonl.gz file")
    e.add_argument("file", type=Path)
    i = sub.add_parser("import", parents=[common], help="add entries from an exported file")
    i.add_argument("file", type=Path)
    i.add_argument("--overwrite", action="store_true", help="replace entries that already exist")
    sub.add_parser(
        "compact", parents=[common], help="fold the segments into one indexed file (fast to open; safe while jobs run)"
    )
    m = sub.add_parser("migrate", parents=[common], help="move every entry to the other layout (safe to rerun)")
    m.add_argument("--to", required=True, choices=["segments", "files"], help="the layout to move the entries into")
    return p


def _compact(cache: CallCache) -> int:
    from judgebench.cache.compact import compact

    r = compact(cache)
    if r.path is None:
        print(f"nothing to compact in {cache.root} (no segments)")
        return 0
    for p, why in r.kept:
        print(f"kept: {p} ({why})")
    print(
        f"compacted {r.records} entries from {r.folded} segment(s) into {r.path}; removed {len(r.removed)} "
        f"file(s), kept {len(r.kept)}"
        + (f"; {r.skipped} damaged record(s) not copied (see verify)" if r.skipped else "")
    )
    return 0


def _migrate(cache: CallCache, to: str) -> int:
    from judgebench.cache import migrate

    r = migrate.to_segments(cache) if to == "segments" else migrate.to_files(cache)
    for p in r.corrupt:
        print(f"corrupt, left in place: {p}")
    for p, why in r.kept:
        print(f"kept: {p} ({why})")
    print(
        f"migrated {r.moved} entries to {to} in {cache.root} ({r.already} were there already), removed {r.removed} "
        f"old file(s), left {len(r.corrupt)} corrupt"
    )
    if to == "files":
        print("later jobs write segments (the default) unless JUDGEBENCH_CACHE_LAYOUT=files is set")
    return 1 if r.corrupt else 0


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def _stats(cache: CallCache) -> int:
    from rich.console import Console
    from rich.table import Table

    s = maintenance.stats(cache)
    console = Console(file=sys.stdout, width=100)
    t = Table(title=f"LLM call cache {cache.root}", show_header=False)
    t.add_row("entries", str(s.entries))
    t.add_row("size", _fmt_bytes(s.bytes))
    t.add_row("corrupt", str(s.corrupt))
    console.print(t)
    for name, counts in (("backend", s.by_backend), ("model", s.by_model)):
        if counts:
            tb = Table(name, "entries")
            for k, n in counts.items():
                tb.add_row(k, str(n))
            console.print(tb)
    return 0


def _entries(n: int) -> str:
    return f"{n} corrupt entr{'y' if n == 1 else 'ies'}"


def _verify(cache: CallCache, remove: bool) -> int:
    """Every corrupt entry (and why), every torn tail (and what it cut short); with --remove, what was removed and
    what had to stay. Exit 1 while a corrupt entry is still there."""

    report = maintenance.verify_report(cache, remove_corrupt=remove)
    for p in report.corrupt:
        print(f"corrupt: {p} ({cache.reasons.get(p, 'checksum/format mismatch')})")
    for p, what in report.torn:
        print(f"torn tail: {p} ({what})")
    for p, why in report.kept:
        print(f"not removed: {p} ({why})")
    if not remove:
        print(f"{_entries(len(report.corrupt))} found in {cache.root}")
    else:
        kept = f", {len(report.kept)} still there" if report.kept else ""
        print(f"{_entries(len(report.corrupt))} found in {cache.root}, {len(report.removed)} removed{kept}")
    if report.torn:
        print(f"{len(report.torn)} segment(s) end in a torn tail: an answer cut short is asked again by the next run")
    return 1 if report.kept or (report.corrupt and not remove) else 0


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as e:  # argparse usage errors (2) and --help (0)
        return int(e.code or 0) if not isinstance(e.code, str) else 2
    try:
        cache = CallCache(args.root or default_root(), create=args.cmd == "import")  # only import starts a cache
        if args.cmd == "stats":
            return _stats(cache)
        if args.cmd == "verify":
            return _verify(cache, args.remove)
        if args.cmd == "export":
            n = maintenance.export(cache, Path(args.file))
            print(f"exported {n} entries to {args.file}")
            return 0
        if args.cmd == "import":
            if not args.file.is_file():
                raise CacheError(f"cannot import {args.file}: no such file")
            added, skipped = maintenance.import_entries(cache, Path(args.file), args.overwrite)
            print(f"imported {added} entries, skipped {skipped} ({cache.last_import_corrupt} corrupt) from {args.file}")
            return 0
        if args.cmd == "compact":
            return _compact(cache)
        if args.cmd == "migrate":
            return _migrate(cache, args.to)
    except CacheError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    return 2
