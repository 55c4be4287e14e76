"""Every error a user can fix, in one module that the whole package imports (and nothing else).

``UserError`` is the one base: its message says what to change in the config, the input files or the
environment, and the command line prints it as one line (``errors.py`` turns these into the CLI's
messages and exit codes; it sorts nothing else). Each subclass also keeps the built-in type callers
may expect (a bad setting is still a ``ValueError``).
"""

from __future__ import annotations

import os


class UserError(Exception):
    """A problem the user must fix; its message says what and where."""


class ConfigError(UserError, ValueError):
    """A setting that cannot work (a negative concurrency, a missing API key: names the key or variable)."""


class BackendUnreachable(ConfigError):
    """The model server refuses connections before any answer: the cell ends at once, naming the URL."""


class BackendRefused(ConfigError):
    """Found by the preflight before any work: the backend's server has no such model (or Google retired it),
    or it refuses the key. The message names the key to change and, for a retired model, what to use instead."""


class DataError(UserError, ValueError):
    """Bad input file: the message names the file, the line (1-based, when known) and what was expected.

    ``str(e)`` is ``"path:line: message"`` (or ``"path: message"``), the form editors and terminals turn
    into a link to the offending line.
    """

    def __init__(self, path: str | os.PathLike[str], message: str, line: int | None = None) -> None:
        self.path = str(path)
        self.message = message
        self.line = line
        where = self.path if line is None else f"{self.path}:{line}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):  # keep it picklable across worker processes (args differ from __init__'s)
        return (type(self), (self.path, self.message, self.line))


class CacheError(UserError, RuntimeError):
    """The cache cannot be used (unwritable root, full disk, I/O error, bad export file)."""


class SecretInConfig(UserError):
    """An API key (or other secret) given as a config value or override: secrets come from the environment only."""


class NoSystems(UserError):
    """A single run or a sweep in which no cell evaluates a system."""


class TooManyFailures(UserError, RuntimeError):
    """More judge calls failed than the job tolerates (max_failed_share): the run is FAILED, not FINISHED."""


class TooManyRewriteFailures(UserError):
    """More rewrites failed than the job tolerates: its run is FAILED, not FINISHED."""


class CompareError(UserError, RuntimeError):
    """A problem with what compare was asked for (unknown experiment, bad argument): one line, exit code 2."""


def check_failed_share(failed: int, asked: int, limit: float, where: str, hint: str) -> None:
    """Raise TooManyFailures when more than ``limit`` of the ``asked`` pairs have no label; every job kind
    (grid cell, labels-only, content bias) applies the same rule."""
    share = failed / max(1, asked)
    if share > limit:
        raise TooManyFailures(
            f"{where}: {failed} of {asked} pairs ({share:.1%}) have no label, above max_failed_share={limit:.1%}; "
            f"the run is marked FAILED ({hint})"
        )


class BatchNotDone(UserError, TimeoutError):
    """A batch job still running when judge.backend.batch.timeout_s ran out: its id is saved, a rerun resumes it."""


class NonFiniteScores(UserError, ValueError):
    """A local model gave NaN or infinite log-probabilities / logits: never read as a tie or a pool-order fallback."""


class ModelNotDownloaded(UserError, OSError):
    """HF_HUB_OFFLINE=1 and the model is not in the Hugging Face cache: names the model and the download command."""


class ModelDoesNotFit(UserError, MemoryError):
    """A local model needs more GPU memory than the visible GPUs have free: an error before any weight is read."""
