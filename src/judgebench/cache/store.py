"""Persistent, content-addressed cache of LLM calls and local-model scores.

Every paid or slow model call is keyed by :func:`call_key` and stored durably *before* the caller sees the
result, so a rerun of the same grid makes zero calls and a killed run loses at most its in-flight calls.
Two layouts, both always read (a cache written by an older judgebench is never lost):

* ``segments`` (the default): each process appends checksummed frames to a file of its own
  (:mod:`judgebench.cache.segments`), one ``write`` per group of answers instead of a create + rename each.
  Readers index the segments at first use (after the compacted index of ``judgebench cache compact``,
  :mod:`judgebench.cache.view`) and rescan, at most every ``REFRESH_S``, on a miss.
* ``files``: ``<root>/<key[:2]>/<key>.json``, each entry written atomically (temp file, then rename; a killed
  writer's temp file removed by :meth:`CallCache.clean_temp` once stale): :mod:`judgebench.cache.entry_files`.
  Chosen by ``layout="files"`` or ``JUDGEBENCH_CACHE_LAYOUT=files``; ``judgebench cache migrate`` moves entries
  across.

With ``fsync=True`` (or JUDGEBENCH_CACHE_FSYNC=1) data and new directories are fsync'd before a write returns;
without it a killed *process* still loses nothing (the page cache has it), only an OS crash can lose the last
seconds, and the torn record is then caught by its checksum and asked again. No file is shared mutable state
between processes and writers take no lock from each other (SQLite was rejected: WAL needs shared memory, rollback
journals
byte-range locks, neither reliable on NFS). Entries are checksummed envelopes (:mod:`judgebench.cache.keys`):
a truncated, empty, bit-flipped or misnamed entry is reported with its location and is a miss.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from judgebench.cache import entry_files
from judgebench.cache import segments as seg
from judgebench.cache.entry_files import STALE_TEMP_S, oserr

# call_key, _canon and _checksum are re-exported: callers and tools build keys and envelopes from here
from judgebench.cache.keys import Corrupt as _Corrupt
from judgebench.cache.keys import call_key, envelopes, is_key
from judgebench.cache.keys import canon as _canon
from judgebench.cache.keys import checksum as _checksum  # noqa: F401 (re-exported, as the comment above says)
from judgebench.cache.keys import validate as _validate
from judgebench.cache.view import SegmentIndex
from judgebench.exceptions import CacheError

__all__ = ["CallCache", "CacheStats", "call_key", "STORED", "STALE_TEMP_S", "LAYOUTS"]

log = logging.getLogger(__name__)

REFRESH_S = 0.2  # a miss rescans the segments at most this often
LAYOUTS = ("files", "segments")
STORED: Counter[str] = Counter()  # entries written by this process, per cache root (the Ctrl-C message)


@dataclass
class CacheStats:
    entries: int
    bytes: int
    corrupt: int
    by_backend: dict[str, int] = field(default_factory=dict)
    by_model: dict[str, int] = field(default_factory=dict)


class CallCache:
    """Checksummed entries in one directory; safe for many concurrent processes, on local disks and NFS."""

    def __init__(
        self, root: str | Path, fsync: bool | None = None, layout: str | None = None, create: bool = True
    ) -> None:
        self.root = Path(root).expanduser()
        self.fsync = os.environ.get("JUDGEBENCH_CACHE_FSYNC", "0") not in ("", "0", "false") if fsync is None else fsync
        if not create and not self.root.is_dir():  # a tool reading a cache: a mistyped path is not a new cache
            raise CacheError(f"no cache at {self.root} (no such directory), expected the calls folder of a cache_dir")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CacheError(f"cannot create cache root {self.root}: {oserr(e)}") from None
        if not self.root.is_dir():
            raise CacheError(f"cache root {self.root} is not a directory")
        self.segment_dir = self.root / seg.DIRNAME
        self.layout = self._pick_layout(layout)
        self.hits = 0
        self.misses = 0
        self.puts = 0
        self.corrupt_seen = 0
        self.last_import_corrupt = 0
        self._warned: set[Path] = set()
        self.reasons: dict[Path, str] = {}  # why each entry found by a scan is unusable
        self.segments = SegmentIndex(self.segment_dir, self._report_corrupt)
        self._segment_writer: seg.SegmentWriter | None = None

    def _pick_layout(self, layout: str | None) -> str:
        env = os.environ.get("JUDGEBENCH_CACHE_LAYOUT") or None
        chosen = layout or env or "segments"
        if chosen not in LAYOUTS:
            where = "layout" if layout else "JUDGEBENCH_CACHE_LAYOUT"
            raise CacheError(f"{where}={chosen!r} for cache {self.root}: expected one of {', '.join(LAYOUTS)}")
        return chosen

    # -- paths ---------------------------------------------------------------
    def path_for(self, key: str) -> Path:
        return entry_files.entry_path(self.root, key)

    def _file_keys(self) -> Iterator[str]:
        return entry_files.file_keys(self.root)

    def keys(self) -> Iterator[str]:
        """Keys present (not validated): entry files in directory order, then keys only in segments (and the
        compacted index)."""
        seen = set()
        for key in self._file_keys():
            seen.add(key)
            yield key
        self.refresh()
        yield from (k for k in self.segments.keys() if k not in seen)

    # -- segments ----------------------------------------------------------------
    def refresh(self) -> None:
        """Index what was appended to the segments since the last scan (other processes' answers included)."""
        try:
            self.segments.refresh()
        except OSError as e:
            raise CacheError(f"cannot read cache segments in {self.segment_dir}: {oserr(e)}") from None

    def _load_segment(self, key: str, path: Path, offset: int, n: int) -> dict | None:
        try:
            body = self.segments.read(key, path, offset, n)
        except FileNotFoundError:  # rewritten by verify or folded by compact: its records are elsewhere now
            self.refresh()
            moved = self.segments.locate(key)
            return self._load_segment(key, *moved) if moved is not None and moved[0] != path else None
        except OSError as e:
            raise CacheError(f"cannot read cache segment {path}: {oserr(e)}") from None
        where = seg.location(path, offset)
        if body is None:
            raise _Corrupt(where, seg.BAD_CRC)
        return _validate(body, key, where)

    # -- read ----------------------------------------------------------------
    def _load(self, key: str, path: Path | None = None) -> dict | None:
        """Validated payload of the entry file, or None if absent; raises _Corrupt if present but invalid."""
        path = path or self.path_for(key)
        data = entry_files.read_entry(path)
        return None if data is None else _validate(data, key, path)

    def _load_any(self, key: str) -> dict | None:
        """The valid payload from either layout; raises _Corrupt when only corrupt copies exist."""
        corrupt = None
        try:
            hit = self.segments.lookup(key, REFRESH_S)
        except OSError as e:
            raise CacheError(f"cannot read cache segments in {self.segment_dir}: {oserr(e)}") from None
        if hit is not None:
            try:
                payload = self._load_segment(key, *hit)
            except _Corrupt as c:
                corrupt, payload = c, None
            if payload is not None:
                return payload
        payload = self._load(key)
        if payload is None and corrupt is not None:
            raise corrupt
        return payload

    def _report_corrupt(self, path: Path, reason: str | None = None) -> None:
        if path not in self._warned:
            self._warned.add(path)
            self.corrupt_seen += 1
            if reason and reason.startswith(seg.FRAME_PROBLEMS):
                log.warning("corrupt cache entry %s (%s); treated as a miss", path, reason)
            elif reason and reason != "checksum/format mismatch":
                log.warning("invalid cache entry %s (%s); treated as a miss", path, reason)
            else:
                log.warning("corrupt cache entry %s (checksum/format mismatch); treated as a miss", path)

    def get(self, key: str) -> dict | None:
        """The stored record, or None on miss or corrupt entry (warned once per location).

        An unreadable entry (EACCES, EIO) raises CacheError: that is not a miss to pay for again.
        """
        try:
            payload = self._load_any(key)
        except _Corrupt as c:
            self._report_corrupt(c.path, c.reason)
            payload = None
        if payload is None:
            self.misses += 1
            return None
        self.hits += 1
        return payload["record"]

    def get_many(self, keys: Iterable[str]) -> dict[str, dict]:
        """The present records of ``keys``, as :meth:`get` would give each (hits, misses, corrupt entries counted),
        in one pass: the segments rescanned at most once for all misses, entry files looked for only in the shard
        folders that exist (one ``listdir`` of the root, not an ``open`` per missing key)."""
        wanted = list(dict.fromkeys(keys))
        for key in wanted:
            if not is_key(key):
                self.path_for(key)  # raises, naming the key
        try:
            found = {k: hit for k in wanted if (hit := self.segments.locate(k)) is not None}
            if len(found) < len(wanted) and time.monotonic() - self.segments.refreshed_at >= REFRESH_S:
                self.segments.refresh()
                found.update(
                    (k, hit) for k in wanted if k not in found and (hit := self.segments.locate(k)) is not None
                )
        except OSError as e:
            raise CacheError(f"cannot read cache segments in {self.segment_dir}: {oserr(e)}") from None
        try:
            shards = {n for n in os.listdir(self.root) if len(n) == 2}
        except OSError as e:
            raise CacheError(f"cannot read cache root {self.root}: {oserr(e)}") from None
        out: dict[str, dict] = {}
        for key in wanted:
            corrupt, payload = None, None
            try:
                if key in found:
                    try:
                        payload = self._load_segment(key, *found[key])
                    except _Corrupt as c:
                        corrupt = c
                if payload is None and key[:2] in shards:
                    payload = self._load(key)
                if payload is None and corrupt is not None:
                    raise corrupt
            except _Corrupt as c:
                self._report_corrupt(c.path, c.reason)
                payload = None
            if payload is None:
                self.misses += 1
            else:
                self.hits += 1
                out[key] = payload["record"]
        return out

    def get_meta(self, key: str) -> dict | None:
        """The key parts stored with the entry (no hit/miss counting)."""
        try:
            payload = self._load_any(key)
        except _Corrupt:
            return None
        return payload["meta"] if payload else None

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            return self._load_any(key) is not None
        except _Corrupt:
            return False

    # -- write ---------------------------------------------------------------
    def put(self, key: str, record: dict, meta: dict | None = None) -> None:
        """Store ``record`` durably before returning (fsync'd too, when the cache was opened with fsync)."""
        self.put_many([(key, record, meta)])

    def put_many(self, items: list[tuple[str, dict, dict | None]]) -> None:
        """Store several records as one group (one segment ``write``; one directory fsync per shard), stamped
        with one ``written_at``; each meta object's text is made once (:func:`judgebench.cache.keys.envelopes`)."""
        for key, record, _ in items:
            if not isinstance(record, dict):
                raise TypeError("record must be a dict")
            if not is_key(key):
                self.path_for(key)  # raises, naming the key
        self.write_group(list(zip((k for k, _, _ in items), envelopes(items, time.time()))))

    def write_group(self, items: list[tuple[str, bytes]]) -> None:
        """Store (key, envelope bytes) in order. On failure the CacheError's ``stored_before`` says how many were
        stored; nothing after the first failure is written."""
        if not items:
            return
        if self.layout == "segments":
            self._append_segment(items)
        else:
            dirs: set[Path] = set()
            for i, (key, body) in enumerate(items):
                path = self.path_for(key)
                try:
                    entry_files.write_entry(path, body, self.root, self.fsync, fsync_parent=False, os_module=os)
                except CacheError as e:
                    e.stored_before = i
                    self._stored(items[:i])
                    raise
                dirs.add(path.parent)
            if self.fsync:
                for d in dirs:
                    entry_files.fsync_dir(d, os)
        self._stored(items)

    def _stored(self, items: list[tuple[str, bytes]]) -> None:
        if self._warned:  # a stored entry replaces a corrupt one: warn again if it breaks again
            for key, _ in items:
                self._warned.discard(self.path_for(key))
        self.puts += len(items)
        STORED[str(self.root)] += len(items)

    def _append_segment(self, items: list[tuple[str, bytes]]) -> None:
        writer = self._segment_writer
        if writer is None:
            writer = self._segment_writer = seg.SegmentWriter(self.segment_dir, os, self.fsync)
        try:
            path, offsets = writer.append([seg.frame(key, body) for key, body in items])
        except OSError as e:
            where = writer.path or self.segment_dir
            err = CacheError(f"cannot write cache entry {where}: {oserr(e)}")
            err.stored_before = 0
            raise err from None
        self.segments.appended(path, [k for k, _ in items], offsets, [len(b) for _, b in items], writer.size)

    def _write(self, path: Path, envelope: dict, fsync_dir: bool = True) -> None:
        """Write one entry file (an envelope dict) atomically: the files layout, also used by import and tools."""
        entry_files.write_entry(path, _canon(envelope).encode("utf-8"), self.root, self.fsync, fsync_dir, os)

    def check_writable(self, keys=()) -> None:
        """Raise CacheError (naming the folder) unless the answers to ``keys`` could be written now: callers check
        before paying for answers they could not store (read-only mount, full disk, lost permissions)."""
        from judgebench.cache.probe import check_call_cache

        check_call_cache(self, keys, os)

    def close(self) -> None:
        """Close this process's segment and the read descriptors (reopened on the next use)."""
        if self._segment_writer is not None:
            self._segment_writer.close()
        self.segments.close()

    def temp_files(self) -> list[Path]:
        return entry_files.temp_files(self.root)

    def clean_temp(self, max_age_s: float = STALE_TEMP_S) -> list[Path]:
        """Delete temp files left by killed writers, older than ``max_age_s`` (younger ones may be live)."""
        return entry_files.clean_temp(self.root, max_age_s)
