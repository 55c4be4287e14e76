"""Append-only segment files: the cache layout that costs one ``write`` per group of answers, not a file each.

Each writing process appends to its *own* file ``<root>/segments/<host>-<pid>-<random>.seg`` and never
touches another's, so many processes and SLURM array tasks can share one directory (NFS included) with no
lock and no shared mutable file. A segment is a sequence of frames::

    b"JBc1" | body length (uint32, big-endian) | crc32 of key+body (uint32) | key (32 raw bytes) | body

where body is the same checksummed JSON envelope a one-file-per-entry cache stores, so a record is
checked twice: the frame's crc32 (torn or bit-flipped bytes) and the envelope's sha256 (the payload).

* Only the *last* frame of a file can be a *torn tail*: one whose declared length runs past the end of the
  file, or whose crc does not match, with no good frame after it (a writer killed mid-``write``, or one still
  writing). It is never read back and is not corruption; the next scan retries from its offset (a live writer
  may have completed it), and ``verify`` lists it with what it cut short.
* A bad frame with a good frame after it is *corruption*, whatever is wrong with it (magic, a length that
  runs past the end of the file, crc): reported with the file, the byte offset and how many records the
  bad bytes hold, and the scan resynchronises on the next magic number whose frame checks out, so the
  records after it are read.
* A writer whose ``write`` fails (full disk) abandons its file and opens a new one, so a torn frame stays a
  tail and is never followed by good records.
"""

from __future__ import annotations

import mmap
import os
import re
import secrets
import socket
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"JBc1"
_HEAD = struct.Struct(">4sII")
HEADER = _HEAD.size + 32  # magic, length, crc, raw key
SUFFIX = ".seg"
PACK_SUFFIX = ".jbc"  # the compacted file (judgebench.cache.packed)
DIRNAME = "segments"
MAX_BODY = 1 << 31  # a length beyond this is a corrupt header, not a record
BAD_HEADER, BAD_CRC = "bad frame header", "frame checksum mismatch"
BAD_LENGTH = "frame length runs past the end of the file"
FRAME_PROBLEMS = (BAD_HEADER, BAD_CRC, BAD_LENGTH)  # a reason starts with one of these


def frame(key: str, body: bytes) -> bytes:
    raw_key = bytes.fromhex(key)
    return _HEAD.pack(MAGIC, len(body), zlib.crc32(body, zlib.crc32(raw_key))) + raw_key + body


def new_segment_name() -> str:
    host = re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(4)}{SUFFIX}"


@dataclass
class ScanResult:
    entries: list[tuple[str, int, int]] = field(default_factory=list)  # (key, frame offset, body length)
    problems: list[tuple[int, str]] = field(default_factory=list)  # (byte offset, reason): mid-file corruption
    resume_at: int = 0  # where the next scan of this file starts (the torn tail, or the end)
    torn_tail: bool = False
    torn: str = ""  # what the torn tail cut short, for verify


def _frame_ok(buf, pos: int, n: int) -> bool:
    start = pos + _HEAD.size
    crc = _HEAD.unpack_from(buf, pos)[2]
    return zlib.crc32(buf[start : start + 32 + n]) == crc


def _resync(buf, pos: int, size: int) -> int:
    """Offset of the next frame that checks out after a corrupt one at ``pos`` (or ``size``)."""
    at = pos
    while True:
        at = buf.find(MAGIC, at + 1)
        if at < 0 or size - at < HEADER:
            return size
        n = _HEAD.unpack_from(buf, at)[1]
        if at + HEADER + n <= size and _frame_ok(buf, at, n):
            return at


def _skipped(buf, pos: int, nxt: int, reason: str) -> str:
    """The reason, with what the bad bytes from ``pos`` up to the next good frame hold."""
    records = max(1, buf[pos:nxt].count(MAGIC))
    return (
        f"{reason}; {records} record{'s' if records > 1 else ''} lost in the {nxt - pos} bytes up to the next good "
        f"frame at byte {nxt}, the records after it are read"
    )


def _torn(buf, pos: int, size: int) -> str:
    """What a torn tail at ``pos`` cut short."""
    if size - pos >= HEADER and buf[pos : pos + 4] == MAGIC:
        n = _HEAD.unpack_from(buf, pos)[1]
        key = buf[pos + _HEAD.size : pos + HEADER].hex()
        return (
            f"the last record (key {key[:16]}...) is cut short: {size - pos} of its {HEADER + n} bytes are here; "
            "a writer killed mid-write or still writing, and any records written after it are gone too"
        )
    return (
        f"{size - pos} bytes of an unfinished frame header: a writer killed mid-write or still writing, and any "
        "records written after it are gone too"
    )


