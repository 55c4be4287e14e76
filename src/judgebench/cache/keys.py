"""What identifies a cached call, the canonical JSON every checksum is over, and the checksummed envelope.

Key parts are hashed exactly: ``temperature=0`` and ``temperature=0.0`` are different keys, so callers pass
normalised configs.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from judgebench.cache.schema import problem as record_problem

KEY_RE = re.compile(r"^[0-9a-f]{64}$")


def canon(obj: Any) -> str:
    """Sorted keys, no spaces, UTF-8 kept: the same object always gives the same text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_key(**parts: Any) -> str:
    """sha256 hex of the canonical JSON of ``parts``; dict order does not matter, any value change does."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
