"""``judgebench cache compact``: fold a segments cache into one compacted file with a sorted key index.

Safe while jobs run. Writers are never blocked: each appends to its own segment, and compaction folds each
segment only up to where it had read it, recording that offset, so what a writer appends after is read from
the segment as before. The new file is written beside the old under a temp name, fsync'd and renamed into
place (readers see the old generation or the new, never half of one); only then are folded segments removed,
and only those whose writer is gone (compaction can take the flock a live writer holds on its segment; where
the file system cannot lock, those unchanged for ``STALE_TEMP_S``) and that gained no record since they were
read. A reader that had a removed segment open keeps reading it; one that opens it later rescans and finds
the record in the new file. Two compactions never run at once (an flock under ``segments/``).
"""

from __future__ import annotations

import json
import mmap
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.cache import packed
from judgebench.cache import segments as seg
from judgebench.exceptions import CacheError
from judgebench.locks import exclusive

if TYPE_CHECKING:
    from judgebench.cache.store import CallCache

_FLUSH = 8 << 20


@dataclass
class CompactReport:
    path: Path | None  # the new compacted file (None: nothing to fold)
    records: int = 0
    folded: int = 0  # segments folded (wholly or up to what they held)
    removed: list[Path] = field(default_factory=list)  # folded segments and older compacted files deleted
    kept: list[tuple[Path, str]] = field(default_factory=list)  # folded segments left in place, and why
    skipped: int = 0  # frames that no longer checked out when copied (reported by verify)


def _sources(cache: CallCache) -> tuple[list[tuple[Path, list]], dict[str, int], Path | None]:
    """(path, [(key, offset, n)]) of the current compacted file and of every segment's unfolded part, oldest
    first, and how far each segment is now folded."""
    directory = cache.segment_dir
    old = packed.newest(directory)
    sources, folded = [], {}
    start_of: dict[str, int] = {}
    if old is not None:
        try:
            pack = packed.Packed(old)
        except packed.PackCorrupt:  # read its records by a scan, and every segment from its start
            sources.append((old, seg.scan_file(old, *packed.data_range(old)).entries))
        else:
            sources.append((old, list(pack.entries())))
            start_of = dict(pack.folded)
            pack.close()
    for path in cache.segments.files():
        try:
            res = seg.scan_file(path, start_of.get(path.name, 0))
        except FileNotFoundError:
            continue
        sources.append((path, res.entries))
        folded[path.name] = max(res.resume_at, start_of.get(path.name, 0))
    return sources, folded, old


def _write_pack(tmp: Path, sources: list[tuple[Path, list]], folded: dict[str, int]) -> tuple[int, int]:
    """Write the compacted file: each key's newest frame (later sources win), in key order; (records, skipped).
    Consumes ``sources``' entry lists (at 10^6 records they are hundreds of MB)."""
    newest: dict[str, tuple[int, int, int]] = {}
    for i, (path, entries) in enumerate(sources):
        for key, offset, n in entries:
            newest[key] = (i, offset, n)
        sources[i] = (path, [])
    maps = []
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        for path, _ in sources:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                maps.append(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b"")
        at, buf, index, records, skipped = packed._HEAD.size, bytearray(packed.header_bytes(0, 0)), bytearray(), 0, 0
        for key in sorted(newest):
            i, offset, n = newest[key]
            fr = maps[i][offset : offset + seg.HEADER + n]
            if seg.read_body_bytes(fr, key, n) is None:  # damaged since it was scanned
                skipped += 1
                continue
            index += packed.entry_bytes(key, at, n)
            records += 1
            buf += fr
            at += len(fr)
            if len(buf) >= _FLUSH:
                _write_all(fd, buf)
                buf.clear()
        folded_json = json.dumps({"segments": folded}, sort_keys=True).encode("utf-8")
        index += folded_json
        crc = packed._crc(index, 0, len(index))
        _write_all(fd, buf)
        _write_all(fd, index)
        _write_all(fd, packed.footer_bytes(at, records, len(folded_json), crc))
        os.pwrite(fd, packed.header_bytes(at, records), 0)
        os.fsync(fd)
    finally:
        os.close(fd)
        for m in maps:
            if isinstance(m, mmap.mmap):
                m.close()
    return records, skipped


def _write_all(fd: int, data) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _remove_if_done(path: Path, upto: int, min_age_s: float) -> str | None:
    """Delete a folded segment whose writer is gone and that gained no record since; else why it stays."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        locked = seg.lock_nowait(fd)
        if locked is False:
            return "its writer is still running (it holds the segment's lock); what it appends is read from it"
        if locked is None and time.time() - os.fstat(fd).st_mtime < min_age_s:
            return (
                f"no lock can be taken here and it changed in the last {min_age_s:.0f} s; what it appends is read "
                "from it"
            )
        if seg.scan_file(path, upto).entries:
            return "records were appended to it while compacting; they are read from it"
        path.unlink()
        return None
    finally:
        os.close(fd)  # releases the lock


def compact(cache: CallCache, min_age_s: float | None = None) -> CompactReport:
    """Fold every segment into a new compacted file, then remove what it replaces (see the module docstring)."""
    from judgebench.cache.entry_files import STALE_TEMP_S, fsync_dir

    min_age_s = STALE_TEMP_S if min_age_s is None else min_age_s
    directory = cache.segment_dir
    if not directory.is_dir():
        return CompactReport(None)
    with exclusive(directory, "compact", waiting="another compaction of this cache is running; waiting"):
        for stale in directory.glob(f".{packed.PREFIX}*.tmp"):  # left by a killed compaction (we hold the lock)
            stale.unlink(missing_ok=True)
        try:
            sources, folded, old = _sources(cache)
        except OSError as e:
            raise CacheError(f"cannot read cache segments in {directory}: [Errno {e.errno}] {e.strerror}") from None
        if old is None and not folded:
            return CompactReport(None)
        gen = packed.generation(old.name) + 1 if old is not None else 1
        name = f"{packed.PREFIX}{gen:08d}-{secrets.token_hex(4)}{packed.SUFFIX}"
        tmp = directory / f".{name}.{os.getpid()}.tmp"
        final = directory / name
        try:
            records, skipped = _write_pack(tmp, sources, folded)
            os.replace(tmp, final)
            fsync_dir(directory)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise CacheError(
                f"cannot write the compacted cache file {final}: [Errno {e.errno}] {e.strerror or e}"
            ) from None
        report = CompactReport(final, records, len(folded), skipped=skipped)
        for p in directory.glob(f"{packed.PREFIX}*{packed.SUFFIX}"):
            if p != final and packed.generation(p.name) < gen:
                p.unlink(missing_ok=True)
                report.removed.append(p)
        for seg_name, upto in sorted(folded.items()):
            path = directory / seg_name
            why = _remove_if_done(path, upto, min_age_s)
            if why is None:
                report.removed.append(path)
            else:
                report.kept.append((path, why))
        cache.refresh()
        return report
