"""Batch mode (``judge.backend.mode=batch``): every uncached prompt of a label set goes to the provider's batch
API at once, at batch prices, instead of one request per prompt.

What it shares with online mode is the call cache: a batch's answers are stored under the same keys, so an
online run reuses them and prompts already cached are never submitted. A batch's id is saved under
``cache_dir/batches`` as soon as it is created, before any waiting, so a killed or restarted job polls the
same batch again instead of paying for it twice. Failed lines and expired batches leave their prompts
uncached: they are reported as failed pairs, like online failures, and submitted again by the next run.
The SDK-specific part (upload, poll, download) is a :class:`BatchProvider` per backend.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

from judgebench.cache.store import CallCache
from judgebench.cache.schema import api_problem
from judgebench.exceptions import BackendUnreachable, BatchNotDone, ConfigError
from judgebench.llm.api import CONNECT_FAILS, APIBackend, PermanentError, TransientError
from judgebench.masking import mask_url

log = logging.getLogger("judgebench")
T = TypeVar("T")

TERMINAL = ("succeeded", "failed", "expired", "cancelled")
"""Provider-neutral end states; anything else is "running"."""
LOG_EVERY_S = 300.0
"""Without a progress bar, a waiting job logs its batch's state this often."""


@dataclass
class BatchLine:
    key: str  # the call-cache key, also the line's custom_id / metadata key
    prompt: str


@dataclass
class LineAnswer:
    text: str
    input_tokens: int
    output_tokens: int
    thinking_tokens: int = 0


@dataclass
class LineError:
    kind: str
    message: str


@dataclass
class BatchStatus:
    state: str  # running | succeeded | failed | expired | cancelled
    provider_state: str  # as the provider says it (in_progress, JOB_STATE_RUNNING, ...)
    done: int | None = None  # lines finished so far, where the provider tells
    message: str = ""


class BatchProvider(ABC):
    """One provider's batch API, through the backend's open SDK client."""

    def __init__(self, backend: APIBackend, system: str | None) -> None:
        self.backend, self.system = backend, system

    @abstractmethod
    def line_bytes(self, line: BatchLine) -> int:
        """The line's size in the upload, for the provider's per-batch byte limit."""

    @abstractmethod
    async def submit(self, lines: list[BatchLine]) -> str:
        """Creates one batch job of ``lines``; returns its id."""

    @abstractmethod
    async def poll(self, batch_id: str) -> BatchStatus: ...

    @abstractmethod
    async def results(self, batch_id: str) -> dict[str, LineAnswer | LineError]:
        """The answered and the failed lines of a finished batch, by key (lines never run are absent)."""


def provider_for(backend: APIBackend, system: str | None) -> BatchProvider:
    if backend.backend == "openai":
        from judgebench.llm.batch_openai import OpenAIBatches

        return OpenAIBatches(backend, system)
    if backend.backend == "gemini":
        from judgebench.llm.batch_gemini import GeminiBatches

        return GeminiBatches(backend, system)
    raise ConfigError(f"judge.backend.mode=batch: the {backend.backend} backend has no batch API; use mode=online")


def split_lines(lines: list[BatchLine], max_requests: int, max_bytes: int,
                size: Callable[[BatchLine], int]) -> list[list[BatchLine]]:
    """Consecutive chunks of at most max_requests lines and max_bytes bytes (a larger line goes alone)."""
    chunks: list[list[BatchLine]] = []
    current: list[BatchLine] = []
    used = 0
    for line in lines:
        n = size(line)
        if current and (len(current) >= max_requests or used + n > max_bytes):
            chunks.append(current)
            current, used = [], 0
        current.append(line)
        used += n
    if current:
        chunks.append(current)
    return chunks


class BatchStore:
    """The open batches of a cache dir: one JSON file per batch, named by the digest of its prompt keys."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, keys: list[str]) -> Path:
        return self.root / f"batch-{hashlib.sha256(chr(10).join(sorted(keys)).encode()).hexdigest()[:32]}.json"

    def save(self, batch_id: str, backend: APIBackend, keys: list[str]) -> Path:
        """Durable (written, fsynced, renamed) before the caller waits on the batch."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.path(keys)
        state = {"batch_id": batch_id, "backend": backend.backend, "model": backend.model, "created": time.time(),
                 "keys": sorted(keys)}
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        return path

    def open_batches(self, wanted: set[str]) -> list[tuple[Path, dict[str, Any]]]:
        """Saved batches holding any wanted key (a prompt answered since is simply not stored again)."""
        out = []
        for path in sorted(self.root.glob("batch-*.json")) if self.root.is_dir() else []:
            try:
                state = json.loads(path.read_text(encoding="utf-8"))
                keys, batch_id = state["keys"], str(state["batch_id"])
            except (OSError, ValueError, KeyError, TypeError) as e:
                log.warning("batch state %s is unreadable (%s); ignored", path, e)
                continue
            if wanted.intersection(keys):
                out.append((path, {**state, "batch_id": batch_id}))
        return out


