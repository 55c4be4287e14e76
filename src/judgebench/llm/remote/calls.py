"""Cached, concurrent API calls: the one loop every API component (judge, rewriter, PRP) shares.

An answer is written to the persistent cache before it is used, so a killed job loses only its
in-flight calls and a rerun of the same work sends nothing.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judgebench.cache.keys import call_key
from judgebench.cache.schema import api_problem
from judgebench.cache.store import CallCache
from judgebench.cache.writer import GroupWriter
from judgebench.llm.remote.api import APIBackend
from judgebench.llm.remote.call_results import CallFailed
from judgebench.progress import counter

log = logging.getLogger("judgebench")


@dataclass
class Call:
    key: str
    prompt: str


def api_call_key(backend: APIBackend, prompt_version: str, prompt: str, system: str | None) -> str:
    return call_key(
        backend=backend.backend,
        model=backend.model,
        prompt_version=prompt_version,
        system=system,
        prompt=prompt,
        params=backend.generation_params(),
    )


def run_cached(
    backend: APIBackend,
    cache: CallCache,
    calls: list[Call],
    *,
    meta: dict[str, Any],
    system: str | None = None,
    parse: Callable[[str], Any] | None = None,
    parse_attempts: int = 1,
    progress: bool = True,
    desc: str = "calls",
    unit: str = "pairs",
    reask_unparsed: bool = False,
    grades: bool = False,
) -> tuple[dict[str, dict], dict[str, tuple[str, str]]]:
    """Records for every call (from the cache or the API) and the failures (key -> (kind, message)).

    With `parse`, an answer it maps to None is re-asked up to parse_attempts times, counted as
    error kind "unparsable", and stored with parsed=None when it never parses (a model's answer, kept
    so a rerun does not pay for it again; reask_unparsed=True asks such pairs again). A cached record that
    is not a usable answer (fields missing or of the wrong type; with `grades`, a parsed label outside 0-3)
    is warned and asked again.
    """
    records: dict[str, dict] = {}
    todo = []
    for c in calls:
        rec = cache.get(c.key)
        invalid = api_problem(rec, judge=grades) if rec is not None else None
        if invalid:
            log.warning("invalid cache entry %s (%s); asked again", cache.path_for(c.key), invalid)
            rec = None
        if rec is None or (reask_unparsed and parse is not None and rec.get("parsed") is None):
            todo.append(c)
        else:
            records[c.key] = rec
    failures: dict[str, tuple[str, str]] = {}
    bar = counter(desc, len(records) + len(todo), unit, enabled=progress, cached=len(records))
    try:
        if todo:
            cache.check_writable([c.key for c in todo])  # an answer that cannot be stored must not be paid for
            asyncio.run(_call_all(backend, cache, todo, records, failures, meta, system, parse, parse_attempts, bar))
    finally:
        bar.close()
    return records, failures


async def _call_all(backend, cache, todo, records, failures, meta, system, parse, parse_attempts, bar) -> None:
    # A call holds one of max_concurrency slots from its first request until its answer is stored, so a killed
    # job loses at most max_concurrency answers (sent, or received and not yet durable), never a backlog.
    slots = asyncio.Semaphore(backend.max_concurrency)
    stop: list[BaseException] = []  # set when an answer cannot be stored (full disk): ask nothing more
    async with backend, GroupWriter(cache) as store:

        async def one(c: Call) -> None:
            async with slots:
                if stop:
                    return
                try:
                    rec = await _ask(backend, c, system, parse, parse_attempts)
                except CallFailed as e:
                    failures[c.key] = (e.kind, str(e))
                else:
                    # durable before anyone uses it; written by the writer thread so the event loop keeps sending
                    try:
                        await store.put(c.key, rec, meta)
                    except BaseException as e:
                        stop.append(e)
                        raise
                    records[c.key] = rec
                finally:
                    bar.update(1)

        tasks = [asyncio.ensure_future(one(c)) for c in todo]
        try:
            await asyncio.gather(*tasks)
        except BaseException:  # the first error ends the batch: cancel the rest before they send anything
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise


async def _ask(backend: APIBackend, c: Call, system, parse, parse_attempts) -> dict:
    n_in = n_out = n_think = attempts = 0
    parsed = None
    for attempt in range(max(1, parse_attempts if parse else 1)):
        if attempt:
            backend.stats.reasks += 1
        try:
            done = await backend.complete(c.prompt, system)
        except CallFailed:
            backend.stats.spent_unused(n_in, n_out, n_think)  # the earlier, unparsable answers were paid for
            raise
        n_in, n_out, attempts = n_in + done.input_tokens, n_out + done.output_tokens, attempts + done.attempts
        n_think += done.thinking_tokens
        if parse is None:
            break
        parsed = parse(done.text)
        if parsed is not None:
            break
        backend.stats.errors["unparsable"] += 1
    return {
        "text": done.text,
        "parsed": parsed,
        "input_tokens": n_in,
        "output_tokens": n_out,
        "thinking_tokens": n_think,
        "latency_s": done.latency_s,
        "attempts": attempts,
        "time": time.time(),
    }
