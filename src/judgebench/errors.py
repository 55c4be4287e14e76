"""Errors the user must fix, reported as one line: ``judgebench: error: <message>`` on stderr, exit code 2.

``judgebench run`` (judgebench/cli/run.py; ``python run.py`` in a clone) routes every job through
:func:`reported`. An exception is *user-facing* when it says what to change in the config, the input
files or the environment:

* every :class:`~judgebench.exceptions.UserError` (judgebench/exceptions.py: bad input file naming file
  and line, bad setting or missing API key naming the key, unusable cache naming the path, a cell above
  ``max_failed_share``, ...): the package raises these, and only these, for problems a user can fix;
* ``OSError`` (a missing model file or directory, a permission problem: the message names the path);
* OmegaConf's config errors raised while a job resolves its config (a ``???`` value left unset);
* a setting a component does not take (``+judge.backend.foo=1``);
* an MLflow tracking server that cannot be reached.

Before Hydra starts, ``judgebench run`` also refuses an unknown group option (``judge=gpt5``: one line
naming the valid options, exit 2, see checks/cli_checks.py), and each job checks every typed setting
(checks/settings.py).

Hydra's own errors (a key a config does not have, ``judge.temprature=0``; bad override syntax; a config
that cannot be composed) are one such line too, exit 2, with a "did you mean" for a near-miss key
(cli/override_errors.py), and so is a failed sweep's line, without
Hydra's HYDRA_FULL_ERROR hint after it. Anything else is a bug and keeps its traceback.

Tracebacks on demand: ``--verbose`` anywhere on the command line (taken off before Hydra parses it; it
sets ``JUDGEBENCH_VERBOSE=1`` so that jobs started elsewhere, e.g. by SLURM, inherit it) or
``JUDGEBENCH_VERBOSE=1`` print the full traceback, then the same line and exit code; Hydra's
``HYDRA_FULL_ERROR=1`` keeps Hydra's behaviour (the exception raised as is: full traceback, exit 1).

Multirun: a failed cell is logged (a bug with its traceback), recorded as ``failed`` (with the message) by
the sweep summary, and the sweep goes on with the next cells; at the end the first failed cell is reported
as one ``judgebench: error:`` line and the process exits 2, whatever failed (a user-facing error, a bug, a
SLURM job killed without a result).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import traceback
from collections.abc import Iterator, Sequence

from hydra.errors import CompactHydraException

EXIT_CODE = 2
PREFIX = "judgebench: error: "
VERBOSE_ENV = "JUDGEBENCH_VERBOSE"
VERBOSE_FLAG = "--verbose"

from judgebench.exceptions import ConfigError, NoSystems, SecretInConfig, UserError  # noqa: E402,F401

# One definition of what names or holds a secret (not the NAME of the variable holding it, like api_key_env).
from judgebench.secrets import (  # noqa: E402,F401
    ENV_NAME,
    MASK,
    SECRET_KEY,
    is_secret_key,
    mask_secrets,
    mask_url,
    scrub,
    secret_values,
)

log = logging.getLogger("judgebench")


def print_error(message: str, program: str = "judgebench", *, flush: bool = False) -> None:
    """The one way an error reaches the user: ``<program>: error: <message>`` on stderr, every secret value the
    process knows scrubbed (``judgebench``, its Hydra runs and sweeps, ``judgebench-compare``)."""
    print(f"{program}: error: {scrub(message)}", file=sys.stderr, flush=flush)


class CellError(CompactHydraException):
    """A multirun cell's user-facing error: Hydra marks the cell FAILED and goes on; printed as one line."""


# --------------------------------------------------------------------------- verbosity


def _env_on(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")


def verbose() -> bool:
    """--verbose / JUDGEBENCH_VERBOSE=1: the same one line and exit code, after the full traceback."""
    return _env_on(VERBOSE_ENV)


def hydra_full_error() -> bool:
    """HYDRA_FULL_ERROR=1: Hydra's own behaviour, the exception raised as is (full traceback, exit 1)."""
    return _env_on("HYDRA_FULL_ERROR")


def strip_verbose(argv: list[str]) -> list[str]:
    """argv without ``--verbose`` (Hydra would reject it); its presence sets JUDGEBENCH_VERBOSE=1."""
    if VERBOSE_FLAG in argv[1:]:
        os.environ[VERBOSE_ENV] = "1"
        return [argv[0], *(a for a in argv[1:] if a != VERBOSE_FLAG)]
    return argv


# --------------------------------------------------------------------------- classification


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)


def did_you_mean(word: str, options: Sequence[str]) -> str:
    """'; did you mean X?' for the closest of ``options`` to a misspelt ``word`` (difflib), else ''."""
    import difflib

    close = difflib.get_close_matches(word, [str(o) for o in options], n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip())


def _tracking_unreachable(exc: BaseException, tracking_uri: str | None) -> str | None:
    try:
        from mlflow.exceptions import MlflowException
    except ImportError:  # pragma: no cover - mlflow is a dependency
        return None
    if not isinstance(exc, MlflowException):
        return None
    text = str(exc)
    causes = [type(e).__name__ for e in _chain(exc)] + [type(exc.__context__).__name__ if exc.__context__ else ""]
    if not (
        "Max retries exceeded" in text
        or "Connection refused" in text
        or "ConnectionError" in causes
        or "ReadTimeout" in causes
    ):
        return None
    reason = re.search(r"\[Errno -?\d+\] [^'\")]+", text)
    where = tracking_uri or (re.search(r"https?://[^/\s]+", text) or [""])[0]
    return (
        f"the MLflow tracking server {where} cannot be reached ({reason.group(0) if reason else 'no connection'}); "
        "the LLM answers received so far are in the call cache, so a rerun once the server is back makes no new calls"
    )


