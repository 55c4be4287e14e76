"""What a Gemini model id means for a request: whether Google has retired it (and what to use instead), and
how its family controls thinking.

Gemini 2.5 models take a thinking *budget* (tokens; 0 turns thinking off where the model allows it, 2.5 Pro
cannot go below 128), Gemini 3 and later a thinking *level*; 2.0 and older models do not think. Thinking
tokens count against ``max_output_tokens``: a request that leaves them no room comes back empty
(finishReason MAX_TOKENS). :func:`thinking_request` turns the ``thinking`` setting into the request's
thinking config and widens its ``max_output_tokens`` by what thinking may use, or refuses the setting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from judgebench.exceptions import BackendRefused, ConfigError

RETIRED: dict[str, tuple[str, str]] = {
    # retired id: (the current model to use instead, the judge option that runs it)
    "gemini-pro": ("gemini-3.1-pro-preview", "judge=gemini_pro"),
    "gemini-1.0-pro": ("gemini-3.1-pro-preview", "judge=gemini_pro"),
    "gemini-1.0-nano": ("gemini-3.5-flash-lite", "judge=gemini_nano"),  # on-device only, never served by the API
    "gemini-1.5-pro": ("gemini-3.1-pro-preview", "judge=gemini_pro"),
    "gemini-1.5-flash": ("gemini-3.8-flash", "judge=gemini_flash"),
    "gemini-1.5-flash-8b": ("gemini-3.5-flash-lite", "judge=gemini_nano"),
    "gemini-2.0-flash": ("gemini-3.8-flash", "judge=gemini_flash"),
    "gemini-2.0-flash-lite": ("gemini-3.5-flash-lite", "judge=gemini_nano"),
    "gemini-2.5-pro": ("gemini-3.1-pro-preview", "judge=gemini_pro"),
    "gemini-2.5-flash": ("gemini-3.8-flash", "judge=gemini_flash"),
    "gemini-3-pro-preview": ("gemini-3.1-pro-preview", "judge=gemini_pro"),
}
"""Model ids the Gemini API no longer serves (as of December 2026), the one table the preflight and the fake
server read. Pinned versions (``-001``) and ``-latest`` aliases of an id are retired with it."""

LEVELS = ("minimal", "low", "medium", "high")
_FAMILY = re.compile(r"^gemini-(\d+)(?:\.(\d+))?-(pro|flash-lite|flash)(?:-|$)")


def base_id(model: str) -> str:
    """The id without the ``models/`` prefix, a pinned version (``-001``) or a ``-latest`` alias."""
    name = model.strip().removeprefix("models/")
    return re.sub(r"-(\d{3}|latest)$", "", name)


def replacement(model: str) -> tuple[str, str] | None:
    """(model to use instead, judge option) when Google has retired ``model``, else None."""
    return RETIRED.get(base_id(model))


def refuse_retired(role: str, provider: str, model: str) -> None:
    """BackendRefused naming the model to use instead when ``provider`` is Gemini and Google retired ``model``:
    every call of the run would answer 404 NOT_FOUND. The one refusal both the dry run (offline) and the preflight
    give, before anything is sent."""
    if provider == "gemini" and (found := replacement(model)):
        new, option = found
        hint = f"{option}, or {role}.backend.model={new}" if role == "judge" else f"{role}.backend.model={new}"
        raise BackendRefused(
            f"{role}.backend.model={model}: Google has retired this model (the Gemini API answers "
            f"404 NOT_FOUND for it); use {new} instead ({hint}); nothing was sent"
        )


@dataclass(frozen=True)
class ThinkingRules:
    """How one model family thinks. ``control``: budget | level | none (does not think) | unknown (an id we
    cannot place: settings are passed on as given)."""

    control: str
    thinks_by_default: bool = False
    min_budget: int = 0  # the least budget when thinking cannot be turned off (0: it can)
    max_budget: int = 0
    levels: tuple[str, ...] = ()


def thinking_rules(model: str) -> ThinkingRules:
    m = _FAMILY.match(base_id(model))
    if not m:
        return ThinkingRules("unknown")
    major, minor, tier = int(m.group(1)), int(m.group(2) or 0), m.group(3)
    if (major, minor) < (2, 5):
        return ThinkingRules("none")
    if major == 2:
        if tier == "pro":
            return ThinkingRules("budget", True, 128, 32768)
        if tier == "flash-lite":
            return ThinkingRules("budget", False, 0, 24576)  # off unless asked; a budget on is 512..24576
        return ThinkingRules("budget", True, 0, 24576)
    if tier == "pro" or (tier == "flash" and (major, minor) >= (3, 7)):
        return ThinkingRules("level", True, levels=("low", "medium", "high"))  # no "minimal"
    return ThinkingRules("level", True, levels=LEVELS)


def normalised(thinking) -> str | int | None:
    """The ``thinking`` setting as null, "off", a budget (int) or a level name; ConfigError otherwise.

    YAML reads a bare ``off`` as false, so false means off too."""
    if thinking is None:
        return None
    if thinking is False or (isinstance(thinking, str) and thinking.strip().lower() in ("off", "false")):
        return "off"
    if isinstance(thinking, int) and not isinstance(thinking, bool):
        if thinking < -1:
            raise ConfigError(
                f"thinking={thinking}: expected off, a budget in tokens (>= 0) or a level ({', '.join(LEVELS)})"
            )
        return thinking
    if isinstance(thinking, str) and thinking.strip().lower() in LEVELS:
        return thinking.strip().lower()
    raise ConfigError(
        f"thinking={thinking!r}: expected off, a budget in tokens (>= 0) or a level ({', '.join(LEVELS)})"
    )


def thinking_request(model: str, thinking, reserve: int, max_output_tokens: int) -> tuple[dict | None, int]:
    """(the request's thinking config or None, the request's max_output_tokens) for a ``thinking`` setting.

    ``off`` is the least thinking the model allows: none where it can be turned off, else 2.5 Pro's minimum
    budget or a Gemini 3 model's lowest level. A budget widens max_output_tokens by itself; a level (whose
    length the model decides) by ``reserve``. Null (the model's default, dynamic thinking) is refused for
    a model that thinks by default: nothing would bound how much of max_output_tokens it eats."""
    t = normalised(thinking)
    rules = thinking_rules(model)
    if rules.control == "none":
        if t in (None, "off", 0):
            return None, max_output_tokens
        raise ConfigError(f"thinking={t!r}: {model} does not think; set thinking=off")
    if t is None:
        if rules.control == "unknown" or not rules.thinks_by_default:
            return None, max_output_tokens
        raise ConfigError(
            f"thinking=null: {model} would think as much as it likes (dynamic thinking), which "
            f"max_output_tokens={max_output_tokens} cannot bound; set thinking=off, a budget in tokens "
            f"or a level"
        )
    if t == -1:
        raise ConfigError(
            f"thinking=-1 (dynamic thinking) cannot be bounded by max_output_tokens={max_output_tokens}; "
            "give a budget in tokens, a level, or off"
        )
    if rules.control == "unknown":
        if t == "off":
            return None, max_output_tokens
        if isinstance(t, int):
            return {"thinking_budget": t}, max_output_tokens + t
        return _level(t, reserve, max_output_tokens)
    if rules.control == "budget":
        if isinstance(t, str) and t != "off":
            raise ConfigError(
                f"thinking={t}: {model} takes a thinking budget in tokens "
                f"({rules.min_budget or 0}-{rules.max_budget}, or off), not a level"
            )
        budget = rules.min_budget if t == "off" else t
        if budget == 0 and rules.min_budget:
            raise ConfigError(
                f"thinking=0: {model} cannot turn thinking off; its least budget is {rules.min_budget} "
                f"(thinking=off picks it)"
            )
        low = rules.min_budget or (512 if "flash-lite" in model else 1)
        if budget and not low <= budget <= rules.max_budget:
            raise ConfigError(
                f"thinking={budget}: {model} takes a thinking budget of {low}-{rules.max_budget} tokens"
                + ("" if rules.min_budget else " (or 0: off)")
            )
        return {"thinking_budget": budget}, max_output_tokens + budget
    if isinstance(t, int):
        raise ConfigError(f"thinking={t}: {model} takes a thinking level ({', '.join(rules.levels)}), not a budget")
    level = rules.levels[0] if t == "off" else t
    if level not in rules.levels:
        raise ConfigError(f"thinking={level}: {model} takes the levels {', '.join(rules.levels)}")
    return _level(level, reserve, max_output_tokens)


def _level(level: str, reserve: int, max_output_tokens: int) -> tuple[dict, int]:
    if reserve < 1:
        raise ConfigError(
            f"thinking_reserve={reserve}: thinking at level {level} needs tokens set aside in "
            f"max_output_tokens, or the answer comes back empty; expected an integer >= 1"
        )
    return {"thinking_level": level}, max_output_tokens + reserve


# What a Gemini response holds, online and in batch (llm/remote/api.py, llm/batch_api/batch_gemini.py).
def gemini_answer(resp) -> tuple[str, int, int, int]:
    """(text, input tokens, answer tokens, thinking tokens) of a GenerateContentResponse."""
    usage = resp.usage_metadata
    count = lambda name: (getattr(usage, name, None) or 0) if usage else 0  # noqa: E731
    return (
        (resp.text or ""),
        count("prompt_token_count"),
        count("candidates_token_count"),
        count("thoughts_token_count"),
    )


def finish_reason(resp) -> str:
    reason = resp.candidates[0].finish_reason if resp.candidates else None
    return getattr(reason, "value", None) or str(reason or "")
