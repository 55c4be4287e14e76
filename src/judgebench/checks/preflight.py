"""Before a job rewrites, ranks or judges: one free request to each API backend it will use.

A cell whose judge names a retired model, lacks its key or points at a server that is not there would
otherwise fail one request at a time after the ranking was done, GPU hours included, and end at
``max_failed_share``. The preflight asks each backend's server about its model once (Gemini ``models.get``,
OpenAI-compatible ``models.retrieve``, falling back to ``models.list`` for servers without the former),
which covers the model id, the key and the server, and turns each problem into one ``judgebench: error:``
line (exit 2) before anything is spent. Retired Gemini ids (llm/remote/gemini_models.py) are refused without a
request, naming what to use instead. Each (backend kind, URL, model) is checked once per process, so a
multirun in one process asks once. Local models (transformers) and file judges have nothing to check.

The cache decides whether the network is needed: a backend whose every answer the cell needs is already in
the call cache is not checked (the cell sends nothing and spends nothing, so a finished grid reruns
offline), while a backend with even one call to make is, and a retired model never passes then. Where the
calls are not known before the work, the backend is always checked: an API ranker (PRP's sliding and sort
variants ask according to earlier answers) and the content-bias job (three judgings of texts it makes).
A dry run does not: it is offline (no key, no request), and checks/offline_checks.py lists what it leaves unchecked.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from judgebench.exceptions import BackendRefused, BackendUnreachable, ConfigError
from judgebench.llm.remote.api import APIBackend
from judgebench.llm.remote.gemini_models import refuse_retired
from judgebench.llm.remote.paced_calls import root_cause
from judgebench.llm.remote.provider_errors import PermanentError, TransientError, gemini_errors, openai_errors
from judgebench.secrets import mask_url

log = logging.getLogger("judgebench")

TIMEOUT_S = 15.0  # one lookup; a server that cannot answer a model lookup in this time is not usable
ATTEMPTS = 3  # for 429 / 5xx / timeouts, after which a busy server is let through with a warning
_PASSED: set[tuple[str, str, str]] = set()  # (kind, URL, model) checked in this process


def api_backends(**parts: Any) -> list[tuple[str, APIBackend]]:
    """(role, backend) of every part (judge=..., ranker=..., rewriter=...) that calls an API."""
    return [
        (role, part.backend) for role, part in parts.items() if isinstance(getattr(part, "backend", None), APIBackend)
    ]


def check(backends: list[tuple[str, APIBackend]]) -> None:
    for role, backend in backends:
        check_backend(role, backend)


def check_cell(dataset, judge, rewriter, ranker) -> None:
    """A grid cell: the rewriter and the judge when they have calls to make, an API ranker always."""
    backends = api_backends(judge=judge, rewriter=rewriter, ranker=ranker)
    if backends:
        calling = _roles_calling(dataset, judge, rewriter)
        check([(role, b) for role, b in backends if role == "ranker" or role in calling])


def check_labels(dataset, judge) -> None:
    """A labels-only job: the judge, when the label set on the original texts has calls to make."""
    backends = api_backends(judge=judge)
    plan = judge.plan(dataset.label_set()[["query_id", "doc_id"]], dataset, dataset.corpus) if backends else None
    if plan is not None and (plan.to_call or plan.in_batches or plan.unknown_batches):  # a saved batch is polled too
        check(backends)


def _roles_calling(dataset, judge, rewriter) -> set[str]:
    """Which of rewriter and judge have calls to make, by the cache (the same plan a dry run prints)."""
    texts, pending = rewriter.plan(dataset) if hasattr(rewriter, "plan") else (dataset.corpus, {})
    roles = {"rewriter"} if pending else set()
    if hasattr(judge, "plan"):
        pairs = dataset.label_set()[["query_id", "doc_id"]]
        waiting = pairs["doc_id"].isin(set(pending))  # judged on a rewrite still to make: a call to make
        plan = None if waiting.any() else judge.plan(pairs[~waiting], dataset, texts)
        if plan is None or plan.to_call or plan.in_batches or plan.unknown_batches:  # a saved batch is polled too
            roles.add("judge")
    return roles


def check_backend(role: str, backend: APIBackend) -> None:
    """One line (a UserError) when the backend cannot work; nothing when it can, or was checked before."""
    url = backend.endpoint()
    ident = (backend.backend, url, backend.model)
    if ident in _PASSED:
        return
    key = backend.api_key()  # a missing key: ConfigError naming the variables
    if backend.backend == "openai":
        backend.client_base_url()  # a URL with credentials: one line before any request
    where = f"{role}.backend.model={backend.model}"
    refuse_retired(role, backend.backend, backend.model)
    started = time.perf_counter()
    info = asyncio.run(_lookup(role, backend, key, where))
    limit = info.get("output_token_limit")
    if limit and backend.request_max_output_tokens > limit:
        raise ConfigError(
            f"{role}.backend.max_output_tokens={backend.max_output_tokens}: with thinking "
            f"({backend.thinking_allowance} tokens) a request asks for {backend.request_max_output_tokens} "
            f"output tokens, above {backend.model}'s limit of {limit}; lower max_output_tokens or thinking"
        )
    if info.get("thinking") is False and backend.thinking_config:
        raise ConfigError(
            f"{role}.backend.thinking={backend.thinking}: {backend.model} does not think (its model "
            "description says so); set thinking=off"
        )
    _PASSED.add(ident)
    log.info(
        "preflight: %s %s at %s answers (%.2fs)",
        backend.backend,
        backend.model,
        mask_url(url),
        time.perf_counter() - started,
    )


async def _lookup(role: str, backend: APIBackend, key: str, where: str) -> dict:
    """The model's description from its server; retries 429 / 5xx / timeouts a few times, then lets a busy
    server through with a warning (the job's own retries take over)."""
    url = mask_url(backend.endpoint())
    lookup = _gemini if backend.backend == "gemini" else _openai
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return await lookup(backend, key)
        except PermanentError as e:
            raise _refused(role, backend, where, url, e) from None
        except TransientError as e:
            if e.kind == "connection":
                raise BackendUnreachable(
                    f"cannot connect to {url} ({root_cause(e)}): is the server running and the URL right "
                    f"({role}.base_url{', OPENAI_BASE_URL' if backend.backend == 'openai' else ''})?"
                ) from None
            if e.kind == "timeout" and attempt == ATTEMPTS:
                raise BackendUnreachable(
                    f"no answer from {url} within {TIMEOUT_S:g}s ({ATTEMPTS} attempts) to a model "
                    f"lookup: is the server up and the URL right ({role}.base_url)?"
                ) from None
            if attempt == ATTEMPTS:
                log.warning(
                    "preflight: %s %s at %s: %s after %d attempts; going on (the job retries on its own)",
                    backend.backend,
                    backend.model,
                    url,
                    e,
                    attempt,
                )
                return {}
            await asyncio.sleep(min(10.0, e.retry_after if e.retry_after is not None else 0.5 * 2**attempt))
    return {}


def _refused(role: str, backend: APIBackend, where: str, url: str, e: PermanentError) -> BackendRefused:
    message = str(e).split(": ", 1)[-1][:240]
    if e.kind == "404":
        return BackendRefused(f"{where}: {url} has no such model (404 NOT_FOUND: {message}); check the model name")
    env = next((n for n in backend.key_envs if os.environ.get(n)), None)
    if e.kind in ("400", "401", "403") and env:
        return BackendRefused(
            f"{role}: {url} refused the API key in {env} ({e.kind}: {message}); set a valid key "
            f"in {' or '.join(backend.key_envs)}"
        )
    return BackendRefused(f"{where}: {url} refused a lookup of the model ({e.kind}: {message})")


async def _gemini(backend: APIBackend, key: str) -> dict:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(
        base_url=backend.base_url, timeout=int(TIMEOUT_S * 1000), retry_options=types.HttpRetryOptions(attempts=1)
    )
    client = genai.Client(api_key=key, http_options=options)
    try:
        with gemini_errors():
            model = await client.aio.models.get(model=backend.model)
    finally:
        await client.aio.aclose()
    return {"output_token_limit": model.output_token_limit, "thinking": model.thinking}


async def _openai(backend: APIBackend, key: str) -> dict:
    import openai

    async with openai.AsyncOpenAI(
        api_key=key, base_url=backend.client_base_url(), max_retries=0, timeout=TIMEOUT_S
    ) as client:
        try:
            with openai_errors():
                await client.models.retrieve(backend.model)
            return {}
        except PermanentError as e:
            if e.kind != "404":
                raise
        with openai_errors():  # vLLM and llama.cpp serve only the list
            served = [m.id async for m in client.models.list()]
        if backend.model not in served:
            raise PermanentError(
                "404",
                f"the server serves {', '.join(served[:8]) or 'no model'}"
                f"{' ...' if len(served) > 8 else ''}, not {backend.model}",
            )
    return {}
