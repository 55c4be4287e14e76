"""How every API backend's requests are sent (llm/remote/paced_calls.py), with a scripted request in place of an SDK:
what is transient is retried after the server's Retry-After (else backoff), what is permanent is not, every request
and error is counted, and a server never reached ends the job after CONNECT_FAILS tries."""

from __future__ import annotations

import asyncio

import pytest

from judgebench.exceptions import BackendUnreachable
from judgebench.llm.remote import paced_calls
from judgebench.llm.remote.api import APIBackend
from judgebench.llm.remote.call_results import CallFailed
from judgebench.llm.remote.paced_calls import CONNECT_FAILS, root_cause
from judgebench.llm.remote.provider_errors import PermanentError, TransientError


class _Scripted(APIBackend):
    """Answers each request with the next item of ``script``: an exception is raised, a string is the answer."""

    backend = "openai"

    def __init__(self, script, **kw):
        super().__init__("m", base_url="http://127.0.0.1:9/v1", **kw)
        self.script = list(script)

    async def open(self) -> None:
        pass

    async def _send(self, prompt, system):
        step = self.script.pop(0)
        if isinstance(step, BaseException):
            raise step
        return step, len(prompt.split()), len(step.split()), 0


@pytest.fixture
def waits(monkeypatch):
    """The seconds each retry waited (asyncio.sleep of paced_calls recorded, not slept)."""
    seen: list[float] = []

    async def fake_sleep(s):
        seen.append(s)

    monkeypatch.setattr(paced_calls.asyncio, "sleep", fake_sleep)
    return seen


def _complete(backend, prompt="a b c"):
    async def go():
        async with backend:
            return await backend.complete(prompt)

    return asyncio.run(go())


def test_transient_errors_are_retried_after_retry_after_then_answered(waits):
    backend = _Scripted(
        [TransientError("429", "slow down", retry_after=1.5), TransientError("500", "oops", retry_after=70), "ok 2"],
        backoff_max_s=60.0,
    )
    done = _complete(backend)
    assert (done.text, done.input_tokens, done.output_tokens, done.attempts) == ("ok 2", 3, 2, 3)
    assert waits == [1.5, 60.0]  # Retry-After, capped at backoff_max_s
    stats = backend.stats
    assert (stats.requests, stats.ok, stats.retries, dict(stats.errors)) == (3, 1, 2, {"429": 1, "500": 1})


def test_without_retry_after_the_backoff_doubles_with_jitter(waits):
    backend = _Scripted([TransientError("500", "x")] * 4 + ["ok"], backoff_base_s=1.0, backoff_max_s=5.0)
    assert _complete(backend).attempts == 5
    # failures 1..4: base * 2**(n-1) capped at 5, times a uniform jitter in [0.5, 1]
    for wait, full in zip(waits, [1.0, 2.0, 4.0, 5.0]):
        assert full * 0.5 <= wait <= full
    assert len(waits) == 4


def test_retries_used_up_or_a_permanent_error_fail_the_call(waits):
    backend = _Scripted([TransientError("500", "down")] * 3, max_retries=2)
    with pytest.raises(CallFailed, match=r"^500 after 3 attempt\(s\): 500: down$") as err:
        _complete(backend)
    assert err.value.attempts == 3 and backend.stats.requests == 3 and backend.stats.ok == 0
    paid = PermanentError("max_tokens", "cut off", tokens=(7, 5, 11))
    backend = _Scripted([paid, "never asked"])
    with pytest.raises(CallFailed, match=r"^max_tokens after 1 attempt\(s\)"):
        _complete(backend)
    assert backend.script == ["never asked"] and len(waits) == 2  # no wait: not retried
    assert dict(backend.stats.unused_tokens) == {"input": 7, "output": 5, "thinking": 11}  # spent all the same


def test_a_server_never_reached_ends_the_job_naming_the_url_and_the_cause(waits):
    def refused():
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except ConnectionRefusedError as inner:
            try:
                raise TransientError("connection", "Connection error.") from inner
            except TransientError as outer:
                return outer

    backend = _Scripted([refused() for _ in range(CONNECT_FAILS + 2)], max_retries=10)
    with pytest.raises(
        BackendUnreachable,
        match=rf"cannot connect to http://127.0.0.1:9/v1 \(\[Errno 111\] Connection refused; {CONNECT_FAILS} attempts",
    ):
        _complete(backend)
    assert backend.stats.requests == CONNECT_FAILS and len(backend.script) == 2
    assert root_cause(refused()) == "[Errno 111] Connection refused"


def test_a_request_over_timeout_s_is_a_transient_timeout(waits):
    class _Hangs(_Scripted):
        async def _send(self, prompt, system):
            await asyncio.Event().wait()

    backend = _Hangs([], timeout_s=0.05, max_retries=0)
    with pytest.raises(CallFailed, match=r"^timeout after 1 attempt\(s\): timeout: no answer within 0.05s$"):
        _complete(backend)
    assert dict(backend.stats.errors) == {"timeout": 1}
