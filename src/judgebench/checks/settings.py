"""Every numeric (and otherwise typed) setting, checked in one place before a job does any work.

Configs carry no type schema, so ``judge.backend.max_concurrency=abc`` would otherwise reach the code as a
string and fail deep inside (a TypeError), or after judging (``max_failed_share=lots``), or not at all
(``max_failed_share=2``). Each rule names a key, what it takes and whether null is allowed; a key absent
from the composed config is not checked. One violation is one line naming the key, the value and what was
expected.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from omegaconf import DictConfig, OmegaConf

from judgebench.exceptions import UserError


@dataclass(frozen=True)
class Rule:
    what: str  # what the message says was expected
    ok: Callable[[Any], bool]
    nullable: bool = False


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def integer(low: int | None = None, nullable: bool = False) -> Rule:
    what = "an integer" + (f" >= {low}" if low is not None else "")
    return Rule(what + (" or null" if nullable else ""), lambda v: _int(v) and (low is None or v >= low), nullable)


def number(low: float | None = None, high: float | None = None, *, above: bool = False, nullable: bool = False) -> Rule:
    if low is not None and high is not None:
        what = f"a number between {low:g} and {high:g}"
    elif low == 0 and above:
        what = "a positive number"
    elif low is not None:
        what = f"a number {'>' if above else '>='} {low:g}"
    else:
        what = "a number"
    if nullable:
        what += " or null"

    def ok(v: Any) -> bool:
        return _num(v) and (low is None or (v > low if above else v >= low)) and (high is None or v <= high)

    return Rule(what, ok, nullable)


NAME = Rule("a non-empty name", lambda v: isinstance(v, str) and bool(v.strip()))
PATH = Rule("a non-empty path", lambda v: isinstance(v, str) and bool(v.strip()))
RANKS = Rule(
    "a list of ranks (integers >= 1), e.g. [1] or [2,3]",
    lambda v: isinstance(v, list) and all(_int(k) and k >= 1 for k in v),
)
SHARE = number(0, 1)
THINKING = Rule(
    "off, a thinking budget in tokens (an integer >= 0) or a level (minimal, low, medium, high)",
    lambda v: (
        v is False
        or (_int(v) and v >= 0)
        or (isinstance(v, str) and v.lower() in ("off", "minimal", "low", "medium", "high"))
    ),
    nullable=True,
)

BACKEND = {
    "max_concurrency": integer(1),
    "min_concurrency": integer(1),
    "initial_concurrency": integer(1, nullable=True),
    "adaptive": Rule("true or false", lambda v: isinstance(v, bool)),
    "requests_per_minute": number(0, above=True, nullable=True),
    "tokens_per_minute": number(0, above=True, nullable=True),
    "max_retries": integer(0),
    "timeout_s": number(0, above=True),
    "backoff_base_s": number(0),
    "backoff_max_s": number(0),
    "max_output_tokens": integer(1),
    "temperature": number(0),
    "top_p": number(0, 1),
    "frequency_penalty": number(),
    "price_input_per_mtok": number(0),
    "price_output_per_mtok": number(0),
    "thinking": THINKING,
    "thinking_reserve": integer(0),
}
MODEL_SPEC = {
    "batch_size": integer(1),
    "batch_tokens": integer(1, nullable=True),
    "max_input_tokens": integer(1, nullable=True),
    "memory_gb": number(0, above=True, nullable=True),
    "params_b": number(0, above=True, nullable=True),
    "dtype": Rule("auto, float32, bfloat16 or float16", lambda v: v in ("auto", "float32", "bfloat16", "float16")),
    "device": Rule(
        "auto, cpu, cuda, cuda:N or mps",
        lambda v: (
            isinstance(v, str) and (v in ("auto", "cpu", "cuda", "mps") or (v.startswith("cuda:") and v[5:].isdigit()))
        ),
    ),
}

RULES: dict[str, Rule] = {
    "experiment_name": NAME,
    "cache_dir": PATH,
    "max_failed_share": SHARE,
    "progress_interval_s": number(0, above=True),
    "rewriter.max_failed_share": number(0, 1, nullable=True),
    "simulation.prior_seed": integer(),
    "judge.parse_attempts": integer(1),
    "judge.noise": number(0),
    "judge.weight": number(),
    "judge.leniency": number(),
    "judge.seed": integer(),
    "ranker.depth": integer(1, nullable=True),
    "ranker.rerank_depth": integer(1, nullable=True),
    "ranker.top_k": integer(1, nullable=True),
    "ranker.passes": integer(1),
    "ranker.noise": number(0),
    "ranker.weight": number(),
    "ranker.k1": number(0),
    "ranker.b": number(0, 1),
    "perturbation.swaps": RANKS,
    "dataset.pool_depth": integer(1, nullable=True),
    "rewriter.pool_depth": integer(1, nullable=True),
    "rewriter.max_new_tokens": integer(1),
    "content_bias.per_level": integer(1),
    "content_bias.seed": integer(0),
    "gpu_estimate.peak_tflops": number(0, above=True),
    "gpu_estimate.utilisation": Rule("a number above 0 and at most 1", lambda v: _num(v) and 0 < v <= 1),
    **{f"{part}.backend.{k}": r for part in ("judge", "rewriter", "ranker") for k, r in BACKEND.items()},
    **{f"{part}.model_spec.{k}": r for part in ("judge", "rewriter", "ranker") for k, r in MODEL_SPEC.items()},
}

_ABSENT = object()


def _value(cfg: DictConfig, key: str) -> Any:
    try:
        value = OmegaConf.select(cfg, key, default=_ABSENT, throw_on_missing=True)
    except Exception:  # "???" left unset, a broken interpolation: reported where the value is used
        return _ABSENT
    if isinstance(value, DictConfig):
        return _ABSENT
    return OmegaConf.to_container(value, resolve=True) if OmegaConf.is_config(value) else value


def problems(cfg: DictConfig) -> list[str]:
    """One message per setting of the wrong type or out of range."""
    out = []
    for key, rule in RULES.items():
        value = _value(cfg, key)
        if value is _ABSENT or (value is None and rule.nullable) or (value is not None and rule.ok(value)):
            continue
        out.append(f"{key}={value!r}: expected {rule.what}")
    return out


def validate(cfg: DictConfig) -> None:
    """Raise UserError (one line) at the first bad setting, before the job reads data or calls anything."""
    found = problems(cfg)
    if found:
        more = f" (and {len(found) - 1} more bad setting(s))" if len(found) > 1 else ""
        raise UserError(found[0] + more)
    from judgebench.checks.added_settings import refuse_unknown_added

    refuse_unknown_added(cfg)  # +judge.temprature=0: a key its component does not take
