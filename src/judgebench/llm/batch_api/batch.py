"""Batch mode (``judge.backend.mode=batch``): every uncached prompt of a label set goes to the provider's batch
API at once, at batch prices, instead of one request per prompt.

What it shares with online mode is the call cache: a batch's answers are stored under the same keys, so an
online run reuses them and prompts already cached are never submitted. A batch's id is saved under
``cache_dir/batches`` as soon as it is created, before any waiting, so a killed or restarted job polls the
same batch again instead of paying for it twice (``batch_store.py``: the folder is probed before anything is
submitted). Every answer a batch gives goes into the call cache, whichever run resumed it: a run over half a
saved batch's prompts stores the other half too, so the run that needs them pays nothing again. Failed lines
and expired batches leave their prompts uncached: they are reported as failed pairs, like online failures,
and submitted again by the next run. The SDK-specific part (upload, poll, download) is a
:class:`BatchProvider` per backend.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tenacity import AsyncRetrying, retry_if_exception_type, stop_after_attempt
from tqdm.auto import tqdm

from judgebench.cache.keys import is_key
from judgebench.cache.schema import api_problem
from judgebench.cache.store import CallCache
from judgebench.exceptions import BackendUnreachable, BatchNotDone, ConfigError
from judgebench.llm.batch_api.batch_provider import BatchLine, BatchProvider, LineAnswer, LineError
from judgebench.llm.batch_api.batch_store import BatchStore
from judgebench.llm.remote.api import APIBackend
from judgebench.llm.remote.paced_calls import CONNECT_FAILS
from judgebench.llm.remote.provider_errors import PermanentError, TransientError
from judgebench.secrets import mask_url

log = logging.getLogger("judgebench")
T = TypeVar("T")

TERMINAL = ("succeeded", "failed", "expired", "cancelled")
"""Provider-neutral end states; anything else is "running"."""
LOG_EVERY_S = 300.0
"""Without a progress bar, a waiting job logs its batch's state this often."""


def provider_for(backend: APIBackend, system: str | None) -> BatchProvider:
    if backend.backend == "openai":
        from judgebench.llm.batch_api.batch_openai import OpenAIBatches

        return OpenAIBatches(backend, system)
    if backend.backend == "gemini":
        from judgebench.llm.batch_api.batch_gemini import GeminiBatches

        return GeminiBatches(backend, system)
    raise ConfigError(f"judge.backend.mode=batch: the {backend.backend} backend has no batch API; use mode=online")


def split_lines(
    lines: list[BatchLine], max_requests: int, max_bytes: int, size: Callable[[BatchLine], int]
) -> list[list[BatchLine]]:
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


_sleep = asyncio.sleep  # how the retries wait (tests count the waits instead)


async def with_retries(backend: APIBackend, what: str, fn: Callable[[], Awaitable[T]]) -> T:
    """A batch API request, retried on transient errors like online calls are (Retry-After, backoff; at most
    ``max_retries`` retries; ``CONNECT_FAILS`` failures of which the last cannot connect: the server is unreachable).
    These requests are not counted in stats.requests: a batch counts one request per line, what is paid for."""
    async for attempt in AsyncRetrying(
        stop=stop_after_attempt(backend.max_retries + 1),
        wait=lambda state: backend._backoff(state.outcome.exception(), state.attempt_number),
        retry=retry_if_exception_type(TransientError),
        reraise=True,
        sleep=_sleep,
    ):
        with attempt:
            try:
                return await fn()
            except TransientError as e:
                backend.stats.errors[e.kind] += 1
                failures = attempt.retry_state.attempt_number
                if e.kind == "connection" and failures >= CONNECT_FAILS:
                    raise BackendUnreachable(
                        f"cannot connect to {mask_url(backend.endpoint())} ({e}; {failures} attempts "
                        f"to {what}): is the server running and the URL right?"
                    ) from None
                raise
    raise AssertionError("unreachable: tenacity returns or raises")  # pragma: no cover


def pending_calls(
    cache: CallCache, calls: list, parse: Callable | None, reask_unparsed: bool, grades: bool
) -> tuple[dict[str, dict], list]:
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


@dataclass
class BatchJob:
    """One batch this run waits for: submitted now, or resumed from its saved id."""

    path: Path  # its saved id
    batch_id: str
    keys: list[str] | None  # every prompt in the batch (None: a hand-written id file; known from the results)
    wanted: set[str]  # the ones this run asked for: reported as its records or failures
    meta: dict[str, Any]  # what the cache stores with each of its answers


