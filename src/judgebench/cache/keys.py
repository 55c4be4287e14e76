"""What identifies a cached call, the canonical JSON every checksum is over, and the checksummed envelope.

Key parts are hashed exactly: ``temperature=0`` and ``temperature=0.0`` are different keys, so callers pass
normalised configs.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgebench.cache.schema import problem as record_problem

KEY_RE = re.compile(r"^[0-9a-f]{64}$")


_CANON = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False
).encode  # what json.dumps builds per call


def canon(obj: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same object always gives the same text."""
    return _CANON(obj)


def call_key(**parts: Any) -> str:
    """sha256 hex of the canonical JSON of ``parts``; dict order does not matter, any value change does."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def key_maker(varying: str, **fixed: Any) -> Callable[[Any], str]:
    """``f(v) == call_key(**fixed, **{varying: v})``, without dumping and hashing the fixed parts for every ``v``.

    The canonical text is the fixed parts' text around ``varying``'s value (keys are sorted, so its place does
    not depend on the value): the text before it is hashed once, and each call copies that hash state and adds
    only the value's JSON and the text after it. Many keys that differ in one part (one per prompt of a job)
    then cost one small ``json.dumps`` and one hash update each."""
    if varying in fixed:
        raise TypeError(f"key_maker: {varying!r} is both the varying part and a fixed one")
    mark = "\u0000mark-" + secrets.token_hex(8)
    text = json.dumps(
        {**fixed, varying: mark}, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    marked = json.dumps(mark, ensure_ascii=False)
    before, found, after = text.partition(marked)
    if not found or marked in after:
        raise ValueError("key_maker: the fixed parts hold the marker")  # a random marker: practically impossible
    head = hashlib.sha256(before.encode("utf-8"))
    after_b = after.encode("utf-8")
    encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode

    def make(value: Any) -> str:
        h = head.copy()
        h.update(encode(value).encode("utf-8") + after_b)
        return h.hexdigest()

    return make


def checksum(payload: dict) -> str:
    return hashlib.sha256(canon(payload).encode("utf-8")).hexdigest()


def is_key(key: object) -> bool:
    return isinstance(key, str) and KEY_RE.match(key) is not None


def envelope_bytes(key: str, record: dict, meta: dict | None, written_at: float) -> tuple[dict, bytes]:
    """The payload as a reader will parse it back, and the stored envelope ``{"payload", "sha256"}`` (UTF-8).

    Round-tripped once so the checksum is over what a reader parses (int dict keys become strings, tuples
    lists); the envelope text is assembled from the payload's canonical text rather than dumped a third time
    (``"payload"`` sorts before ``"sha256"``, so it equals ``canon(envelope)``).
    """
    payload = json.loads(canon({"key": key, "meta": dict(meta or {}), "record": record, "written_at": written_at}))
    text = canon(payload)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return payload, ('{"payload":' + text + ',"sha256":"' + digest + '"}').encode("utf-8")


_PLAIN_LEAVES = (str, int, float, bool, type(None))


def _plain(obj: Any) -> bool:
    """True when ``canon(obj)`` is also the canonical text of what a reader parses back: dicts keyed by ``str``
    and lists of JSON leaves (exact types; a subclass, a tuple or an int key takes the round trip)."""
    t = type(obj)
    if t is dict:
        return all(type(k) is str and _plain(v) for k, v in obj.items())
    if t is list:
        return all(_plain(v) for v in obj)
    return t in _PLAIN_LEAVES


def envelopes(items: Sequence[tuple[str, dict, dict | None]], written_at: float) -> list[bytes]:
    """The stored envelopes of (key, record, meta) items written together, byte for byte what
    :func:`envelope_bytes` gives each: the payload text is assembled (``key`` < ``meta`` < ``record`` <
    ``written_at``, as sorting puts them) from each meta's canonical text, computed once per meta object, and
    each record's; records and metas that are plain JSON (:func:`_plain`) skip the parse-and-dump round trip."""
    stamp = "," + '"written_at":' + json.dumps(written_at) + "}"
    metas: dict[int, str] = {}
    out = []
    for key, record, meta in items:
        meta_text = metas.get(id(meta))
        if meta_text is None:
            m = dict(meta or {})
            meta_text = metas[id(meta)] = canon(m if _plain(m) else json.loads(canon(m)))
        rec_text = canon(record)
        if not _plain(record):
            rec_text = canon(json.loads(rec_text))
        text = '{"key":' + json.dumps(key) + ',"meta":' + meta_text + ',"record":' + rec_text + stamp
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        out.append(('{"payload":' + text + ',"sha256":"' + digest + '"}').encode("utf-8"))
    return out


class Corrupt(Exception):
    """An entry that is present but unusable; ``path`` names where (a file, or ``<segment>@<offset>``)."""

    def __init__(self, path: Path, reason: str | None = None) -> None:
        super().__init__(str(path))
        self.path, self.reason = path, reason


def validate(data: bytes, key: str, where: Path) -> dict:
    """The payload of an envelope if it checks out for ``key``; raises Corrupt naming ``where`` otherwise."""
    try:
        env = json.loads(data.decode("utf-8"))
        payload = env["payload"]
        ok = (
            isinstance(payload, dict)
            and env["sha256"] == checksum(payload)
            and payload.get("key") == key
            and isinstance(payload.get("record"), dict)
        )
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        ok = False
    if not ok:
        raise Corrupt(where)
    invalid = record_problem(payload)
    if invalid:
        raise Corrupt(where, invalid)
    return payload
