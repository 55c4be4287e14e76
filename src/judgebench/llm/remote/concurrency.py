"""How many requests an API backend keeps in flight: a fixed number, or a window that finds the provider's limit.

A fixed ``max_concurrency`` is either too timid (throughput left on the table) or above what the provider
accepts (a storm of 429s, each retried). :class:`AdaptiveConcurrency` keeps an AIMD window, as TCP does:

* slow start: until the provider first pushes back, every success adds half a slot (the window grows
  1.5-fold per round trip: 8 to 64 in six), so a generous ceiling is reached in a few round trips while
  the overshoot past the provider's limit stays about half of it (doubling would send up to the limit
  again in the round trip before the first refusal comes back);
* additive increase: afterwards, one slot per window of successes;
* multiplicative decrease on overload (429, 503/529, Gemini's RESOURCE_EXHAUSTED): to
  ``min(window, in flight when the refused request was sent) * DECREASE``, and at least one slot below that
  in-flight count (which was one too many). The in-flight count at the
  refusal is where the provider drew the line, so one round trip brings a window far above the limit down
  to it (a plain ``window * 0.5`` needs several storms to get there, and halves a window that was only one
  slot too wide, leaving a quarter of the capacity idle on average);
* at most one decrease per window: refusals of requests sent before the last decrease are the same burst,
  already answered, so one burst cannot collapse the window to the minimum; each of them only caps the
  window one slot below the in-flight count it was refused at (never below the provider's real limit,
  as the client counts every request the provider counts, and more);
* slow probing near the level that failed: within one slot below it, growing by one slot takes at least
  ``PROBE_SUCCESSES`` successes, so a window sitting at the provider's limit costs about one 429 per
  ``PROBE_SUCCESSES`` requests, not one per window. (Slow start overshoots once, by up to half the limit:
  the successes of its last round trip come back before the first refusal does.)

Rate-limit headers sent with a refusal (OpenAI's ``x-ratelimit-remaining-requests`` / ``-tokens`` at 0 and
their ``x-ratelimit-reset-*``) hold every new request until the quota is back (the server's Retry-After when
it gives one, else the reset time); its ``x-ratelimit-limit-requests`` (per minute) paces every later request
a little below that rate, as a window alone cannot (how many requests fit in a minute depends on latency). The
refused request itself is retried by the backend's retry loop after
its Retry-After; the window only decides how many are in flight.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import deque
from collections.abc import Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass

SLOW_START_STEP = 0.5
"""Slots added per success until the first overload."""
DECREASE = 0.9
"""Multiplicative decrease factor, applied to the in-flight level the provider refused."""
PROBE_SUCCESSES = 200
"""Near the level that failed, one more slot takes at least this many successes (about one 429 per 200)."""
PACE_MARGIN = 0.97
"""Requests are paced at this share of the provider's announced requests-per-minute limit."""
HOLD_MAX_S = 60.0
"""A reset header is never honoured beyond this (a bad header must not stall a job)."""

_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | None) -> float | None:
    """Seconds of an OpenAI reset header (``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"``) or a bare number."""
    if text is None:
        return None
    text = str(text).strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text.replace(" ", ""):
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in parts)


def rate_limit_hold(headers: Mapping[str, str] | None, retry_after: float | None = None) -> float | None:
    """Seconds to hold new requests: the quota (requests or tokens) is used up, else None.

    When ``x-ratelimit-remaining-requests`` or ``-tokens`` is 0, the hold is the server's Retry-After
    when given, else the matching ``x-ratelimit-reset-*`` time.
    """
    if not headers:
        return None
    longest = None
    for what in ("requests", "tokens"):
        remaining = headers.get(f"x-ratelimit-remaining-{what}")
        try:
            used_up = remaining is not None and float(remaining) <= 0
        except ValueError:
            used_up = False
        if not used_up:
            continue
        wait = retry_after if retry_after is not None else parse_duration(headers.get(f"x-ratelimit-reset-{what}"))
        if wait is not None:
            longest = max(longest or 0.0, wait)
    return None if longest is None else min(longest, HOLD_MAX_S)


def announced_rpm(headers: Mapping[str, str] | None) -> float | None:
    """The provider's requests-per-minute limit from ``x-ratelimit-limit-requests``, when it sends one."""
    try:
        value = float((headers or {}).get("x-ratelimit-limit-requests", ""))
    except ValueError:
        return None
    return value if value > 0 else None


@dataclass
class Slot:
    """One request's place in the window: its send order and how many were in flight with it."""

    seq: int
    in_flight: int


