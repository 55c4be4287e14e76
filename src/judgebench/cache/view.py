"""What one process knows of a segments cache: the compacted file's index and the frames appended since.

Opening reads the newest compacted file's header, footer and index checksum (its index stays memory-mapped,
see :mod:`judgebench.cache.packed`), then scans only what the segments hold beyond what it folded; a key is
looked up among the newer frames first, then in the compacted index. A rescan reads only what was appended
since the last one (other processes' answers included), and picks up a newer compacted file.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from judgebench.cache import packed
from judgebench.cache import segments as seg

log = logging.getLogger("judgebench.cache.store")


class SegmentIndex:
    """Each key's newest frame in the segments (and a compacted file read by a scan), the compacted index,
    and where the next scan of each segment starts."""

    def __init__(self, directory: Path, on_corrupt: Callable[[Path, str], None]) -> None:
        self.directory, self.on_corrupt = directory, on_corrupt
        self.frames: dict[str, tuple[Path, int, int]] = {}  # key -> (segment, frame offset, body length)
        self.scanned: dict[Path, int] = {}
        self.refreshed_at = float("-inf")
        self.pack: packed.Packed | None = None
        self.pack_path: Path | None = None  # the newest compacted file, usable or not
        self.pack_problem: str | None = None  # why it is read by a scan instead of its index
        self._fds: dict[Path, int] = {}

    def _names(self) -> list[str]:
        try:
            return sorted(os.listdir(self.directory))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def files(self) -> list[Path]:
        """The segment files (not the compacted one)."""
        return [self.directory / n for n in self._names() if n.endswith(seg.SUFFIX)]

    def _open_pack(self, path: Path | None) -> None:
        """Switch to the compacted file ``path``: its index, or, when that does not check out, a scan of its data."""
        if self.pack is not None:
            self.pack.close()
        self.pack, self.pack_path, self.pack_problem = None, path, None
        if path is None:
            return
        try:
            self.pack = packed.Packed(path)
        except FileNotFoundError:  # replaced by a newer one since listed: the next refresh finds that
            self.pack_path = None
            return
        except packed.PackCorrupt as e:
            self.pack_problem = e.reason
            log.warning("%s; its records are read by a scan instead (judgebench cache compact rebuilds it)", e)
            start, end = packed.data_range(path)
            self._scan(path, start, end)
            return
        for name, upto in self.pack.folded.items():  # what the segments hold beyond this was written since
            where = self.directory / name
            self.scanned[where] = max(self.scanned.get(where, 0), upto)

    def _scan(self, path: Path, start: int, end: int | None = None) -> None:
        try:
            res = seg.scan_file(path, start, end)
        except FileNotFoundError:  # rewritten away since listed
            return
        for key, offset, n in res.entries:
            self.frames[key] = (path, offset, n)
        for offset, reason in res.problems:
            self.on_corrupt(seg.location(path, offset), reason)
        self.scanned[path] = res.resume_at

    def refresh(self) -> None:
        names = self._names()
        newest = packed.newest(self.directory, names)
        if newest != self.pack_path:
            self._open_pack(newest)
        for name in names:
            if name.endswith(seg.SUFFIX):
                path = self.directory / name
                self._scan(path, self.scanned.get(path, 0))
        self.refreshed_at = time.monotonic()

    def locate(self, key: str) -> tuple[Path, int, int] | None:
        hit = self.frames.get(key)
        if hit is None and self.pack is not None:
            hit = self.pack.find(key)
        return hit

    def lookup(self, key: str, max_age_s: float) -> tuple[Path, int, int] | None:
        """The key's frame; on a miss, rescan first when the last scan is older than ``max_age_s``."""
        hit = self.locate(key)
        if hit is None and time.monotonic() - self.refreshed_at >= max_age_s:
            self.refresh()
            hit = self.locate(key)
        return hit

    def keys(self) -> Iterator[str]:
        """Every key known (after a refresh): the newer frames', then the compacted index's."""
        yield from list(self.frames)
        if self.pack is not None:
            yield from (k for k, _, _ in self.pack.entries() if k not in self.frames)

    def read(self, key: str, path: Path, offset: int, n: int) -> bytes | None:
        """The frame's body, or None when it no longer checks out; FileNotFoundError once it was rewritten."""
        fd = self._fds.get(path)
        if fd is None:
            try:
                fd = self._fds[path] = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                self.forget(path)
                raise
        return seg.read_body(fd, key, offset, n)

    def appended(self, path: Path, keys: list[str], offsets: list[int], lengths: list[int], size: int) -> None:
        """Frames this process wrote: indexed at once (no one else appends to its segment)."""
        for key, offset, n in zip(keys, offsets, lengths):
            self.frames[key] = (path, offset, n)
        self.scanned[path] = size

    def forget(self, path: Path) -> None:
        self.frames = {k: v for k, v in self.frames.items() if v[0] != path}
        self.scanned.pop(path, None)
        if path == self.pack_path:
            self._open_pack(None)
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        for fd in self._fds.values():
            try:
                os.close(fd)
            except OSError:
                pass
        self._fds.clear()
