"""The call cache's ``files`` layout: one JSON entry file per key, at ``<root>/<key[:2]>/<key>.json``.

An entry is written to a uniquely named temp file in the same directory and ``os.replace``'d onto its name: atomic
on POSIX file systems and NFS/Lustre, so a reader sees no entry or a complete one. A killed writer leaves at most a
``.*.tmp`` file, never read, removed by :func:`clean_temp` once older than ``STALE_TEMP_S`` (1 h, which absorbs NFS
clock skew). Why apart from :class:`~judgebench.cache.store.CallCache`: the store reads both layouts and writes
either; this is everything about the files of one, also used by ``judgebench cache migrate`` and the maintenance
tools. Writers take the ``os`` module the store uses (``os_module``), so a test can make the disk fail.
"""

from __future__ import annotations

import errno
import os
import secrets
import time
from pathlib import Path
from typing import Iterator

from judgebench.cache.keys import KEY_RE
from judgebench.exceptions import CacheError

STALE_TEMP_S = 3600.0
TMP_SUFFIX = ".tmp"


def oserr(e: OSError) -> str:
    """An OSError as every cache message shows it."""
    return f"[Errno {e.errno}] {e.strerror or e}"


def entry_path(root: Path, key: str) -> Path:
    if not isinstance(key, str) or not KEY_RE.match(key):
        raise ValueError(f"not a cache key (64 lowercase hex chars): {key!r}")
    return root / key[:2] / f"{key}.json"


def file_keys(root: Path) -> Iterator[str]:
    """The keys of the entry files under ``root``, in directory order (not validated)."""
    for shard in sorted(root.iterdir()):
        if len(shard.name) != 2 or not shard.is_dir():
            continue
        for p in shard.iterdir():
            if p.suffix == ".json" and KEY_RE.match(p.stem) and p.stem[:2] == shard.name:
                yield p.stem


def read_entry(path: Path) -> bytes | None:
    """The entry file's bytes, or None if absent; an unreadable file (EACCES, EIO) raises CacheError."""
    for attempt in range(2):
        try:
            return path.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if e.errno == errno.ESTALE and attempt == 0:  # NFS: entry replaced under us; reopen
                continue
            raise CacheError(f"cannot read cache entry {path}: {oserr(e)}") from None
    return None


def write_entry(path: Path, data: bytes, root: Path, fsync: bool, fsync_parent: bool = True, os_module=os) -> None:
    """Write one entry file atomically (temp file, then rename); with ``fsync`` the data, and with ``fsync_parent``
    its directory, are made durable before it returns. A failure removes the temp file and raises CacheError."""
    tmp = path.parent / f".{path.stem[:16]}.{os.getpid()}.{secrets.token_hex(6)}{TMP_SUFFIX}"
    try:
        try:
            fd = os_module.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            if fsync:  # without fsync the entry itself may not survive an OS crash: no point
                fsync_dir(root, os_module)
            fd = os_module.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            view = memoryview(data)
            while view:
                view = view[os_module.write(fd, view) :]
            if fsync:
                os_module.fsync(fd)
        finally:
            os_module.close(fd)
        os_module.replace(tmp, path)
        if fsync_parent and fsync:
            fsync_dir(path.parent, os_module)
    except OSError as e:
        try:
            os_module.unlink(tmp)
        except OSError:
            pass
        raise CacheError(f"cannot write cache entry {path}: {oserr(e)}") from None


def fsync_dir(d: Path, os_module=os) -> None:
    """Make a rename/creation in ``d`` durable; some file systems refuse directory fsync (ignored)."""
    try:
        fd = os_module.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os_module.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EPERM):
            raise
    finally:
        os_module.close(fd)


def temp_files(root: Path) -> list[Path]:
    return sorted(root.glob(f"??/.*{TMP_SUFFIX}"))


def clean_temp(root: Path, max_age_s: float = STALE_TEMP_S) -> list[Path]:
    """Delete temp files left by killed writers, older than ``max_age_s`` (younger ones may be live)."""
    now = time.time()
    removed = []
    for p in temp_files(root):
        try:
            if now - p.stat().st_mtime >= max_age_s:
                p.unlink()
                removed.append(p)
        except FileNotFoundError:
            pass
    return removed
