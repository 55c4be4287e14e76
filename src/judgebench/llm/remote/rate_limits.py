"""Requests and tokens per minute, spread evenly over each second, as APIs enforce them.

``AsyncLimiter(n, 60)`` would let a full minute's quota through at once (a burst of n requests): APIs
enforce per-minute limits over shorter windows (e.g. 600 RPM as 10 per second) and answer 429 to that.
"""

from __future__ import annotations

from aiolimiter import AsyncLimiter


def per_second_limiter(per_minute: float) -> AsyncLimiter:
    """A limiter that spreads a per-minute quota evenly, with at most one second's worth in a burst."""
    per_second = per_minute / 60
    return AsyncLimiter(per_second, 1) if per_second >= 1 else AsyncLimiter(1, 1 / per_second)


async def acquire_tokens(limiter: AsyncLimiter, tokens: int) -> None:
    """Take ``tokens`` from a per-second limiter, one second's quota at a time: aiolimiter refuses a single
    acquire above its capacity, and capping it there would under-count a prompt longer than TPM/60 tokens."""
    left = max(1, int(tokens))
    while left > 0:
        take = min(limiter.max_rate, left)
        await limiter.acquire(take)
        left -= take
