"""Retrying the MLflow store's transient errors: SQLite's "database is locked" under many writers, or MLflow's
TEMPORARILY_UNAVAILABLE.

Dozens of jobs of a sweep write one SQLite store at once; a locked database is a moment's contention, not a
failure, so every store write goes through ``retry`` (tenacity: a few tries, waits doubling), and any other error
is raised at once. ``sleep`` is how the retries wait, a module attribute so that tests count the waits instead.
"""

from __future__ import annotations

import time

from mlflow.exceptions import MlflowException
from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential


def transient(exc: BaseException) -> bool:
    """A store error worth another try: MLflow's TEMPORARILY_UNAVAILABLE, or SQLite's "database is locked"."""
    text = str(exc).lower()
    return isinstance(exc, MlflowException) and (
        getattr(exc, "error_code", "") == "TEMPORARILY_UNAVAILABLE" or "is locked" in text
    )


sleep = time.sleep  # how the retries wait (tests count the waits instead)


def retry(call, attempts: int = 8):
    """Run call(), retrying transient store errors (SQLite "database is locked" under many writers): at most
    ``attempts`` tries, 0.1 s after the first failure, doubling up to 5 s; any other error, or the last one, is
    raised."""
    return Retrying(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=0.1, max=5.0),
        retry=retry_if_exception(transient),
        reraise=True,
        sleep=sleep,
    )(call)
