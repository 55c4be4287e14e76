"""The settings of batch mode (``judge.backend.mode=batch``, ``judge.backend.batch.*``), checked when the
backend is built, so a bad value fails before anything is uploaded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from judgebench.exceptions import ConfigError

MODES = ("online", "batch")


@dataclass(frozen=True)
class BatchSettings:
    """Polling, the provider's limits per batch, and the batch discount.

    The defaults are OpenAI's (50,000 requests and 200 MB per input file); the Gemini configs set its
    inline-request limit. ``price_factor`` scales the online prices for answers a batch gave (0.5: half price).
    """

    poll_interval_s: float = 30.0
    timeout_s: float = 86400.0
    max_requests: int = 50_000
    max_bytes: int = 200_000_000
    price_factor: float = 0.5

    @classmethod
    def from_config(cls, value: Mapping[str, Any] | BatchSettings | None) -> BatchSettings:
        if value is None:
            return cls()
        if isinstance(value, BatchSettings):
            return value
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ConfigError(f"judge.backend.batch: unknown setting(s) {unknown}; expected some of {sorted(known)}")
        clean: dict[str, Any] = {}
        for name, raw in dict(value).items():
            kind = int if name in ("max_requests", "max_bytes") else float
            try:
                number = kind(raw)
            except (TypeError, ValueError):
                raise ConfigError(f"judge.backend.batch.{name}={raw!r}: expected a number") from None
            if number <= 0 and name != "price_factor" or number < 0:
                raise ConfigError(f"judge.backend.batch.{name}={raw!r}: expected a positive number")
            clean[name] = number
        return cls(**clean)


def check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ConfigError(f"judge.backend.mode={mode!r}: expected one of {list(MODES)}")
    return mode
