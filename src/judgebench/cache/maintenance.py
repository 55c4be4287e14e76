"""Whole-cache passes over both layouts: ``stats``, ``verify`` (and repair), ``export`` and ``import``.

They scan from scratch (not the incremental index a run uses), so ``verify`` sees every frame of every segment.
A corrupt record inside a segment cannot be deleted in place (no one edits a file another process may append
to): ``verify(remove_corrupt=True)`` rewrites the segment's good records into a new segment and deletes the old
one, and only once the old one has not changed for ``STALE_TEMP_S`` (its writer is gone); a younger one is left
and said so.
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from judgebench.cache import packed
from judgebench.cache import segments as seg
from judgebench.cache.keys import KEY_RE, canon, checksum
from judgebench.cache.schema import problem as record_problem
from judgebench.exceptions import CacheError

if TYPE_CHECKING:
    from judgebench.cache.store import CallCache

log = logging.getLogger("judgebench.cache.store")


def _segment_sources(
    cache: CallCache,
) -> tuple[dict[str, list[tuple[Path, int, int]]], list[tuple[Path, str]], list[tuple[Path, str]]]:
    """Every good frame per key (newest last), every corrupt region and every torn tail, by a full scan of each
    segment."""
    frames: dict[str, list[tuple[Path, int, int]]] = {}
    problems: list[tuple[Path, str]] = []
    torn: list[tuple[Path, str]] = []
    pack = packed.newest(cache.segment_dir)
    if pack is not None:  # its records are older than the segments': scanned first
        try:
            packed.Packed(pack).close()
        except packed.PackCorrupt as e:
            problems.append(
                (
                    pack,
                    f"its index is unusable ({e.reason}); its records are read by a scan, and "
                    "compact or verify --remove rebuilds it",
                )
            )
        except FileNotFoundError:
            pack = None
    for path in ([pack] if pack is not None else []) + cache.segments.files():
        try:
            res = scan_whole(path)
        except FileNotFoundError:
            continue
        except OSError as e:
            raise CacheError(f"cannot read cache segment {path}: [Errno {e.errno}] {e.strerror}") from None
        for key, offset, n in res.entries:
            frames.setdefault(key, []).append((path, offset, n))
        problems.extend((seg.location(path, off), reason) for off, reason in res.problems)
        if res.torn_tail:
            torn.append((seg.location(path, res.resume_at), res.torn))
    return frames, problems, torn


def scan_whole(path: Path) -> seg.ScanResult:
    """Every frame of a segment, or of a compacted file's data region."""
    if path.name.endswith(seg.PACK_SUFFIX):
        return seg.scan_file(path, *packed.data_range(path))
    return seg.scan_file(path)


def torn_tails(cache: CallCache) -> list[tuple[Path, str]]:
    """(``<segment>@<offset>``, what it cut short) of each segment that ends in an unfinished record."""
    return _segment_sources(cache)[2]


def scan(cache: CallCache) -> Iterator[tuple[Path, str | None, dict | None, int]]:
    """(location, key, payload or None when unusable, bytes) for every entry, sorted by key; each key's first
    valid copy only (entry file first, then its newest segment frame); corrupt regions of segments last."""
    from judgebench.cache.store import _Corrupt

    frames, problems, _torn = _segment_sources(cache)
    file_keys = set(cache._file_keys())
    for key in sorted(file_keys | frames.keys()):
        found = False
        if key in file_keys:
            path = cache.path_for(key)
            try:
                payload = cache._load(key, path)
            except _Corrupt as c:
                cache.reasons[path] = c.reason or "checksum/format mismatch"
                yield path, key, None, 0
            else:
                if payload is not None:  # None: removed since listing
                    found = True
                    try:
                        size = path.stat().st_size
                    except OSError:
                        size = 0
                    yield path, key, payload, size
        for path, offset, n in reversed(frames.get(key, [])):
            where = seg.location(path, offset)
            try:
                payload = cache._load_segment(key, path, offset, n)
            except _Corrupt as c:
                cache.reasons[where] = c.reason or "checksum/format mismatch"
                yield where, key, None, 0
                continue
            if payload is not None and not found:
                found = True
                yield where, key, payload, seg.HEADER + n
    for where, reason in problems:
        cache.reasons[where] = reason
        yield where, None, None, 0


def stats(cache: CallCache):
    from judgebench.cache.store import CacheStats

    n = size = bad = 0
    backends: Counter[str] = Counter()
    models: Counter[str] = Counter()
    for _where, _key, payload, nbytes in scan(cache):
        if payload is None:
            bad += 1
            continue
        n += 1
        size += nbytes
        meta = payload.get("meta") or {}
        backends[str(meta.get("backend", "?"))] += 1
        models[str(meta.get("model", "?"))] += 1
    return CacheStats(n, size, bad, dict(sorted(backends.items())), dict(sorted(models.items())))


@dataclass
class VerifyReport:
    corrupt: list[Path]  # every unusable entry found (before any removal)
    removed: list[Path] = field(default_factory=list)
    kept: list[tuple[Path, str]] = field(default_factory=list)  # corrupt entries left in place, and why
    torn: list[tuple[Path, str]] = field(default_factory=list)  # segments ending in an unfinished record


