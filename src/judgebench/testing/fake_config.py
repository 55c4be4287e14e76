"""How the fake LLM server behaves, and the one fault draw per request that follows from it.

Why apart from the application: the settings are validated and the faults drawn in the same way whether the server
runs in this process, in its own (:mod:`judgebench.testing.fake_process`, which checks a configuration before it
spawns anything) or is configured over ``POST /_config``, and a test recomputes the outcomes from the same seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, fields, replace
from typing import Any

FAULTS = ("429", "500", "timeout", "malformed", "noscore")
"""Fault outcomes, in the order their shares are stacked on one uniform draw per request."""

FAULT_FIELD = {
    "429": "fail_429",
    "500": "fail_500",
    "timeout": "fail_timeout",
    "malformed": "fail_malformed",
    "noscore": "fail_noscore",
}
"""The :class:`FakeConfig` field holding each fault's share."""


@dataclass(frozen=True)
class FakeConfig:
    """Run-time behaviour; every field can be set at construction, via ``configure(**kw)`` or ``POST /_config``."""

    latency_s: float = 0.0  # asyncio.sleep per request, so concurrent requests overlap for real
    fail_429: float = 0.0  # share of requests answered 429 with Retry-After
    fail_500: float = 0.0
    fail_timeout: float = 0.0  # share of requests that hang timeout_hang_s before answering
    fail_malformed: float = 0.0  # share of 200 answers whose body is not valid JSON
    fail_noscore: float = 0.0  # share of 200 answers whose text holds no parsable score
    retry_after_s: float = 0.05
    timeout_hang_s: float = 30.0
    seed: int = 0  # fault RNG seed; the RNG restarts on a new seed and on reset
    labels: dict[str, int] = field(default_factory=dict)
    prefer: list[str] = field(default_factory=list)
    # judging prompts containing a substring get this answer text verbatim (first match wins)
    answers: dict[str, str] = field(default_factory=dict)
    # API keys answered 401 with the key echoed in the error body, as some servers do
    reject_keys: list[str] = field(default_factory=list)
    # OpenAI's model lookup (retrieve, list) refuses them too, unless this is set: a server whose model list is public
    lookup_any_key: bool = False
    # server-side limits (0: none): requests beyond them are answered 429 at once, with Retry-After, and
    # counted in by_outcome["429"] and in stats()["limited"]; limit_rpm also sends OpenAI's x-ratelimit-*-requests
    # headers on every answer (a token bucket holding one second's quota, refilled at limit_rpm / 60 per second)
    max_inflight: int = 0
    limit_rpm: float = 0.0
    # Gemini thinking: tokens a thinking answer spends at level high or when dynamic (see fake_gemini)
    thoughts: int = 200
    # model ids models.get describes besides fake_gemini.KNOWN_MODELS
    models: list[str] = field(default_factory=list)
    # model ids answered 404 everywhere (both protocols), beside the retired Gemini ids
    missing_models: list[str] = field(default_factory=list)

    def updated(self, **kw: Any) -> FakeConfig:
        """A validated copy with ``kw`` applied; unknown keys and impossible shares raise ValueError."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(kw) - names)
        if unknown:
            raise ValueError(f"unknown fake server setting(s) {unknown}; known: {sorted(names)}")
        clean: dict[str, Any] = {}
        for key, value in kw.items():
            if key == "labels":
                clean[key] = {str(k): int(v) for k, v in dict(value or {}).items()}
            elif key == "answers":
                clean[key] = {str(k): str(v) for k, v in dict(value or {}).items()}
            elif key in ("prefer", "reject_keys", "models", "missing_models"):
                clean[key] = [str(s) for s in (value or [])]
            elif key == "lookup_any_key":
                clean[key] = bool(value)
            elif key in ("seed", "max_inflight", "thoughts"):
                clean[key] = int(value)
                if key != "seed" and clean[key] < 0:
                    raise ValueError(f"{key} must be >= 0, got {value}")
            else:
                clean[key] = float(value)
                if clean[key] < 0:
                    raise ValueError(f"{key} must be >= 0, got {value}")
        new = replace(self, **clean)
        shares = [getattr(new, f) for f in FAULT_FIELD.values()]
        if any(s > 1 for s in shares) or sum(shares) > 1 + 1e-9:
            raise ValueError(f"fault shares must each be in [0, 1] and sum to <= 1, got {shares}")
        return new


def draw_outcome(rng: random.Random, config: FakeConfig) -> str:
    """One uniform draw per request, split into stacked fault shares (429, 500, timeout, malformed, noscore)."""
    u, edge = rng.random(), 0.0
    for outcome in FAULTS:
        edge += getattr(config, FAULT_FIELD[outcome])
        if u < edge:
            return outcome
    return "ok"