class AdaptiveConcurrency:
    """The in-flight limit of one backend: fixed (``adaptive=False``, a plain FIFO semaphore) or AIMD.

    ``acquire()`` waits for a slot; ``release(slot, outcome, ...)`` reports how the request ended:
    ``"ok"``, ``"overload"`` (429/503: shrink) or ``"other"`` (an error that says nothing about load:
    the slot is freed, the window unchanged). ``async with limit.slot():`` does both, classifying the
    exception that leaves the block (``overload`` and ``headers`` attributes, else "other").
    """

    def __init__(
        self,
        ceiling: int,
        *,
        floor: int = 1,
        initial: int | None = None,
        adaptive: bool = True,
        decrease: float = DECREASE,
        probe_successes: int = PROBE_SUCCESSES,
        slow_start_step: float = SLOW_START_STEP,
    ) -> None:
        if not (1 <= floor <= ceiling):
            raise ValueError(f"expected 1 <= min_concurrency ({floor}) <= max_concurrency ({ceiling})")
        self.ceiling, self.floor, self.adaptive = int(ceiling), int(floor), bool(adaptive)
        self.decrease, self.probe_successes, self.slow_start_step = (
            float(decrease),
            int(probe_successes),
            slow_start_step,
        )
        start = self.ceiling if initial is None or not adaptive else int(initial)
        self.limit = float(min(self.ceiling, max(self.floor, start)))
        self.failed_at: int | None = None  # in-flight level of the last overload (None: still in slow start)
        self.in_flight = self.max_in_flight = 0
        self.sent = 0
        self.decreases = self.overloads = 0
        self._recover_seq = 0  # overloads of requests sent before this were answered by the last decrease
        self._hold_until = 0.0
        self.paced_rpm: float | None = None  # adopted from x-ratelimit-limit-requests
        self._next_send = 0.0  # paced: when the next request may go
        self._waiters: deque[asyncio.Future] = deque()

    @property
    def window(self) -> int:
        """Requests allowed in flight now."""
        return max(self.floor, min(self.ceiling, int(self.limit)))

    # -- taking and giving back slots ---------------------------------------------------------
    async def acquire(self) -> Slot:
        if self._waiters or self.in_flight >= self.window:
            fut = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut  # _wake counted us in before resolving the future
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self.in_flight -= 1  # granted, then cancelled: hand the slot on
                    self._wake()
                elif fut in self._waiters:  # _wake may have dropped it already
                    self._waiters.remove(fut)
                raise
        else:
            self.in_flight += 1
        slot = Slot(self.sent, self.in_flight)
        self.sent += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            while (wait := self._hold_until - time.monotonic()) > 0:
                await asyncio.sleep(wait)
            if self.paced_rpm:  # evenly spaced, no burst: the provider's quota is used up when pacing starts
                now = time.monotonic()
                at = max(now, self._next_send)
                self._next_send = at + 60 / self.paced_rpm
                if at > now:
                    await asyncio.sleep(at - now)
        except asyncio.CancelledError:
            self.release(slot, "other")
            raise
        return slot

    def release(
        self, slot: Slot, outcome: str, headers: Mapping[str, str] | None = None, retry_after: float | None = None
    ) -> None:
        self.in_flight -= 1
        if self.adaptive:
            hold = rate_limit_hold(headers, retry_after)
            if hold is not None:
                self._hold_until = max(self._hold_until, time.monotonic() + hold)
            if outcome == "ok":
                self._grow()
            elif outcome == "overload":
                self._shrink(slot)
                self._adopt_rate(headers)
        elif outcome == "overload":
            self.overloads += 1
        self._wake()

    @asynccontextmanager
    async def slot(self):
        """``async with``: one slot for the block; the exception leaving it says how the request ended."""
        slot = await self.acquire()
        try:
            yield slot
        except BaseException as exc:
            overload = bool(getattr(exc, "overload", False))
            self.release(
                slot,
                "overload" if overload else "other",
                getattr(exc, "headers", None),
                getattr(exc, "retry_after", None),
            )
            raise
        self.release(slot, "ok")

    # -- the window arithmetic ----------------------------------------------------------------
    def _grow(self) -> None:
        if self.failed_at is None:
            step = self.slow_start_step
        elif self.failed_at - 1 <= self.limit < self.failed_at:
            step = 1.0 / max(self.limit, self.probe_successes)  # probing the level that failed
        else:
            step = 1.0 / self.limit  # one slot per window of successes
        self.limit = min(float(self.ceiling), self.limit + step)

    def _shrink(self, slot: Slot) -> None:
        self.overloads += 1
        too_many = slot.in_flight  # what this request was sent beside was one too many
        if slot.seq < self._recover_seq:  # same burst as the last decrease: no second cut, only the cap
            self.failed_at = min(self.failed_at or too_many, too_many)
            self.limit = max(float(self.floor), min(self.limit, too_many - 1))
            return
        self.decreases += 1
        self.failed_at = too_many
        self.limit = max(float(self.floor), min(min(self.limit, too_many) * self.decrease, too_many - 1))
        self._recover_seq = self.sent

    def _adopt_rate(self, headers: Mapping[str, str] | None) -> None:
        rpm = announced_rpm(headers)
        if rpm is not None and (self.paced_rpm is None or rpm * PACE_MARGIN < self.paced_rpm):
            self.paced_rpm = rpm * PACE_MARGIN

    def _wake(self) -> None:
        while self._waiters and self.in_flight < self.window:
            fut = self._waiters.popleft()
            if not fut.done():
                self.in_flight += 1
                fut.set_result(None)

    def summary(self) -> dict:
        """What the run ended with (for logs and benchmarks)."""
        return {
            "adaptive": self.adaptive,
            "window": self.window,
            "limit": round(self.limit, 3),
            "max_in_flight": self.max_in_flight,
            "overloads": self.overloads,
            "decreases": self.decreases,
            "failed_at": self.failed_at,
            "paced_rpm": self.paced_rpm,
            "sent": self.sent,
        }
