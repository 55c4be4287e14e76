"""The retry loops on tenacity: the MLflow store's (tracking/__init__.py) and the batch API's (llm/batch_api/batch.py).
Fakes that fail N times then answer, and fakes that always fail: how many tries, the waits between them, what is raised
at the end."""

import asyncio
from collections import Counter
from types import SimpleNamespace

import pytest
from mlflow.exceptions import MlflowException

from judgebench.exceptions import BackendUnreachable
from judgebench.llm.batch_api import batch
from judgebench.llm.remote.paced_calls import CONNECT_FAILS
from judgebench.llm.remote.provider_errors import PermanentError, TransientError
from judgebench.tracking import mlflow_store, retries


def locked() -> MlflowException:
    return MlflowException("(sqlite3.OperationalError) database is locked", error_code="INTERNAL_ERROR")


class Failing:
    """A call that raises ``make()`` its first ``failures`` times, then returns "ok"; keeps what it raised."""

    def __init__(self, failures: int, make):
        self.failures, self.make, self.calls, self.raised = failures, make, 0, []

    def __call__(self):
        self.calls += 1
        if self.calls <= self.failures:
            self.raised.append(self.make())
            raise self.raised[-1]
        return "ok"


@pytest.fixture
def waits(monkeypatch):
    out = []
    monkeypatch.setattr(retries, "sleep", out.append)
    return out


def test_store_retry_waits_0_1_s_doubling_then_answers(waits):
    flaky = Failing(3, locked)
    assert retries.retry(flaky) == "ok" and flaky.calls == 4
    assert waits == pytest.approx([0.1, 0.2, 0.4])


def test_store_retry_gives_up_after_8_tries_with_the_last_error(waits):
    always = Failing(10**6, locked)
    with pytest.raises(MlflowException) as raised:
        retries.retry(always)
    assert always.calls == 8 and raised.value is always.raised[-1]
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5.0])  # capped at 5 s, none after the last try


@pytest.mark.parametrize(
    "error", [MlflowException("bad param", error_code="INVALID_PARAMETER_VALUE"), OSError("database is locked")]
)  # only MLflow's errors are the store's
def test_store_retry_raises_anything_else_at_once(waits, error):
    other = Failing(1, lambda: error)
    with pytest.raises(type(error)) as raised:
        retries.retry(other)
    assert raised.value is error and other.calls == 1 and waits == []


class FakeStore:
    """An MLflow client whose experiment appears after ``appears_after`` lookups; every creation fails (raced)."""

    tracking_uri = "http://fake"

    def __init__(self, appears_after: int):
        self.appears_after, self.lookups, self.creations = appears_after, 0, 0

    def get_experiment_by_name(self, name):
        self.lookups += 1
        return SimpleNamespace(experiment_id="7") if self.lookups > self.appears_after else None

    def create_experiment(self, name, **kw):
        self.creations += 1
        raise locked()


def test_experiment_creation_raced_is_looked_up_again(waits):
    store = FakeStore(appears_after=3)
    assert mlflow_store.get_or_create_experiment(store, "e", None) == "7"
    assert (store.lookups, store.creations) == (4, 3) and waits == pytest.approx([0.2, 0.4, 0.6])


def test_experiment_never_found_nor_created_is_one_error_after_10_tries(waits):
    store = FakeStore(appears_after=10**6)
    with pytest.raises(RuntimeError, match="could not create or find MLflow experiment 'e'"):
        mlflow_store.get_or_create_experiment(store, "e", None)
    assert store.lookups == store.creations == 10 and waits == pytest.approx([0.2 * k for k in range(1, 10)])


class FakeBackend:
    """What with_retries uses of an APIBackend; _backoff waits failures/100 s and records (error kind, failures so
    far)."""

    def __init__(self, max_retries: int):
        self.max_retries, self.stats, self.backoffs = max_retries, SimpleNamespace(errors=Counter()), []

    def _backoff(self, exc, failures):
        self.backoffs.append((exc.kind, failures))
        return failures / 100

    def endpoint(self):
        return "http://127.0.0.1:9/v1"


@pytest.fixture
def slept(monkeypatch):
    out = []

    async def sleep(seconds):
        out.append(seconds)

    monkeypatch.setattr(batch, "_sleep", sleep)
    return out


def _batch(backend, call):
    async def fn():
        return call()

    return asyncio.run(batch.with_retries(backend, "poll batch b1", fn))


def test_batch_request_retried_then_answers(slept):
    backend, flaky = FakeBackend(max_retries=5), Failing(2, lambda: TransientError("503", "overloaded"))
    assert _batch(backend, flaky) == "ok" and flaky.calls == 3
    assert backend.stats.errors == Counter({"503": 2}) and backend.backoffs == [("503", 1), ("503", 2)]
    assert slept == [0.01, 0.02]  # the backend's backoff (Retry-After, else exponential) after each failure


def test_batch_request_gives_up_after_max_retries_with_the_last_error(slept):
    backend, always = FakeBackend(max_retries=3), Failing(10**6, lambda: TransientError("500", "server error"))
    with pytest.raises(TransientError) as raised:
        _batch(backend, always)
    assert always.calls == 4 and raised.value is always.raised[-1]
    assert backend.stats.errors == Counter({"500": 4}) and slept == [0.01, 0.02, 0.03]  # no wait after the last try


def test_batch_request_to_a_server_that_never_answers_is_unreachable_after_connect_fails(slept):
    kinds = iter(
        ["500", *["connection"] * 10]
    )  # every failure counts towards CONNECT_FAILS, the last must be a connection
    backend, always = FakeBackend(max_retries=10), Failing(10**6, lambda: TransientError(next(kinds), "refused"))
    with pytest.raises(BackendUnreachable) as raised:
        _batch(backend, always)
    assert always.calls == CONNECT_FAILS == 3
    assert str(raised.value).startswith(
        f"cannot connect to http://127.0.0.1:9/v1 (connection: refused; {CONNECT_FAILS} attempts "
        "to poll batch b1): is the server running"
    )
    assert backend.stats.errors == Counter({"500": 1, "connection": 2})


def test_batch_request_refused_for_good_is_not_retried(slept):
    backend, refused = FakeBackend(max_retries=5), Failing(1, lambda: PermanentError("401", "bad key"))
    with pytest.raises(PermanentError):
        _batch(backend, refused)
    assert refused.calls == 1 and slept == [] and not backend.stats.errors
