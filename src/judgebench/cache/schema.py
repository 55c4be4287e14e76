"""The shape a cache record must have to be used: checked on import, by ``cache verify`` and on every read.

A checksum proves an entry is what its writer wrote, not that the writer was judgebench (a shared cache,
another tool, an older version): an entry with a valid checksum but missing fields would crash a run
(``KeyError``), and one whose ``parsed`` label is 7 would reach the metrics. Such an entry is *invalid*:
skipped on import, reported by verify, and a warned miss (asked again) at run time.

The producer is told by the entry's meta: API calls (``backend`` openai, gemini, ...) need ``text`` and token
counts, judge answers (meta with ``prompt_version``) a ``parsed`` grade 0-3 or null; local-model records
(``backend: transformers``) have their fields type-checked. Entries without a backend are checked only as
objects (tests and tools store arbitrary records). Readers check what they need as well
(:func:`api_problem` in the API call loop), so an entry whose meta says nothing is never a crash either.
"""

from __future__ import annotations

import math
from typing import Any

LOCAL = "transformers"


def _int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _grade(v: Any) -> bool:
    return _int(v) and 0 <= v <= 3


API_FIELDS = ("text", "parsed", "input_tokens", "output_tokens")


def api_problem(record: dict, judge: bool = False) -> str | None:
    """What makes a record unusable as an API call's answer (a judge's when `judge`), or None."""
    return _api(record, {"prompt_version": ""} if judge else {})


def _api(record: dict, meta: dict) -> str | None:
    if not isinstance(record.get("text"), str):
        return "'text' must be a string"
    for name in ("input_tokens", "output_tokens"):
        if not (_int(record.get(name)) and record[name] >= 0):
            return f"{name!r} must be an integer >= 0"
    if "thinking_tokens" in record and not (_int(record["thinking_tokens"]) and record["thinking_tokens"] >= 0):
        return "'thinking_tokens' must be an integer >= 0"  # absent in answers stored before thinking was counted
    for name in ("latency_s", "attempts"):
        if name in record and not _num(record[name]):
            return f"{name!r} must be a number"
    if "prompt_version" in meta:  # a judge's answer
        if "parsed" not in record:
            return "a judge answer needs 'parsed' (a grade 0-3 or null)"
        if record["parsed"] is not None and not _grade(record["parsed"]):
            return f"'parsed' must be a grade 0-3 or null, got {record['parsed']!r}"
    elif record.get("parsed") is not None and not isinstance(record["parsed"], str):
        return "'parsed' must be a string or null"
    return None


def _local(record: dict) -> str | None:
    if "label" in record:
        if not _grade(record["label"]):
            return f"'label' must be a grade 0-3, got {record['label']!r}"
        if not _num(record.get("expected")):
            return "'expected' must be a number"
        probs = record.get("probs")
        if not (isinstance(probs, list) and len(probs) == 4 and all(_num(p) for p in probs)):
            return "'probs' must be 4 numbers"
        if not isinstance(record.get("truncated"), bool):
            return "'truncated' must be true or false"
    for name in ("score", "lp_a", "lp_b"):  # a NaN score (an fp16 overflow stored by an older version) is no score
        if name in record and not (_num(record[name]) and math.isfinite(record[name])):
            return f"{name!r} must be a finite number"
    if "text" in record and not isinstance(record["text"], str):
        return "'text' must be a string"
    return None


def problem(payload: dict) -> str | None:
    """What makes a (checksum-valid) payload unusable, or None when it is fine."""
    meta, record = payload.get("meta"), payload.get("record")
    if not isinstance(meta, dict):
        return "'meta' must be an object"
    if not isinstance(record, dict):
        return "'record' must be an object"
    backend = meta.get("backend")
    if backend is None:
        return None
    if backend == LOCAL:
        return _local(record)
    if "prompt_version" in meta or any(k in record for k in API_FIELDS):
        return _api(record, meta)
    return None  # not a record judgebench writes for an API call