def user_message(exc: BaseException, tracking_uri: str | None = None) -> str | None:
    """The one-line message for a user-facing error, None for anything else (a bug: keep the traceback)."""
    from hydra.errors import InstantiationException
    from omegaconf.errors import OmegaConfBaseException

    key = None  # hydra.utils.instantiate names the config node of the target that failed
    for e in _chain(exc):
        m = re.search(r"\nfull_key: (\S+)", str(e))
        if m and isinstance(e, InstantiationException):
            key = key or m.group(1)
            continue
        where = f"{key}: " if key else ""
        if isinstance(e, ConfigError):
            return where + _one_line(str(e))
        if isinstance(e, UserError):
            return _one_line(str(e))
        unreachable = _tracking_unreachable(e, tracking_uri)
        if unreachable:
            return unreachable
        if "attempt to write a readonly database" in str(e):  # a store that became read-only mid-job
            return (
                f"the MLflow store {tracking_uri or ''} is read-only (attempt to write a readonly database); point "
                "tracking_uri at a writable store (the LLM answers received so far are in the call cache)"
            )
        if isinstance(e, OmegaConfBaseException):
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            return where + first
        if isinstance(e, TypeError) and key and "unexpected keyword argument" in str(e):
            name = re.search(r"unexpected keyword argument '([^']+)'", str(e))
            return f"{key}: unknown setting {name.group(1) if name else ''!r} ({_one_line(str(e))})"
        if isinstance(e, OSError):
            return where + _one_line(str(e))
    return None


def sweep_cell() -> tuple[bool, str]:
    """(is this job a multirun cell, "cell #N (overrides)")."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
    except (ImportError, ValueError):
        return False, ""
    if hc.mode != RunMode.MULTIRUN:
        return False, ""
    from judgebench.identity import NON_SEMANTIC  # where a job logs and caches, not which cell it is

    shown = [
        re.sub(r"\\(.)", r"\1", o) for o in hc.overrides.task if o.partition("=")[0].lstrip("+~") not in NON_SEMANTIC
    ]
    return True, f"cell #{hc.job.num} ({' '.join(shown) or 'no overrides'})"


@contextlib.contextmanager
def reported(tracking_uri: str | None = None) -> Iterator[None]:
    """Run a job; turn a user-facing error into one line (single run: stderr, exit 2; multirun: CellError)."""
    try:
        yield
    except Exception as exc:
        if hydra_full_error():
            raise
        message = user_message(exc, tracking_uri)
        multirun, cell = sweep_cell()
        if message is None and multirun:  # a bug: its traceback in the cell's log, the sweep goes on and exits 2
            summary = scrub(f"{type(exc).__name__}: {exc}".splitlines()[0][:300])
            log.exception("%s failed: %s", cell, summary)
            raise CellError(f"{PREFIX}{cell}: {summary} (a bug: the traceback is in the cell's log)") from None
        if message is None:
            raise
        message = scrub(message)
        if multirun:
            if verbose():
                log.exception("%s failed: %s", cell, message)
            else:
                log.error("%s failed: %s", cell, message)
            raise CellError(f"{PREFIX}{cell}: {message}") from None
        if verbose():
            print(scrub(traceback.format_exc()), file=sys.stderr, end="")
        print_error(message, flush=True)
        raise SystemExit(EXIT_CODE) from None


INTERRUPTED_CODE = 130
_INTERRUPTED: list[str] = []  # the line, once printed


def count_stored_answers_from_now() -> None:
    """The Ctrl-C line counts the answers this command stored (a forked process inherits its parent's count)."""
    from judgebench.cache.store import STORED

    STORED.clear()


def interrupted(cell: str | None = None) -> str:
    """Ctrl-C: one line saying what stopped, what is kept, and how to resume; printed once (stderr)."""
    if not _INTERRUPTED:
        import threading
        import time

        from judgebench.cache.store import STORED

        deadline = time.monotonic() + 3
        for t in threading.enumerate():  # answers still being stored by writer threads: count them too
            if t is not threading.current_thread() and not t.daemon:
                t.join(timeout=max(0.0, deadline - time.monotonic()))

        roots = ", ".join(sorted(STORED)) or "none written"
        line = (
            f"judgebench: interrupted{f' during {cell}' if cell else ''}: "
            f"{sum(STORED.values())} answers stored in the call "
            f"cache ({roots}) are kept; rerun the same command to resume (finished cells are skipped, cached answers "
            "are not paid again)"
        )
        _INTERRUPTED.append(line)
        print(line, file=sys.stderr, flush=True)
    return _INTERRUPTED[0]


def exit_code(exc: SystemExit, failed_sweep: str | None = None) -> int | str | None:
    """Hydra ends a failed multirun with sys.exit(1), whatever the cause: a cell's CellError (Hydra printed its
    one line), or an exception that is not one (a SLURM job that died without a result, a launcher's error).
    Every failed sweep exits 2; ``failed_sweep`` (the first failed cell's line, None when no sweep ran) is
    printed as the one ``judgebench: error:`` line when Hydra printed none."""
    cell_error = isinstance(exc.__context__, CellError)
    if exc.code != 1 or not (cell_error or failed_sweep is not None):
        return exc.code
    if not cell_error:
        print_error(failed_sweep or "the sweep failed", flush=True)
    return EXIT_CODE
