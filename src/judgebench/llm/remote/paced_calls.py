"""One request of an API backend, paced and retried the same way for every provider.

Both SDKs are used with their own retries switched off, so that every request is counted and every retry honours the
server's Retry-After in one place (tenacity): :class:`PacedCalls` holds a request in a concurrency slot
(:mod:`judgebench.llm.remote.concurrency`), under the requests- and tokens-per-minute limiters
(:mod:`judgebench.llm.remote.rate_limits`) and a timeout, retries what is transient with backoff, and ends the job
when the server cannot be reached at all. Why apart from :mod:`judgebench.llm.remote.api`: that module says what a
backend is (its settings, key, URL, cost, and one request per SDK); this one is how any backend's requests are sent.
"""

from __future__ import annotations

import asyncio
import random
import time

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt

from judgebench.exceptions import BackendUnreachable
from judgebench.llm.remote.call_results import CallFailed, Completion, RequestStats
from judgebench.llm.remote.concurrency import AdaptiveConcurrency
from judgebench.llm.remote.provider_errors import PermanentError, TransientError
from judgebench.llm.remote.rate_limits import acquire_tokens, per_second_limiter
from judgebench.secrets import mask_url

# Consecutive connection errors, before any answer, that end the job ("cannot connect to URL").
CONNECT_FAILS = 3


def root_cause(exc: BaseException) -> str:
    """The message of the innermost exception an error was raised from (the refused connection, not the SDK's
    wrapper of it)."""
    while exc.__cause__ is not None or (exc.__context__ is not None and not exc.__suppress_context__):
        exc = exc.__cause__ or exc.__context__
    return str(exc) or type(exc).__name__


class PacedCalls:
    """The shared half of every API backend (:class:`judgebench.llm.remote.api.APIBackend`): ``async with backend``
    sets the limits up and opens the SDK client; :meth:`complete` sends one prompt through them.

    The backend provides the settings below, ``stats`` and ``_connect_failures`` (counted from 0), ``open``,
    ``close``, ``endpoint`` and ``_send`` (one request of its SDK)."""

    max_concurrency: int
    min_concurrency: int
    initial_concurrency: int | None
    adaptive: bool
    rpm: float | None
    tpm: float | None
    max_retries: int
    timeout_s: float
    backoff_base_s: float
    backoff_max_s: float
    request_max_output_tokens: int
    stats: RequestStats
    _connect_failures: int

    async def __aenter__(self) -> PacedCalls:
        # max_concurrency is the ceiling; adaptive: an AIMD window that finds the provider's limit below it
        self._sem = self.concurrency = AdaptiveConcurrency(
            self.max_concurrency, floor=self.min_concurrency, initial=self.initial_concurrency, adaptive=self.adaptive
        )
        self._rpm = per_second_limiter(self.rpm) if self.rpm else None
        self._tpm = per_second_limiter(self.tpm) if self.tpm else None
        await self.open()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def _backoff(self, exc: BaseException | None, failures: int) -> float:
        """Retry-After when the server gives one, else jittered exponential backoff."""
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), self.backoff_max_s)
        backoff = self.backoff_base_s * 2 ** (failures - 1)
        return min(self.backoff_max_s, backoff) * random.uniform(0.5, 1.0)

    def _first_wait(self, exc: BaseException) -> float:
        return self._backoff(exc, 1)

    def _wait(self, state) -> float:
        # tenacity counts the retries only; the first attempt was made (and failed) before it
        return self._backoff(state.outcome.exception(), state.attempt_number + 1)

    async def complete(self, prompt: str, system: str | None = None) -> Completion:
        started, attempts = time.perf_counter(), 1
        try:  # fast path: most calls succeed at once, without the retry machinery's per-call cost
            text, n_in, n_out, n_think = await self._attempt(prompt, system)
            self.stats.ok += 1
            return Completion(text, n_in, n_out, time.perf_counter() - started, attempts, n_think)
        except PermanentError as e:
            raise CallFailed(e.kind, str(e), attempts) from e
        except TransientError as e:
            if self.max_retries == 0:
                raise CallFailed(e.kind, str(e), attempts) from e
            await asyncio.sleep(self._first_wait(e))
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.max_retries),
                wait=self._wait,
                retry=retry_if_exception_type(TransientError),
                reraise=True,
            ):
                with attempt:
                    attempts += 1
                    self.stats.retries += 1
                    text, n_in, n_out, n_think = await self._attempt(prompt, system)
        except TransientError as e:
            raise CallFailed(e.kind, str(e), attempts) from e
        except PermanentError as e:
            raise CallFailed(e.kind, str(e), attempts) from e
        self.stats.ok += 1
        return Completion(text, n_in, n_out, time.perf_counter() - started, attempts, n_think)

    async def _attempt(self, prompt: str, system: str | None) -> tuple[str, int, int, int]:
        async with self._sem.slot():
            if self._rpm:
                await self._rpm.acquire()
            if self._tpm:
                await acquire_tokens(self._tpm, len(prompt) // 4 + self.request_max_output_tokens)
            self.stats.requests += 1
            try:
                async with asyncio.timeout(self.timeout_s):  # cheaper than wait_for: no extra task per call
                    return await self._send(prompt, system)
            except (TransientError, PermanentError) as e:
                self.stats.errors[e.kind] += 1
                self.stats.spent_unused(*getattr(e, "tokens", (0, 0, 0)))
                if e.kind == "connection" and self.stats.ok == 0:
                    self._connect_failures += 1
                    if self._connect_failures >= CONNECT_FAILS:
                        raise BackendUnreachable(
                            f"cannot connect to {mask_url(self.endpoint())} ({root_cause(e)}; "
                            f"{self._connect_failures} attempts, "
                            f"no answer yet): is the server running and the URL right (base_url, OPENAI_BASE_URL)?"
                        ) from None
                raise
            except asyncio.TimeoutError as e:
                self.stats.errors["timeout"] += 1
                raise TransientError("timeout", f"no answer within {self.timeout_s}s") from e