def run_batch(
    backend: APIBackend,
    cache: CallCache,
    calls: list,
    *,
    meta: dict[str, Any],
    state_dir: str | Path,
    system: str | None = None,
    parse: Callable[[str], Any] | None = None,
    progress: bool = True,
    desc: str = "batch",
    reask_unparsed: bool = False,
    grades: bool = False,
) -> tuple[dict[str, dict], dict[str, tuple[str, str]]]:
    """Records for every call (cached, or from a batch now) and the failures (key -> (kind, message)): the
    same contract as :func:`judgebench.llm.remote.calls.run_cached`, one batch job per provider limit."""
    records, todo = pending_calls(cache, calls, parse, reask_unparsed, grades)
    failures: dict[str, tuple[str, str]] = {}
    if todo:
        store = BatchStore(state_dir)
        cache.check_writable([c.key for c in todo])  # an answer that cannot be stored must not be paid for,
        store.check_writable()  # nor a batch whose id cannot be saved
        asyncio.run(
            _judge_in_batches(backend, cache, todo, records, failures, meta, store, system, parse, progress, desc)
        )
    return records, failures


async def _resume_saved(backend, provider, store: BatchStore, prompts: dict[str, str], meta) -> list[BatchJob]:
    """The saved batches holding prompts of this run, each polled once: a batch the provider no longer has is
    forgotten (its prompts are submitted again); one it cannot answer about now stops the job, its id kept."""
    jobs = []
    for saved in store.open_batches(set(prompts), backend.backend):
        try:
            await with_retries(backend, "poll a saved batch", lambda: provider.poll(saved.batch_id))
        except PermanentError as e:  # gone (another account, server, or deleted): submit its lines anew
            log.warning(
                "saved batch %s (%s) cannot be polled (%s); its prompts are submitted again",
                saved.batch_id,
                saved.path,
                e,
            )
            saved.path.unlink(missing_ok=True)
            continue
        except TransientError as e:
            raise BatchNotDone(
                f"saved batch {saved.batch_id} ({backend.backend}) could not be polled ({e}); its id is "
                f"kept in {saved.path}: run again later to resume it (nothing is paid twice)"
            ) from None
        wanted = set(prompts) if saved.keys is None else {k for k in saved.keys if k in prompts}
        log.info(
            "resuming batch %s (%s prompts, %d of them asked for now; saved in %s)",
            saved.batch_id,
            "?" if saved.keys is None else len(saved.keys),
            len(wanted),
            saved.path,
        )
        jobs.append(BatchJob(saved.path, saved.batch_id, saved.keys, wanted, saved.meta or meta))
    return jobs


async def _judge_in_batches(backend, cache, todo, records, failures, meta, store, system, parse, progress, desc):
    prompts = {c.key: c.prompt for c in todo}
    async with backend:
        provider = provider_for(backend, system)
        jobs = await _resume_saved(backend, provider, store, prompts, meta)
        unlisted = [j for j in jobs if j.keys is None]
        if unlisted:  # written by hand: which prompts it holds shows only in its results, so wait for it first
            await _wait_all(backend, provider, cache, parse, unlisted, records, failures, progress, desc)
            jobs = [j for j in jobs if j.keys is not None]
        for job in jobs:
            for k in job.wanted:
                prompts.pop(k, None)
        for k in list(prompts):
            if k in records or k in failures:
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
                raise ConfigError(
                    f"{backend.backend} at {mask_url(backend.endpoint())} refused a batch of "
                    f"{len(chunk)} prompts ({e}); judge.backend.mode=online works without the "
                    "batch API"
                ) from None
            keys = [line.key for line in chunk]
            backend.stats.batches += 1
            backend.stats.requests += len(chunk)
            path = store.save(batch_id, backend, keys, meta)  # before waiting: a rerun resumes this batch
            log.info(
                "%s: submitted batch %s (%d prompts; its id is saved in %s, a rerun resumes it)",
                desc,
                batch_id,
                len(chunk),
                path,
            )
            jobs.append(BatchJob(path, batch_id, keys, set(keys), meta))
        await _wait_all(backend, provider, cache, parse, jobs, records, failures, progress, desc)


async def _wait_all(backend, provider, cache, parse, jobs, records, failures, progress, desc) -> None:
    bar = tqdm(
        total=sum(len(j.keys or ()) for j in jobs),
        desc=f"{desc} (batch)",
        unit="prompt",
        disable=not progress or not sys.stderr.isatty(),
    )  # in a log file: the periodic log line
    try:
        await asyncio.gather(
            *(_wait_and_store(backend, provider, cache, parse, job, records, failures, bar) for job in jobs)
        )
    finally:
        bar.close()