def scan_bytes(buf, start: int = 0, end: int | None = None) -> ScanResult:
    """Walk the frames of ``buf`` from ``start`` (up to ``end``): the good ones, mid-file corruption, the torn tail."""
    res = ScanResult()
    size, pos = len(buf) if end is None else min(end, len(buf)), start
    while pos < size:
        if size - pos < HEADER:
            res.torn_tail = True
            break
        magic, n, _ = _HEAD.unpack_from(buf, pos)
        end = pos + HEADER + n
        bad = (
            BAD_HEADER
            if magic != MAGIC or n > MAX_BODY
            else BAD_LENGTH
            if end > size
            else BAD_CRC
            if not _frame_ok(buf, pos, n)
            else None
        )
        if bad is not None:
            nxt = _resync(buf, pos, size)
            if nxt >= size and bad != BAD_HEADER:  # nothing good after it: the last frame, torn (or being written)
                res.torn_tail = True
                break
            res.problems.append((pos, _skipped(buf, pos, nxt, bad)))
            pos = nxt
            continue
        res.entries.append((buf[pos + _HEAD.size : pos + HEADER].hex(), pos, n))
        pos = end
    if res.torn_tail:
        res.torn = _torn(buf, pos, size)
    res.resume_at = pos
    return res


def scan_file(path: Path, start: int = 0, end: int | None = None) -> ScanResult:
    """:func:`scan_bytes` over a segment file (memory-mapped: a large segment is not read into memory twice)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if min(size, end or size) <= start:
            return ScanResult(resume_at=start)
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            return scan_bytes(buf, start, end)


def read_body(fd: int, key: str, offset: int, n: int) -> bytes | None:
    """The body of the frame at ``offset`` if it still checks out for ``key``, else None (corrupt since scanned)."""
    return read_body_bytes(os.pread(fd, HEADER + n, offset), key, n)


def read_body_bytes(data: bytes, key: str, n: int) -> bytes | None:
    """The body of the frame ``data`` if it is ``key``'s, ``n`` bytes long and checks out, else None."""
    if len(data) != HEADER + n or data[:4] != MAGIC or _HEAD.unpack_from(data)[1] != n:
        return None
    if data[_HEAD.size : HEADER] != bytes.fromhex(key) or not _frame_ok(data, 0, n):
        return None
    return data[HEADER:]


class SegmentWriter:
    """This process's own segment: opened on first write, appended with one ``write`` per group."""

    def __init__(self, directory: Path, os_module=os, fsync: bool = False) -> None:
        self.directory, self.os, self.fsync = directory, os_module, fsync
        self.path: Path | None = None
        self._fd: int | None = None
        self._pid = 0
        self.size = 0

    def _open(self) -> None:
        """A new segment, flock'ed while this writer may append to it: ``compact`` removes a folded segment only
        when it can take that lock (its writer is gone), and a segment removed before the lock was taken here
        (its inode no longer at its name) is given up for another."""
        self.directory.mkdir(parents=True, exist_ok=True)
        while True:
            path = self.directory / new_segment_name()
            fd = self.os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o666)
            if lock_nowait(fd) is not False:
                try:
                    if os.stat(path).st_ino == os.fstat(fd).st_ino:
                        break
                except FileNotFoundError:
                    pass
            os.close(fd)
        self._fd, self.path, self._pid, self.size = fd, path, os.getpid(), 0

    def append(self, frames: list[bytes]) -> tuple[Path, list[int]]:
        """Write ``frames`` at the end of this process's segment; returns it and each frame's offset.

        A forked child gets a segment of its own (two processes never append to one file). On an error the
        file is abandoned: its torn tail stays a tail, the next group goes to a new segment."""
        if self._fd is None or self._pid != os.getpid():
            self._fd = None
            self._open()
        offsets, at = [], self.size
        for fr in frames:
            offsets.append(at)
            at += len(fr)
        view = memoryview(b"".join(frames))
        try:
            while view:
                view = view[self.os.write(self._fd, view) :]
            if self.fsync:
                os.fsync(self._fd)
        except OSError:
            self.close()
            raise
        self.size = at
        return self.path, offsets

    def close(self) -> None:
        if self._fd is not None and self._pid == os.getpid():
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None


def lock_nowait(fd: int) -> bool | None:
    """Take an exclusive flock on ``fd`` without waiting: True, False when another process holds it, None
    where the file system cannot lock (then callers fall back on a file's age)."""
    try:
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except (ImportError, OSError):
        return None


def location(path: Path, offset: int) -> Path:
    """How a record inside a segment is named in messages and by ``verify``: ``<segment>@<byte offset>``."""
    return path.with_name(f"{path.name}@{offset}")


def segment_of(where: Path) -> Path | None:
    """The segment a :func:`location` points into (None for an entry file)."""
    name, at, offset = where.name.rpartition("@")
    if not at and where.name.endswith(PACK_SUFFIX):  # a compacted file whose index is unusable
        return where
    return where.with_name(name) if at and name.endswith((SUFFIX, PACK_SUFFIX)) and offset.isdigit() else None
