"""The one exception type for bad input files, so callers can report them uniformly."""

from __future__ import annotations

import os


class DataError(ValueError):
    """Bad input file: message names the file, the line (1-based, when known) and what was expected.

    ``str(e)`` is ``"path:line: message"`` (or ``"path: message"``), the form editors and
    terminals turn into a link to the offending line.
    """

    def __init__(self, path: str | os.PathLike[str], message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.message = message
        self.line = line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # keep it picklable across worker processes (args differ from __init__'s)
        return (type(self), (self.path, self.message, self.line))
