"""Whether a folder can take a file now: one probe file written, fsynced and removed.

Checked before anything is paid for or computed that must then be stored (answers in ``calls/`` and its
``segments/`` or shard folders, batch ids in ``batches/``). Rankings, locks and input digests lose nothing when
they cannot be written (a ranking is still used and logged, jobs go on uncoordinated, digests are computed
again): their folders are probed too, and an unwritable one is a warning before the work, not an error:
``mkdir(exist_ok=True)`` succeeds on a folder
that exists but refuses writes (read-only mount, lost permissions, a full disk), so only writing a file tells.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from judgebench.exceptions import CacheError

PROBE_SUFFIX = ".tmp"


def probe_dir(directory: str | os.PathLike[str], what: str, os_module=os, sync: bool = True) -> None:
    """Create ``directory`` if needed and write a probe file in it; CacheError naming it (and ``what`` it holds).

    ``sync=False`` leaves out the fsync, for folders whose own writes are not fsync'd either: a full disk or a
    read-only mount fails the ``open``/``write`` (local file systems reserve space at ``write``; NFS reports at
    ``close``), and an fsync just after creating the folder costs a journal commit (2-50 ms on a busy disk)."""
    path = Path(directory)
    tmp = path / f".probe.{os.getpid()}.{secrets.token_hex(6)}{PROBE_SUFFIX}"
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd = os_module.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        try:
            os_module.write(fd, b"{}")
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as e:
        raise CacheError(
            f"cache {path} is not writable: [Errno {e.errno}] {e.strerror or e} (the folder of {what})"
        ) from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def check_call_cache(cache, keys=(), os_module=os) -> None:
    """Every folder the call cache will write the answers to ``keys`` into: its root and, in the segments layout,
    ``segments/`` (probe files: they catch a full disk and a read-only mount too), in the files layout each
    existing shard folder of those keys (checked with ``access``, not hundreds of probe files)."""
    probe_dir(cache.root, "call answers", os_module, sync=cache.fsync)
    if cache.layout == "segments":
        probe_dir(cache.segment_dir, "call answers in segment files", os_module, sync=cache.fsync)
        return
    for shard in sorted({cache.root / k[:2] for k in keys if isinstance(k, str)}):
        if shard.is_dir() and not os_module.access(shard, os.W_OK | os.X_OK):
            raise CacheError(
                f"cache {shard} is not writable: [Errno 13] Permission denied (the folder of call answers "
                f"whose key starts with {shard.name})"
            )
