"""Which input files a job's components opened: every reader of input files records into it.

A config names its files in many ways (a path relative to ``judge.root``, the files a ``data_dir``
implies, a prompt by name); guessing them from config values misses some, and an input edited in place
then serves old numbers. So the readers themselves (``data/reading.py`` for every TREC and id-map file,
``llm/prompts.py`` for templates) call :func:`opened` with the path as they resolved it, and a job
collects what its components opened while they were built (:func:`recording`), plus the files a
component says it reads later (:func:`declared`: a qrels file judge reads its file when it judges).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

_ACTIVE: list[list[Path]] = []  # one list per open recording() (they nest)


def opened(path: str | os.PathLike[str]) -> None:
    """Called by a reader for each input file it opens: recorded by every active :func:`recording`."""
    if _ACTIVE:
        p = Path(path).expanduser()
        for files in _ACTIVE:
            files.append(p)


@contextlib.contextmanager
def recording() -> Iterator[list[Path]]:
    """``with recording() as files:`` collects the input files opened inside the block, in order."""
    files: list[Path] = []
    _ACTIVE.append(files)
    try:
        yield files
    finally:
        for i in range(len(_ACTIVE) - 1, -1, -1):
            if _ACTIVE[i] is files:
                del _ACTIVE[i]
                break


def declared(component: object) -> list[Path]:
    """The files a component reads after it was built (its ``input_files()``, when it has one)."""
    method = getattr(component, "input_files", None)
    return [Path(p).expanduser() for p in method()] if callable(method) else []
