"""``judgebench cache migrate --to segments|files``: move a cache's records from one layout to the other.

Both layouts are always read, so a migration never makes a record unreadable, even when killed half way:
each record is first written in the new layout (fsync'd), and only then is the old copy removed. Entry
files are removed once their record is in a segment; segments (and the compacted file) once every record is
an entry file, and a segment only when its writer is gone (as ``compact`` decides). Corrupt records are left
where they are, for ``verify`` to report. The layout later jobs write is the default (segments) unless
``JUDGEBENCH_CACHE_LAYOUT=files`` is set: migrating to files says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.cache import compact as compaction
from judgebench.cache import segments as seg
from judgebench.cache.keys import Corrupt, canon, checksum
from judgebench.exceptions import CacheError

if TYPE_CHECKING:
    from judgebench.cache.store import CallCache

GROUP = 512


@dataclass
class MigrateReport:
    moved: int = 0  # records written in the new layout
    already: int = 0  # records the new layout already held (their old copy removed)
    corrupt: list[Path] = field(default_factory=list)  # left in place
    removed: int = 0  # old files removed
    kept: list[tuple[Path, str]] = field(default_factory=list)  # segments left in place, and why


def to_segments(cache: CallCache) -> MigrateReport:
    """Every valid entry file into segments (one fsync'd write per group), then the entry files removed."""
    report, group, done = MigrateReport(), [], []
    writer = seg.SegmentWriter(cache.segment_dir, os, fsync=True)
    cache.refresh()

    def flush() -> None:
        if group:
            try:
                writer.append([seg.frame(k, body) for k, body in group])
            except OSError as e:
                raise CacheError(
                    f"cannot write cache segment {writer.path or cache.segment_dir}: "
                    f"[Errno {e.errno}] {e.strerror or e} ({report.moved} records moved before)"
                ) from None
            report.moved += len(group)
            done.extend(k for k, _ in group)
            group.clear()
        for key in done:  # their records are in a segment, on disk
            path = cache.path_for(key)
            path.unlink(missing_ok=True)
            report.removed += 1
        done.clear()

    try:
        for key in sorted(cache._file_keys()):
            path = cache.path_for(key)
            try:
                payload = cache._load(key, path)
            except Corrupt:
                report.corrupt.append(path)
                continue
            if payload is None:  # removed since listed
                continue
            if _valid_in_segments(cache, key):
                report.already += 1
                done.append(key)
                continue
            group.append((key, canon({"payload": payload, "sha256": checksum(payload)}).encode("utf-8")))
            if len(group) >= GROUP:
                flush()
        flush()
    finally:
        writer.close()
    for shard in cache.root.iterdir():
        if len(shard.name) == 2 and shard.is_dir():
            try:
                shard.rmdir()  # only when empty
            except OSError:
                pass
    cache.refresh()
    return report


def _valid_in_segments(cache: CallCache, key: str) -> bool:
    hit = cache.segments.locate(key)
    if hit is None:
        return False
    try:
        return cache._load_segment(key, *hit) is not None
    except Corrupt:
        return False


def to_files(cache: CallCache, min_age_s: float | None = None) -> MigrateReport:
    """Every valid record of the segments into an entry file (fsync'd), then the segments removed whose writer
    is gone and the compacted file."""
    from judgebench.cache.store import STALE_TEMP_S

    min_age_s = STALE_TEMP_S if min_age_s is None else min_age_s
    report = MigrateReport()
    files = cache.__class__(cache.root, fsync=True, layout="files")
    sources, folded, old = compaction._sources(cache)
    newest: dict[str, tuple[Path, int, int]] = {}
    for path, entries in sources:
        for key, offset, n in entries:
            newest[key] = (path, offset, n)
    for key, (path, offset, n) in sorted(newest.items()):
        try:
            payload = cache._load_segment(key, path, offset, n)
        except Corrupt as c:
            report.corrupt.append(c.path)
            continue
        if payload is None:
            continue
        try:
            if files._load(key) is not None:
                report.already += 1
                continue
        except Corrupt:
            pass  # replaced by the good copy
        files._write(files.path_for(key), {"payload": payload, "sha256": checksum(payload)})
        report.moved += 1
    if report.corrupt:
        report.kept.extend(
            (p, "holds a corrupt record (see verify); not removed")
            for p in sorted({seg.segment_of(c) or c for c in report.corrupt})
        )
        return report
    if old is not None:
        old.unlink(missing_ok=True)
        report.removed += 1
    for name, upto in sorted(folded.items()):
        why = compaction._remove_if_done(cache.segment_dir / name, upto, min_age_s)
        if why is None:
            report.removed += 1
        else:
            report.kept.append((cache.segment_dir / name, why))
    cache.refresh()
    return report
