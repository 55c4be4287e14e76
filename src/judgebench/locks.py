"""One job at a time per piece of shared work: an exclusive file lock (``filelock``) under ``<cache_dir>/locks``.

Parallel jobs of a grid (a local multirun, SLURM array tasks on a shared file system) would each pay for
the same label set, compute the same ranking or log the same judge summary. The first job takes the lock
and does the work; the others wait, then find its result. The lock is the kernel's flock, through filelock,
never its soft fallback (a marker file a killed job would leave behind): the kernel drops a lock when its
holder dies, so a killed job blocks nobody. Where the file system cannot lock (no flock, an unwritable
directory, ENOLCK on NFS without lockd), jobs go on uncoordinated: the result is the same, only paid or
computed twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from filelock import FileLock, Timeout

log = logging.getLogger("judgebench")


@contextlib.contextmanager
def exclusive(lock_dir: str | Path | None, name: str, waiting: str | None = None) -> Iterator[bool]:
    """Hold ``<lock_dir>/<name>.lock`` for the block, waiting as long as another job holds it; yields whether the
    lock is held. ``waiting``: logged (info) when another job holds it, before waiting."""
    if lock_dir is None:
        yield False
        return
    path = Path(lock_dir) / f"{name}.lock"
    # thread_local=False: the block may end on another thread than it began (a generator's context manager)
    lock = FileLock(path, thread_local=False, fallback_to_soft=False)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            lock.acquire(blocking=False)
        except Timeout:
            if waiting:
                log.info("%s (%s)", waiting, path)
            lock.acquire()
    except (OSError, NotImplementedError) as e:  # NotImplementedError: a platform without flock
        log.warning("cannot take the lock %s (%s); going on without it", path, e)
        yield False
        return
    try:
        yield True
    finally:
        lock.release()
