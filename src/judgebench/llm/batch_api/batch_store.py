"""The saved ids of submitted batches: ``<cache_dir>/batches/batch-*.json``, one JSON file per batch.

A batch is paid for when it is created; its saved id is what lets a killed or restarted job poll it again
instead of paying twice. So the folder is checked writable (a probe file) before anything is submitted;
the file is written, fsynced and renamed before any waiting, under a name no other batch takes (an existing
file is never overwritten, so a file that names a live batch is never lost); a file that cannot be used
(truncated, hand-edited, ``"keys": 5``) is reported with the batch it names and kept; and if the save still
fails once the batch exists, the error names the batch and its provider and says how to resume it by hand.

A file holds ``batch_id``, ``backend``, ``model``, ``keys`` (the call-cache keys of its prompts) and ``meta``
(what the cache stores with each answer). Written by hand, ``{"batch_id": ..., "backend": ...}`` is enough:
without ``keys``, a run of that backend waits for the batch first and stores every answer it gave.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebench.cache.keys import is_key
from judgebench.cache.probe import probe_dir
from judgebench.exceptions import CacheError

log = logging.getLogger("judgebench")
_BATCH_ID = re.compile(r'"batch_id"\s*:\s*"([^"\\]{1,200})"')


@dataclass
class SavedBatch:
    path: Path
    batch_id: str
    backend: str
    keys: list[str] | None  # None: a file written by hand (which prompts it holds is known from its results)
    meta: dict[str, Any] | None = None


class BadState(ValueError):
    """A batch file that cannot be used; ``batch_id`` is the id it still names, where one can be read."""

    def __init__(self, reason: str, batch_id: str | None) -> None:
        super().__init__(reason)
        self.reason, self.batch_id = reason, batch_id


def parse_state(path: Path, text: str) -> SavedBatch:
    """The batch a file describes; BadState (with the id it names, if any) when it is not usable."""
    guess = _BATCH_ID.search(text)
    named = guess.group(1) if guess else None
    try:
        state = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadState(f"not valid JSON ({e})", named) from None
    if not isinstance(state, dict):
        raise BadState(f"expected a JSON object, got {type(state).__name__}", None)
    batch_id, backend, keys, meta = state.get("batch_id"), state.get("backend"), state.get("keys"), state.get("meta")
    named = batch_id if isinstance(batch_id, str) and batch_id else named
    if not isinstance(batch_id, str) or not batch_id:
        raise BadState(f'"batch_id" must be a non-empty string, got {batch_id!r}', None)
    if not isinstance(backend, str) or not backend:
        raise BadState(f'"backend" must be the provider\'s name (openai, gemini), got {backend!r}', named)
    if keys is not None and (not isinstance(keys, list) or not all(is_key(k) for k in keys)):
        shown = keys if not isinstance(keys, list) else next(k for k in keys if not is_key(k))
        raise BadState(f'"keys" must be a list of call-cache keys (64 hex characters), got {str(shown)[:80]!r}', named)
    if meta is not None and not isinstance(meta, dict):
        raise BadState(f'"meta" must be an object, got {type(meta).__name__}', named)
    return SavedBatch(path, batch_id, backend, keys, meta)


class BatchStore:
    """The saved batches of a cache dir."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def check_writable(self) -> None:
        """CacheError naming the folder unless a batch id could be saved now: checked before paying for a batch."""
        probe_dir(self.root, "batch ids")

    def path(self, keys: list[str], batch_id: str) -> Path:
        digest = hashlib.sha256("\n".join(sorted(keys)).encode()).hexdigest()[:24]
        return self.root / f"batch-{digest}-{hashlib.sha256(batch_id.encode()).hexdigest()[:8]}.json"

    def save(self, batch_id: str, backend, keys: list[str], meta: dict[str, Any] | None = None) -> Path:
        """Durable (written, fsynced, renamed) before the caller waits on the batch; a CacheError naming the
        batch, its provider and how to resume it by hand when that fails."""
        path = self.path(keys, batch_id)
        state = {
            "batch_id": batch_id,
            "backend": backend.backend,
            "model": backend.model,
            "created": time.time(),
            "keys": sorted(keys),
            "meta": meta,
        }
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except OSError as e:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
            by_hand = json.dumps({"batch_id": batch_id, "backend": backend.backend})
            raise CacheError(
                f"batch {batch_id} ({backend.backend}, {backend.model}, {len(keys)} prompts) was created and is "
                "paid for, "
                f"but its id could not be saved in {self.root} ([Errno {e.errno}] {e.strerror or e}); to resume "
                "it instead "
                f"of paying again, make {self.root} writable, save {by_hand} as {self.root}/batch-resume.json and "
                "run again"
            ) from None
        return path

    def open_batches(self, wanted: set[str], backend: str) -> list[SavedBatch]:
        """Saved batches of ``backend`` holding any wanted key, and those written by hand without keys. A file
        that cannot be used is warned, with the batch it names, and kept."""
        out = []
        try:
            paths = sorted(self.root.glob("batch-*.json")) if self.root.is_dir() else []
        except OSError:
            paths = []
        for path in paths:
            try:
                saved = parse_state(path, path.read_text(encoding="utf-8", errors="replace"))
            except OSError as e:
                log.warning("saved batch %s cannot be read (%s); ignored and kept", path, e)
                continue
            except BadState as e:
                running = (
                    f"it names batch {e.batch_id}, which is left running at the provider (paid for; its answers are "
                    f'not used unless the file is fixed: {{"batch_id": "{e.batch_id}", "backend": ...}} is enough)'
                    if e.batch_id
                    else "it names no batch id"
                )
                log.warning(
                    "saved batch %s cannot be used (%s): %s; the file is kept, and its prompts are submitted again",
                    path,
                    e.reason,
                    running,
                )
                continue
            if saved.backend == backend and (saved.keys is None or wanted.intersection(saved.keys)):
                out.append(saved)
        return out

    def pending(self, backend: str) -> tuple[set[str], int]:
        """(keys in the usable saved batches of ``backend``, how many hand-written files without keys): a dry
        run's view of what a rerun resumes rather than pays for."""
        keys: set[str] = set()
        unknown = 0
        for path in sorted(self.root.glob("batch-*.json")) if self.root.is_dir() else []:
            try:
                saved = parse_state(path, path.read_text(encoding="utf-8", errors="replace"))
            except (OSError, BadState):
                continue
            if saved.backend != backend:
                continue
            if saved.keys is None:
                unknown += 1
            else:
                keys.update(saved.keys)
        return keys, unknown
