"""Persistent, content-addressed cache of LLM calls.

Every paid or slow model call is keyed by :func:`call_key` over (backend, model,
prompt template version, rendered prompt, generation parameters) and stored
durably *before* the caller sees the result, so a second run of the same grid
makes zero calls and a killed run loses at most its in-flight calls.

Storage decision: one JSON file per entry, ``<root>/<key[:2]>/<key>.json``.

* Writers write a uniquely named temp file in the *same* directory and
  ``os.replace`` it onto the final name (with ``fsync=True``, or
  JUDGEBENCH_CACHE_FSYNC=1, the file and the directory are fsync'd too).
  A killed *process* loses nothing that was renamed into place: the data is in
  the kernel's page cache and reaches the disk without the process. Only an OS
  crash or power loss can lose the last seconds of entries; a torn file is
  then caught by its checksum and re-asked. Per-entry fsync costs ~10 ms on
  this kind of machine, which capped judging at ~55 % of the client's rate, so
  it is opt-in for file systems or clusters where a node crash is likely.
  Rename within one directory is atomic on POSIX local file systems and on
  NFS/Lustre, so a reader sees either no entry or a complete one, never a half
  record, and no locks are needed: two processes computing the same key both
  write valid content and the last rename wins.
* SQLite was rejected: WAL mode needs shared memory (not available across NFS
  clients) and rollback-journal mode relies on POSIX byte-range locks, which
  are unreliable on NFS/Lustre; concurrent SLURM array jobs would corrupt it or
  serialise on one lock.  A directory of immutable files has no shared mutable
  state at all, and exporting/merging caches is a set union.
* Each file holds ``{"sha256": ..., "payload": {"key", "meta", "record",
  "written_at"}}``; the checksum covers the canonical JSON of the payload, so a
  truncated, zero-length, bit-flipped or misnamed file is detected, reported
  with its path, and treated as a miss (the caller recomputes and overwrites).
* A writer killed between creating and renaming its temp file leaves a
  ``.*.tmp`` file that is never read as an entry.  :meth:`CallCache.clean_temp`
  removes temp files older than ``STALE_TEMP_S`` (1 h: no live write takes that
  long, and the margin absorbs NFS client/server clock skew); ``verify(
  remove_corrupt=True)`` calls it.

Records are returned as they come back from JSON (tuples become lists, dict
keys become strings).  Key parts are hashed exactly: ``temperature=0`` and
``temperature=0.0`` are different keys, so callers pass normalised configs.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import logging
import os
import re
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from judgebench.cache_schema import problem as record_problem
from judgebench.exceptions import CacheError

log = logging.getLogger(__name__)

STALE_TEMP_S = 3600.0
STORED: Counter[str] = Counter()  # entries written by this process, per cache root (the Ctrl-C message)
_KEY_RE = re.compile(r"^[0-9a-f]{64}$")
_TMP_SUFFIX = ".tmp"


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def call_key(**parts: Any) -> str:
    """sha256 hex of the canonical JSON of ``parts``; dict order does not matter, any value change does."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _checksum(payload: dict) -> str:
    return hashlib.sha256(_canon(payload).encode("utf-8")).hexdigest()


def _oserr(e: OSError) -> str:
    return f"[Errno {e.errno}] {e.strerror or e}"


@dataclass
class CacheStats:
    entries: int
    bytes: int
    corrupt: int
    by_backend: dict[str, int] = field(default_factory=dict)
    by_model: dict[str, int] = field(default_factory=dict)