def verify_report(cache: CallCache, remove_corrupt: bool = False) -> VerifyReport:
    """Every corrupt entry and torn tail; with ``remove_corrupt``, what was removed and what had to stay."""
    report = VerifyReport(
        [where for where, _key, payload, _n in scan(cache) if payload is None], torn=torn_tails(cache)
    )
    for where in report.corrupt:
        log.warning("corrupt cache entry %s", where)
    if remove_corrupt:
        by_segment: dict[Path, list[Path]] = {}
        for where in report.corrupt:
            segment = seg.segment_of(where)
            if segment is not None:
                by_segment.setdefault(segment, []).append(where)
            else:
                try:
                    where.unlink(missing_ok=True)
                    report.removed.append(where)
                except OSError as e:
                    report.kept.append((where, f"cannot be removed ([Errno {e.errno}] {e.strerror})"))
        for path, entries in sorted(by_segment.items()):
            if rewrite_segment(cache, path):
                report.removed.extend(entries)
            else:
                report.kept.extend(
                    (
                        where,
                        "its segment changed in the last hour (its writer may be running), so it was "
                        "not rewritten: run verify --remove again later",
                    )
                    for where in entries
                )
        cache.clean_temp()
    return report


def verify(cache: CallCache, remove_corrupt: bool = False) -> list[Path]:
    return verify_report(cache, remove_corrupt).corrupt


def rewrite_segment(cache: CallCache, path: Path, min_age_s: float | None = None) -> bool:
    """Copy a segment's usable records into a new segment and delete it; False when it may still be written."""
    from judgebench.cache.store import STALE_TEMP_S, _Corrupt

    min_age_s = STALE_TEMP_S if min_age_s is None else min_age_s
    if path.name.endswith(seg.PACK_SUFFIX):
        min_age_s = 0  # a compacted file is never appended to
    try:
        if time.time() - path.stat().st_mtime < min_age_s:
            log.warning(
                "cache segment %s changed in the last %.0f s (its writer may be running); not rewritten",
                path,
                min_age_s,
            )
            return False
        res = scan_whole(path)
    except FileNotFoundError:
        return True
    keep = []
    for key, offset, n in res.entries:
        try:
            payload = cache._load_segment(key, path, offset, n)
        except _Corrupt:
            continue
        if payload is not None:
            keep.append((key, canon({"payload": payload, "sha256": checksum(payload)}).encode("utf-8")))
    writer = seg.SegmentWriter(cache.segment_dir, os, fsync=True)
    try:
        if keep:
            writer.append([seg.frame(key, body) for key, body in keep])
    finally:
        writer.close()
    path.unlink(missing_ok=True)
    cache.segments.forget(path)
    cache.refresh()
    return True


def export(cache: CallCache, path: Path) -> int:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    n = 0
    try:
        with open(tmp, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                for where, _key, payload, _size in scan(cache):
                    if payload is None:
                        log.warning("corrupt cache entry %s not exported", where)
                        continue
                    env = {"sha256": checksum(payload), "payload": payload}
                    gz.write((canon(env) + "\n").encode("utf-8"))
                    n += 1
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise CacheError(f"cannot export cache to {path}: [Errno {e.errno}] {e.strerror or e}") from None
    return n


def import_entries(cache: CallCache, path: Path, overwrite: bool = False) -> tuple[int, int]:
    from judgebench.cache.entry_files import fsync_dir

    added = skipped = corrupt = 0
    group: list[tuple[str, bytes]] = []
    pending: set[str] = set()  # keys in the group not yet written (a file listing one key twice)
    dirs: set[Path] = set()

    def flush() -> None:
        cache.write_group(group)
        if cache.layout == "files":
            dirs.update(cache.path_for(k).parent for k, _ in group)
        group.clear()
        pending.clear()

    try:
        with gzip.open(path, "rb") as f:
            for lineno, line in enumerate(f, 1):
                payload = None
                try:
                    env = json.loads(line.decode("utf-8"))
                    payload = env["payload"]
                    key = payload["key"]
                    ok = (
                        isinstance(key, str)
                        and KEY_RE.match(key) is not None
                        and env["sha256"] == checksum(payload)
                        and isinstance(payload.get("record"), dict)
                    )
                except (ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError):  # nested too deep too
                    ok = False
                try:
                    invalid = record_problem(payload) if ok else None
                except RecursionError:
                    ok, invalid = False, None
                if not ok or invalid:
                    corrupt += 1
                    skipped += 1
                    if invalid:
                        log.warning("%s line %d: invalid entry skipped (%s)", path, lineno, invalid)
                    else:
                        log.warning("%s line %d: corrupt entry skipped", path, lineno)
                    continue
                if not overwrite and (key in pending or key in cache):
                    skipped += 1
                    continue
                pending.add(key)
                group.append((key, canon({"payload": payload, "sha256": env["sha256"]}).encode("utf-8")))
                added += 1
                if len(group) >= 256:
                    flush()
        flush()
    except (OSError, EOFError) as e:  # reading the export failed: keep what was read before
        flush()
        msg = f"[Errno {e.errno}] {e.strerror or e}" if isinstance(e, OSError) and e.errno else str(e)
        raise CacheError(f"cannot import {path}: {msg} (added {added} before the error)") from None
    finally:
        for d in dirs:
            fsync_dir(d)
        cache.last_import_corrupt = corrupt
    return added, skipped