async def with_retries(backend: APIBackend, what: str, fn: Callable[[], Awaitable[T]]) -> T:
    """A batch API request, retried on transient errors like online calls are (Retry-After, backoff). These
    requests are not counted in stats.requests: a batch counts one request per line, what is paid for."""
    failures = 0
    while True:
        try:
            return await fn()
        except TransientError as e:
            failures += 1
            backend.stats.errors[e.kind] += 1
            if e.kind == "connection" and failures >= CONNECT_FAILS:
                raise BackendUnreachable(f"cannot connect to {mask_url(backend.endpoint())} ({e}; {failures} attempts "
                                         f"to {what}): is the server running and the URL right?") from None
            if failures > backend.max_retries:
                raise
            await asyncio.sleep(backend._backoff(e, failures))


def pending_calls(cache: CallCache, calls: list, parse: Callable | None, reask_unparsed: bool,
                  grades: bool) -> tuple[dict[str, dict], list]:
    """Cached records, and the calls still to make (not cached, unusable, or unparsed and to be asked again)."""
    records: dict[str, dict] = {}
    todo, seen = [], set()
    for c in calls:
        if c.key in seen:
            continue
        seen.add(c.key)
        rec = cache.get(c.key)
        if rec is not None and api_problem(rec, judge=grades):
            log.warning("invalid cache entry %s (%s); asked again", c.key, api_problem(rec, judge=grades))
            rec = None
        if rec is None or (reask_unparsed and parse is not None and rec.get("parsed") is None):
            todo.append(c)
        else:
            records[c.key] = rec
    return records, todo


def run_batch(backend: APIBackend, cache: CallCache, calls: list, *, meta: dict[str, Any], state_dir: str | Path,
              system: str | None = None, parse: Callable[[str], Any] | None = None, progress: bool = True,
              desc: str = "batch", reask_unparsed: bool = False, grades: bool = False,
              ) -> tuple[dict[str, dict], dict[str, tuple[str, str]]]:
    """Records for every call (cached, or from a batch now) and the failures (key -> (kind, message)): the
    same contract as :func:`judgebench.llm.calls.run_cached`, one batch job per provider limit."""
    records, todo = pending_calls(cache, calls, parse, reask_unparsed, grades)
    failures: dict[str, tuple[str, str]] = {}
    if todo:
        cache.check_writable()  # an answer that cannot be stored must not be paid for
        asyncio.run(_judge_in_batches(backend, cache, todo, records, failures, meta, BatchStore(state_dir),
                                      system, parse, progress, desc))
    return records, failures


async def _judge_in_batches(backend, cache, todo, records, failures, meta, store, system, parse, progress, desc):
    prompts = {c.key: c.prompt for c in todo}
    async with backend:
        provider = provider_for(backend, system)
        jobs: list[tuple[Path, str, list[str]]] = []
        for path, state in store.open_batches(set(prompts)):
            keys = [k for k in state["keys"] if k in prompts]
            try:
                await with_retries(backend, "poll a saved batch", lambda: provider.poll(state["batch_id"]))
            except PermanentError as e:  # gone (another account, server, or deleted): submit its lines anew
                log.warning("saved batch %s (%s) cannot be polled (%s); its prompts are submitted again",
                            state["batch_id"], path, e)
                path.unlink(missing_ok=True)
                continue
            log.info("%s: resuming batch %s (%d prompts, saved in %s)", desc, state["batch_id"], len(keys), path)
            jobs.append((path, state["batch_id"], keys))
            for k in keys:
                prompts.pop(k)
        lines = [BatchLine(k, p) for k, p in prompts.items()]
        s = backend.batch
        for chunk in split_lines(lines, s.max_requests, s.max_bytes, provider.line_bytes):
            try:
                batch_id = await with_retries(backend, "submit a batch", lambda: provider.submit(chunk))
            except TransientError as e:  # nothing was paid: its prompts are failed pairs, submitted next run
                log.warning("%s: a batch of %d prompts could not be submitted (%s)", desc, len(chunk), e)
                failures.update({line.key: (e.kind, f"submitting the batch: {e}") for line in chunk})
                continue
            except PermanentError as e:
                raise ConfigError(f"{backend.backend} at {mask_url(backend.endpoint())} refused a batch of "
                                  f"{len(chunk)} prompts ({e}); judge.backend.mode=online works without the "
                                  "batch API") from None
            keys = [line.key for line in chunk]
            path = store.save(batch_id, backend, keys)  # before waiting: a rerun resumes this batch
            backend.stats.batches += 1
            backend.stats.requests += len(chunk)
            log.info("%s: submitted batch %s (%d prompts; its id is saved in %s, a rerun resumes it)",
                     desc, batch_id, len(chunk), path)
            jobs.append((path, batch_id, keys))
        bar = tqdm(total=sum(len(k) for _, _, k in jobs), desc=f"{desc} (batch)", unit="prompt",
                   disable=not progress or not sys.stderr.isatty())  # in a log file: the periodic log line
        try:
            await asyncio.gather(*(_wait_and_store(backend, provider, cache, meta, parse, job, records, failures, bar)
                                   for job in jobs))
        finally:
            bar.close()