class CallCache:
    """A directory of checksummed, atomically written entries; safe for many concurrent processes."""

    def __init__(self, root: str | Path, fsync: bool | None = None) -> None:
        self.root = Path(root).expanduser()
        self.fsync = os.environ.get("JUDGEBENCH_CACHE_FSYNC", "0") not in ("", "0", "false") if fsync is None else fsync
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise CacheError(f"cannot create cache root {self.root}: {_oserr(e)}") from None
        if not self.root.is_dir():
            raise CacheError(f"cache root {self.root} is not a directory")
        self.hits = 0
        self.misses = 0
        self.puts = 0
        self.corrupt_seen = 0
        self.last_import_corrupt = 0
        self._warned: set[Path] = set()
        self.reasons: dict[Path, str] = {}  # why each entry found by a scan is unusable

    # -- paths ---------------------------------------------------------------
    def path_for(self, key: str) -> Path:
        if not isinstance(key, str) or not _KEY_RE.match(key):
            raise ValueError(f"not a cache key (64 lowercase hex chars): {key!r}")
        return self.root / key[:2] / f"{key}.json"

    def keys(self) -> Iterator[str]:
        """Keys of entry files present (not validated), in directory order."""
        for shard in sorted(self.root.iterdir()):
            if len(shard.name) != 2 or not shard.is_dir():
                continue
            for p in shard.iterdir():
                if p.suffix == ".json" and _KEY_RE.match(p.stem) and p.stem[:2] == shard.name:
                    yield p.stem

    # -- read ----------------------------------------------------------------
    def _load(self, key: str, path: Path | None = None) -> dict | None:
        """Validated payload, or None if absent; raises _Corrupt if present but invalid."""
        path = path or self.path_for(key)
        for attempt in range(2):
            try:
                data = path.read_bytes()
                break
            except (FileNotFoundError, NotADirectoryError):
                return None
            except OSError as e:
                if e.errno == errno.ESTALE and attempt == 0:  # NFS: entry replaced under us; reopen
                    continue
                raise CacheError(f"cannot read cache entry {path}: {_oserr(e)}") from None
        try:
            env = json.loads(data.decode("utf-8"))
            payload = env["payload"]
            ok = (
                isinstance(payload, dict)
                and env["sha256"] == _checksum(payload)
                and payload.get("key") == key
                and isinstance(payload.get("record"), dict)
            )
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            ok = False
        if not ok:
            raise _Corrupt(path)
        invalid = record_problem(payload)
        if invalid:
            raise _Corrupt(path, invalid)
        return payload

    def _report_corrupt(self, path: Path, reason: str | None = None) -> None:
        if path not in self._warned:
            self._warned.add(path)
            self.corrupt_seen += 1
            if reason:
                log.warning("invalid cache entry %s (%s); treated as a miss", path, reason)
            else:
                log.warning("corrupt cache entry %s (checksum/format mismatch); treated as a miss", path)

    def get(self, key: str) -> dict | None:
        """The stored record, or None on miss or corrupt entry (warned once per file).

        An unreadable entry (EACCES, EIO) raises CacheError: that is not a miss to pay for again.
        """
        try:
            payload = self._load(key)
        except _Corrupt as c:
            self._report_corrupt(c.path, c.reason)
            payload = None
        if payload is None:
            self.misses += 1
            return None
        self.hits += 1
        return payload["record"]

    def get_meta(self, key: str) -> dict | None:
        """The key parts stored with the entry (no hit/miss counting)."""
        try:
            payload = self._load(key)
        except _Corrupt:
            return None
        return payload["meta"] if payload else None

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        try:
            return self._load(key) is not None
        except _Corrupt:
            return False

    # -- write ---------------------------------------------------------------
    def put(self, key: str, record: dict, meta: dict | None = None) -> None:
        """Store ``record`` atomically before returning (and fsync'd, when the cache was opened with fsync)."""
        if not isinstance(record, dict):
            raise TypeError("record must be a dict")
        payload = {"key": key, "meta": dict(meta or {}), "record": record, "written_at": time.time()}
        # Round-trip once so the checksum is computed over what a reader will parse back.
        payload = json.loads(_canon(payload))
        self._write(self.path_for(key), {"sha256": _checksum(payload), "payload": payload})
        self._warned.discard(self.path_for(key))
        self.puts += 1
        STORED[str(self.root)] += 1

    def _write(self, path: Path, envelope: dict, fsync_dir: bool = True) -> None:
        data = _canon(envelope).encode("utf-8")
        tmp = path.parent / f".{path.stem[:16]}.{os.getpid()}.{secrets.token_hex(6)}{_TMP_SUFFIX}"
        try:
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                _fsync_dir(self.root)
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                if self.fsync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, path)
            if fsync_dir and self.fsync:
                _fsync_dir(path.parent)
        except OSError as e:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise CacheError(f"cannot write cache entry {path}: {_oserr(e)}") from None

    def check_writable(self) -> None:
        """Raise CacheError (naming the root) unless an entry could be written now: callers check before
        paying for answers they could not store (read-only mount, full disk, lost permissions)."""
        tmp = self.root / f".probe.{os.getpid()}.{secrets.token_hex(6)}{_TMP_SUFFIX}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            try:
                os.write(fd, b"{}")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as e:
            raise CacheError(f"cache {self.root} is not writable: {_oserr(e)}") from None
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass

    # -- maintenance ---------------------------------------------------------
    def _scan(self) -> Iterator[tuple[Path, dict | None]]:
        for key in sorted(self.keys()):
            path = self.path_for(key)
            try:
                payload = self._load(key, path)
            except _Corrupt as c:
                self.reasons[path] = c.reason or "checksum/format mismatch"
                yield path, None
                continue
            if payload is not None:  # None: removed since listing
                yield path, payload

    def stats(self) -> CacheStats:
        """Full scan: valid entries, their bytes, corrupt files, counts per backend/model."""
        n = size = bad = 0
        backends: Counter[str] = Counter()
        models: Counter[str] = Counter()
        for path, payload in self._scan():
            if payload is None:
                bad += 1
                continue
            n += 1
            try:
                size += path.stat().st_size
            except OSError:
                pass
            meta = payload.get("meta") or {}
            backends[str(meta.get("backend", "?"))] += 1
            models[str(meta.get("model", "?"))] += 1
        return CacheStats(n, size, bad, dict(sorted(backends.items())), dict(sorted(models.items())))

    def verify(self, remove_corrupt: bool = False) -> list[Path]:
        """Corrupt entry files (temp files are ignored); optionally delete them and stale temp files."""
        bad = [p for p, payload in self._scan() if payload is None]
        for p in bad:
            log.warning("corrupt cache entry %s", p)
            if remove_corrupt:
                p.unlink(missing_ok=True)
        if remove_corrupt:
            self.clean_temp()
        return bad

    def temp_files(self) -> list[Path]:
        return sorted(self.root.glob(f"??/.*{_TMP_SUFFIX}"))

    def clean_temp(self, max_age_s: float = STALE_TEMP_S) -> list[Path]:
        """Delete temp files left by killed writers, older than ``max_age_s`` (younger ones may be live)."""
        now = time.time()
        removed = []
        for p in self.temp_files():
            try:
                if now - p.stat().st_mtime >= max_age_s:
                    p.unlink()
                    removed.append(p)
            except FileNotFoundError:
                pass
        return removed

    # -- export / import -----------------------------------------------------
    def export(self, path: str | Path) -> int:
        """Write all valid entries, sorted by key, to one gzip'd JSONL file (byte-deterministic)."""
        path = Path(path)
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}{_TMP_SUFFIX}")
        n = 0
        try:
            with open(tmp, "wb") as raw:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                    for entry, payload in self._scan():
                        if payload is None:
                            log.warning("corrupt cache entry %s not exported", entry)
                            continue
                        env = {"sha256": _checksum(payload), "payload": payload}
                        gz.write((_canon(env) + "\n").encode("utf-8"))
                        n += 1
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(tmp, path)
        except OSError as e:
            tmp.unlink(missing_ok=True)
            raise CacheError(f"cannot export cache to {path}: {_oserr(e)}") from None
        return n

    def import_(self, path: str | Path, overwrite: bool = False) -> tuple[int, int]:
        """Add entries from an export; returns (added, skipped).

        Skipped = already present (unless ``overwrite``) + corrupt lines; the latter are
        warned with their line number and counted in ``self.last_import_corrupt``.
        """
        path = Path(path)
        added = skipped = corrupt = 0
        dirs: set[Path] = set()
        try:
            with gzip.open(path, "rb") as f:
                for lineno, line in enumerate(f, 1):
                    try:
                        env = json.loads(line.decode("utf-8"))
                        payload = env["payload"]
                        key = payload["key"]
                        ok = (
                            isinstance(key, str)
                            and _KEY_RE.match(key) is not None
                            and env["sha256"] == _checksum(payload)
                            and isinstance(payload.get("record"), dict)
                        )
                    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
                        ok = False
                    invalid = record_problem(payload) if ok else None
                    if not ok or invalid:
                        corrupt += 1
                        skipped += 1
                        if invalid:
                            log.warning("%s line %d: invalid entry skipped (%s)", path, lineno, invalid)
                        else:
                            log.warning("%s line %d: corrupt entry skipped", path, lineno)
                        continue
                    if not overwrite and key in self:
                        skipped += 1
                        continue
                    dest = self.path_for(key)
                    self._write(dest, {"sha256": env["sha256"], "payload": payload}, fsync_dir=False)
                    dirs.add(dest.parent)
                    added += 1
        except (OSError, EOFError) as e:
            msg = _oserr(e) if isinstance(e, OSError) and e.errno else str(e)
            raise CacheError(f"cannot import {path}: {msg} (added {added} before the error)") from None
        finally:
            for d in dirs:
                _fsync_dir(d)
            self.last_import_corrupt = corrupt
        return added, skipped


class _Corrupt(Exception):
    def __init__(self, path: Path, reason: str | None = None) -> None:
        super().__init__(str(path))
        self.path, self.reason = path, reason


def _fsync_dir(d: Path) -> None:
    """Make a rename/creation in ``d`` durable; some file systems refuse directory fsync (ignored)."""
    try:
        fd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EPERM):
            raise
    finally:
        os.close(fd)