async def _wait_and_store(backend, provider, cache, parse, job, records, failures, bar) -> None:
    try:
        await _wait_and_store_once(backend, provider, cache, parse, job, records, failures, bar)
    except (TransientError, PermanentError) as e:
        raise BatchNotDone(
            f"batch {job.batch_id} could not be polled or downloaded ({e}); its id is saved in {job.path}: "
            "run again to resume it (nothing is paid twice)"
        ) from None


async def _wait_and_store_once(backend, provider, cache, parse, job, records, failures, bar) -> None:
    path, batch_id = job.path, job.batch_id
    size = len(job.keys) if job.keys is not None else None
    s = backend.batch
    started, shown, logged = time.monotonic(), 0, time.monotonic()
    while True:
        status = await with_retries(backend, f"poll batch {batch_id}", lambda: provider.poll(batch_id))
        if size is not None:
            done = size if status.state in TERMINAL else min(status.done or 0, size)
            bar.update(done - shown)
            shown = done
        bar.set_postfix_str(f"{batch_id}: {status.provider_state}", refresh=True)
        if status.state in TERMINAL:
            break
        waited = time.monotonic() - started
        if bar.disable and time.monotonic() - logged >= LOG_EVERY_S:  # no bar (progress=false): a log line
            logged = time.monotonic()
            log.info(
                "batch %s: %s after %.0f s (%s of %s prompts done)",
                batch_id,
                status.provider_state,
                waited,
                "?" if status.done is None else status.done,
                "?" if size is None else size,
            )
        if waited >= s.timeout_s:
            raise BatchNotDone(
                f"batch {batch_id} is still {status.provider_state} after {waited:.0f}s "
                f"(judge.backend.batch.timeout_s={s.timeout_s:g}); its id is saved in {path}: "
                "run again to resume waiting for it (nothing is paid twice)"
            )
        await asyncio.sleep(min(s.poll_interval_s, max(0.0, s.timeout_s - waited)))
    results = await with_retries(backend, f"download batch {batch_id}", lambda: provider.results(batch_id))
    await _store_results(backend, cache, parse, job, status, results, records, failures, time.monotonic() - started)
    if job.keys and results and not set(job.keys) & set(results):
        log.warning(
            "batch %s answered none of the %d prompts its id file %s lists (the file names another batch?): "
            "its %d answers are stored; the listed prompts are submitted again, and the batch they were "
            "submitted in, if any, is left running",
            batch_id,
            len(job.keys),
            path,
            len(results),
        )
    try:
        path.unlink(missing_ok=True)  # answers stored, failures reported: the next run submits only those again
    except OSError as e:
        log.warning(
            "batch %s is done and its answers stored, but its id file %s could not be removed (%s)", batch_id, path, e
        )


async def _store_results(backend, cache, parse, job, status, results, records, failures, latency) -> None:
    """Every answer the batch gave goes into the call cache, whoever asked for it (a batch resumed by a run over
    part of its prompts pays for none of them twice); records and failures are reported for the wanted ones."""
    missing_kind = {
        "succeeded": "missing",
        "failed": "batch_failed",
        "expired": "batch_expired",
        "cancelled": "batch_cancelled",
    }[status.state]
    answers, mine = [], {}
    for key, res in results.items():
        if not isinstance(res, LineAnswer) or not is_key(key):
            continue
        parsed = parse(res.text) if parse else None
        if parse is not None and parsed is None and key in job.wanted:
            backend.stats.errors["unparsable"] += 1
        rec = {
            "text": res.text,
            "parsed": parsed,
            "input_tokens": res.input_tokens,
            "output_tokens": res.output_tokens,
            "thinking_tokens": res.thinking_tokens,
            "latency_s": latency,
            "attempts": 1,
            "time": time.time(),
            "batch_id": job.batch_id,
        }
        answers.append((key, rec, job.meta))
        if key in job.wanted:
            mine[key] = rec
    await asyncio.to_thread(cache.put_many, answers)  # one group, stored before any of them is used
    records.update(mine)
    backend.stats.ok += len(mine)
    for key in job.wanted - set(mine):
        res = results.get(key)
        if job.keys is None and res is None:
            continue  # a hand-written batch without this prompt: it is submitted like any other
        err = (
            res
            if isinstance(res, LineError)
            else LineError(
                missing_kind,
                f"batch {job.batch_id} ended {status.provider_state} without this line"
                + (f": {status.message}" if status.message else ""),
            )
        )
        backend.stats.errors[err.kind] += 1
        failures[key] = (err.kind, f"{err.kind}: {err.message} (batch {job.batch_id})")