async def _wait_and_store(backend, provider, cache, meta, parse, job, records, failures, bar) -> None:
    path, batch_id, keys = job
    try:
        await _wait_and_store_once(backend, provider, cache, meta, parse, job, records, failures, bar)
    except (TransientError, PermanentError) as e:
        raise BatchNotDone(f"batch {batch_id} could not be polled or downloaded ({e}); its id is saved in {path}: "
                           "run again to resume it (nothing is paid twice)") from None


async def _wait_and_store_once(backend, provider, cache, meta, parse, job, records, failures, bar) -> None:
    path, batch_id, keys = job
    s = backend.batch
    started, shown, logged = time.monotonic(), 0, time.monotonic()
    while True:
        status = await with_retries(backend, f"poll batch {batch_id}", lambda: provider.poll(batch_id))
        done = len(keys) if status.state in TERMINAL else min(status.done or 0, len(keys))
        bar.update(done - shown)
        shown = done
        bar.set_postfix_str(f"{batch_id}: {status.provider_state}", refresh=True)
        if status.state in TERMINAL:
            break
        waited = time.monotonic() - started
        if bar.disable and time.monotonic() - logged >= LOG_EVERY_S:  # no bar (progress=false): a log line
            logged = time.monotonic()
            log.info("batch %s: %s after %.0f s (%s of %d prompts done)", batch_id, status.provider_state, waited,
                     "?" if status.done is None else done, len(keys))
        if waited >= s.timeout_s:
            raise BatchNotDone(f"batch {batch_id} is still {status.provider_state} after {waited:.0f}s "
                               f"(judge.backend.batch.timeout_s={s.timeout_s:g}); its id is saved in {path}: "
                               "run again to resume waiting for it (nothing is paid twice)")
        await asyncio.sleep(min(s.poll_interval_s, max(0.0, s.timeout_s - waited)))
    results = await with_retries(backend, f"download batch {batch_id}", lambda: provider.results(batch_id))
    latency = time.monotonic() - started
    missing_kind = {"succeeded": "missing", "failed": "batch_failed", "expired": "batch_expired",
                    "cancelled": "batch_cancelled"}[status.state]
    for key in keys:
        res = results.get(key)
        if isinstance(res, LineAnswer):
            parsed = parse(res.text) if parse else None
            if parse is not None and parsed is None:
                backend.stats.errors["unparsable"] += 1
            rec = {"text": res.text, "parsed": parsed, "input_tokens": res.input_tokens,
                   "output_tokens": res.output_tokens, "thinking_tokens": res.thinking_tokens, "latency_s": latency, "attempts": 1, "time": time.time(),
                   "batch_id": batch_id}
            await asyncio.to_thread(cache.put, key, rec, meta)
            records[key] = rec
            backend.stats.ok += 1
        else:
            err = res if isinstance(res, LineError) else LineError(
                missing_kind, f"batch {batch_id} ended {status.provider_state} without this line"
                + (f": {status.message}" if status.message else ""))
            backend.stats.errors[err.kind] += 1
            failures[key] = (err.kind, f"{err.kind}: {err.message} (batch {batch_id})")
    path.unlink(missing_ok=True)  # answers stored, failures reported: the next run submits only those again
