"""The compacted file of a segments cache: every record folded into one file, with a sorted key index.

Opening a cache of 10^6 answers by scanning its segments costs seconds and a dict of 10^6 keys (hundreds of
MB); a packed file is opened by checking its header, footer and index checksum, and a key is found by binary
search over the memory-mapped index, so the index is never loaded into Python objects. The file,
``<root>/segments/compact-<generation>-<random>.jbc``, is written once (temp, fsync, rename) and never
changed; a newer generation replaces it::

    header  b"JBx1" | version (u32) | data end (u64) | records (u64) | crc32 of the preceding 24 bytes (u32) | 4
    zero bytes
    data    the records, in the segments' frame format (each frame checked again when read)
    index   per record, sorted by key: key (32 raw bytes) | frame offset (u64) | body length (u32)
    folded  JSON {"segments": {segment name: bytes folded}}: where a reader resumes each segment
    footer  b"JBxF" | index offset (u64) | records (u64) | folded length (u32) | crc32 of index+folded (u32)
            | crc32 of the preceding 28 footer bytes (u32)

A file that does not check out raises :class:`PackCorrupt` naming it and what is wrong; readers then scan its
data region as a segment (:func:`data_range`), so no record is lost to a damaged index.
"""

from __future__ import annotations

import json
import mmap
import os
import struct
import zlib
from pathlib import Path

from judgebench.cache import segments as seg

SUFFIX = seg.PACK_SUFFIX
PREFIX = "compact-"
VERSION = 1
_HEAD = struct.Struct(">4sIQQI4x")
_FOOT = struct.Struct(">4sQQIII")
_ENTRY = struct.Struct(">32sQI")
HEAD_MAGIC, FOOT_MAGIC = b"JBx1", b"JBxF"
_CHUNK = 1 << 20


class PackCorrupt(Exception):
    """A packed file whose header, footer or index does not check out."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"compacted cache index {path} is unusable: {reason}")
        self.path, self.reason = path, reason


def is_pack(name: str) -> bool:
    return name.startswith(PREFIX) and name.endswith(SUFFIX)


def generation(name: str) -> int:
    """The generation in ``compact-<generation>-<random>.jbc`` (-1 for a name that is not one)."""
    part = name[len(PREFIX) :].split("-", 1)[0]
    return int(part) if is_pack(name) and part.isdigit() else -1


def newest(directory: Path, names: list[str] | None = None) -> Path | None:
    """The packed file of the highest generation in ``directory`` (an older one may linger a moment)."""
    if names is None:
        try:
            names = os.listdir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return None
    packs = [n for n in names if generation(n) >= 0]
    return directory / max(packs, key=lambda n: (generation(n), n)) if packs else None


def header_bytes(data_end: int, records: int) -> bytes:
    head = _HEAD.pack(HEAD_MAGIC, VERSION, data_end, records, 0)
    return head[:24] + struct.pack(">I", zlib.crc32(head[:24])) + b"\0" * 4


def footer_bytes(index_at: int, records: int, folded_len: int, crc: int) -> bytes:
    body = struct.pack(">4sQQII", FOOT_MAGIC, index_at, records, folded_len, crc)
    return body + struct.pack(">I", zlib.crc32(body))


def entry_bytes(key: str, offset: int, n: int) -> bytes:
    return _ENTRY.pack(bytes.fromhex(key), offset, n)


def _crc(buf, start: int, end: int) -> int:
    crc = 0
    for at in range(start, end, _CHUNK):
        crc = zlib.crc32(buf[at : min(end, at + _CHUNK)], crc)
    return crc


def data_range(path: Path) -> tuple[int, int]:
    """(first byte, end) of the frames in a packed file: from its header when that checks out, else the whole
    file after the header (a scan then reports the index bytes as corruption, but reads every record)."""
    with open(path, "rb") as f:
        head = f.read(_HEAD.size)
        size = os.fstat(f.fileno()).st_size
    if len(head) == _HEAD.size:
        magic, _version, data_end, _records, crc = _HEAD.unpack(head)
        if magic == HEAD_MAGIC and crc == zlib.crc32(head[:24]) and _HEAD.size <= data_end <= size:
            return _HEAD.size, data_end
    return _HEAD.size, size


class Packed:
    """An open packed file: a key's frame by binary search over the memory-mapped index."""

    def __init__(self, path: Path) -> None:
        self.path = path
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            if size < _HEAD.size + _FOOT.size:
                raise PackCorrupt(path, f"{size} bytes, shorter than a header and a footer ({_HEAD.size + _FOOT.size})")
            self._mm = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        try:
            self._check(size)
        except PackCorrupt:
            self.close()
            raise

    def _check(self, size: int) -> None:
        mm, path = self._mm, self.path
        magic, version, data_end, records, crc = _HEAD.unpack_from(mm, 0)
        if magic != HEAD_MAGIC or crc != zlib.crc32(mm[:24]):
            raise PackCorrupt(path, f"bad header (expected {HEAD_MAGIC!r} and its crc32 at byte 0)")
        if version != VERSION:
            raise PackCorrupt(path, f"format version {version}, expected {VERSION}")
        foot_at = size - _FOOT.size
        fmagic, index_at, frecords, folded_len, body_crc, fcrc = _FOOT.unpack_from(mm, foot_at)
        if fmagic != FOOT_MAGIC or fcrc != zlib.crc32(mm[foot_at : foot_at + 28]):
            raise PackCorrupt(
                path, f"bad footer (expected {FOOT_MAGIC!r} and its crc32 in the last {_FOOT.size} bytes)"
            )
        folded_at = index_at + records * _ENTRY.size
        if (index_at, frecords) != (data_end, records) or folded_at + folded_len != foot_at:
            raise PackCorrupt(
                path,
                f"header and footer disagree (data end {data_end}, index at {index_at}, records "
                f"{records} and {frecords}, {size} bytes)",
            )
        if _crc(mm, index_at, foot_at) != body_crc:
            raise PackCorrupt(path, "index checksum mismatch")
        try:
            folded = json.loads(mm[folded_at:foot_at].decode("utf-8"))["segments"]
            assert isinstance(folded, dict) and all(isinstance(v, int) for v in folded.values())
        except (ValueError, KeyError, TypeError, AssertionError) as e:
            raise PackCorrupt(path, f"folded-segments list is not the expected JSON object ({e})") from None
        self.index_at, self.records, self.data_end = index_at, records, data_end
        self.folded: dict[str, int] = folded

    def find(self, key: str) -> tuple[Path, int, int] | None:
        """(this file, frame offset, body length) of ``key``, or None."""
        raw, mm, base, width = bytes.fromhex(key), self._mm, self.index_at, _ENTRY.size
        lo, hi = 0, self.records
        while lo < hi:
            mid = (lo + hi) // 2
            at = base + mid * width
            if mm[at : at + 32] < raw:
                lo = mid + 1
            else:
                hi = mid
        if lo < self.records:
            got, offset, n = _ENTRY.unpack_from(mm, base + lo * width)
            if got == raw:
                return self.path, offset, n
        return None

    def entries(self):
        """(key, frame offset, body length) of every record, in key order."""
        for i in range(self.records):
            raw, offset, n = _ENTRY.unpack_from(self._mm, self.index_at + i * _ENTRY.size)
            yield raw.hex(), offset, n

    def close(self) -> None:
        try:
            self._mm.close()
        except (AttributeError, BufferError):
            pass
