"""One job at a time per piece of shared work: an exclusive flock under ``<cache_dir>/locks``.

Parallel jobs of a grid (a local multirun, SLURM array tasks on a shared file system) would each pay for
the same label set, compute the same ranking or log the same judge summary. The first job takes the lock
and does the work; the others wait, then find its result. The kernel drops a lock when its holder dies, so
a killed job blocks nobody. Where the file system cannot lock (no fcntl, an unwritable directory, ENOLCK
on NFS without lockd), jobs go on uncoordinated: the result is the same, only paid or computed twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

log = logging.getLogger("judgebench")


@contextlib.contextmanager
def exclusive(lock_dir: str | Path | None, name: str, waiting: str | None = None) -> Iterator[bool]:
    """Hold ``<lock_dir>/<name>.lock`` for the block; yields whether the lock is held. ``waiting``: logged
    (info) when another job holds it, before blocking."""
    fd = None
    try:
        if lock_dir is not None:
            path = Path(lock_dir) / f"{name}.lock"
            try:
                import fcntl

                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if waiting:
                        log.info("%s (%s)", waiting, path)
                    fcntl.flock(fd, fcntl.LOCK_EX)
            except (ImportError, OSError) as e:
                log.warning("cannot take the lock %s (%s); going on without it", path, e)
                if fd is not None:
                    os.close(fd)
                fd = None
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)  # releases the lock
