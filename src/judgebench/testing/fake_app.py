"""The fake LLM server's application: a local aiohttp app speaking the real OpenAI chat-completions and Gemini
``generateContent`` HTTP protocols, so LLM backends are tested (and benchmarked) through the official clients
without network access. :mod:`judgebench.testing.fake_process` runs it in its own process.

Answers are deterministic functions of the prompt (see :func:`fake_answer`), faults are drawn from a seeded
RNG in arrival order (:mod:`judgebench.testing.fake_config`), and every request is counted, so a test can predict
both the answers and the failures. This module is the pipeline every request goes through (counting, the fault draw,
latency, server-side limits) and the routes; how an outcome looks on each provider's wire is in
:mod:`judgebench.testing.fake_openai_endpoints` and :mod:`judgebench.testing.fake_gemini_endpoints`.

Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models`` and ``GET /v1/models/{model}`` (OpenAI,
``Authorization: Bearer`` required), ``POST /{v1,v1beta,...}/models/{model}:generateContent`` and
``GET /{v1,v1beta,...}/models/{model}`` (Gemini, ``x-goog-api-key`` header or ``?key=`` required; models,
retired ids and thinking in :mod:`judgebench.testing.fake_gemini`), and the control endpoints ``GET /_stats``,
``POST /_config`` (JSON), ``POST /_reset``; the batch endpoints are in :mod:`judgebench.testing.fake_batches`.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from aiohttp import web

from judgebench.testing import fake_gemini
from judgebench.testing.fake_answers import (  # noqa: F401  (importers take the answers from the app module too)
    JUDGE_MARKER,
    MALFORMED_BODY,
    NOSCORE_TEXT,
    PRP_MARKER,
    REWRITE_MARKER,
    REWRITE_PREFIX,
    fake_answer,
    fake_label,
    fake_rewrite,
    sha256_hex,
)
from judgebench.testing.fake_config import FAULTS, FakeConfig, draw_outcome
from judgebench.testing.fake_gemini_endpoints import FakeGeminiEndpoints
from judgebench.testing.fake_openai_endpoints import FakeOpenAIEndpoints

HOST = "127.0.0.1"
"""The only address the server binds: a fake must never be reachable from outside the machine."""

OUTCOMES = ("ok", *FAULTS, "unauthorized", "bad_request", "not_found")
KINDS = ("openai", "gemini")


# ---------------------------------------------------------------- the aiohttp application


class FakeLLMApp:
    """Server state (config, fault RNG, counters) and the request handlers; runs inside one event loop."""

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config or FakeConfig()
        self.bound: list[list[Any]] = []
        self.openai = FakeOpenAIEndpoints(self)  # the handlers per protocol, on the pipeline below
        self.gemini = FakeGeminiEndpoints(self)
        self.reset()

    def reset(self) -> None:
        """Clears the counters and restarts the fault RNG, so a reset test run is reproducible."""
        self.rng = random.Random(self.config.seed)
        self.requests = 0
        self.by_kind = dict.fromkeys(KINDS, 0)
        self.by_outcome = dict.fromkeys(OUTCOMES, 0)
        self.in_flight = 0
        self.max_in_flight = 0
        self.prompt_sha256: list[str] = []
        self.last_request: dict[str, Any] | None = None
        self.limited = {"inflight": 0, "rpm": 0}
        self.model_gets = dict.fromkeys(KINDS, 0)  # models.get / models.retrieve lookups (not in `requests`)
        self._rpm_tokens: float | None = None  # the limit_rpm bucket (None: full at the next request)
        self._rpm_at = 0.0

    def configure(self, **kw: Any) -> FakeConfig:
        self.config = self.config.updated(**kw)
        if "seed" in kw:
            self.rng = random.Random(self.config.seed)
        if "limit_rpm" in kw:
            self._rpm_tokens = None
        return self.config

    def stats(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "by_kind": dict(self.by_kind),
            "by_outcome": dict(self.by_outcome),
            "in_flight": self.in_flight,
            "max_in_flight": self.max_in_flight,
            "limited": dict(self.limited),
            "model_gets": dict(self.model_gets),
            "prompt_sha256": list(self.prompt_sha256),
            "last_request": self.last_request,
            "config": asdict(self.config),
            "bound": self.bound,
        }

    def app(self) -> web.Application:
        app = web.Application(client_max_size=256 * 1024**2)  # a batch upload is up to 200 MB, not aiohttp's 1 MB
        app.on_response_prepare.append(_add_limit_headers)
        app.router.add_post("/v1/chat/completions", self.openai.chat)
        app.router.add_get("/v1/models", self.openai.list_models)
        app.router.add_post(r"/{api_version:v1[a-z0-9]*}/models/{model:[^/:]+}:generateContent", self.gemini.generate)
        app.router.add_get(r"/{api_version:v1[a-z0-9]*}/models/{model:.+}", self._model_get)  # both protocols
        app.router.add_get("/_stats", self._h_stats)
        app.router.add_post("/_config", self._h_config)
        app.router.add_post("/_reset", self._h_reset)
        from judgebench.testing.fake_batches import FakeBatches  # the batch endpoints, beside the online ones

        self.batches = FakeBatches(self)
        self.batches.routes(app)
        return app

    async def start(self, port: int = 0) -> web.AppRunner:
        """Binds 127.0.0.1:port (0 picks a free port) and records the bound socket addresses."""
        runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
        await runner.setup()
        await web.TCPSite(runner, HOST, port).start()
        self.bound = [list(a[:2]) for a in runner.addresses]
        return runner

    # -- control endpoints
    async def _h_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _h_config(self, request: web.Request) -> web.Response:
        try:
            config = self.configure(**(await request.json()))
        except (ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(asdict(config))

    async def _h_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    # -- the request pipeline both protocols share (their handlers: fake_openai_endpoints, fake_gemini_endpoints)
    async def admit(
        self, request: web.Request, kind: str, authed: bool, prompt_of: Callable[[dict[str, Any]], str]
    ) -> tuple[str, dict[str, Any], str, FakeConfig]:
        """Counts the request, draws its outcome and sleeps its latency; returns (outcome, body, prompt, config)."""
        self.requests += 1
        self.by_kind[kind] += 1
        if not authed:
            self.by_outcome["unauthorized"] += 1
            return "unauthorized", {}, "", self.config
        try:
            body = await request.json()
            if not isinstance(body, dict):
                raise ValueError("request body is not a JSON object")
        except ValueError:
            self.by_outcome["bad_request"] += 1
            return "bad_request", {}, "", self.config
        prompt = prompt_of(body)
        config = self.config
        if (config.max_inflight or config.limit_rpm) and self._over_limit(request, config):
            self.by_outcome["429"] += 1
            return "429", body, prompt, config
        self.prompt_sha256.append(sha256_hex(prompt))
        self.last_request = {"kind": kind, "path": request.path_qs, "headers": dict(request.headers), "body": body}
        config = self.config  # one snapshot per request: a concurrent configure() does not change it midway
        outcome = draw_outcome(self.rng, config)
        self.by_outcome[outcome] += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if config.latency_s > 0:
                await asyncio.sleep(config.latency_s)
            if outcome == "timeout":  # the client gives up first; a patient one gets the normal answer late
                await asyncio.sleep(config.timeout_hang_s)
        finally:
            self.in_flight -= 1
        return outcome, body, prompt, config

    def _over_limit(self, request: web.Request, config: FakeConfig) -> bool:
        """True (and the 429's headers stored on the request) when a server-side limit refuses the request.

        Refused requests are not admitted: no fault draw, no latency, not in prompt_sha256 or in_flight.
        """
        headers: dict[str, str] = {}
        refused = None
        if config.limit_rpm:
            rate = config.limit_rpm / 60
            capacity = max(1.0, rate)
            now = time.monotonic()
            tokens = (
                capacity if self._rpm_tokens is None else min(capacity, self._rpm_tokens + (now - self._rpm_at) * rate)
            )
            self._rpm_at = now
            if config.max_inflight and self.in_flight >= config.max_inflight:
                refused = "inflight"
            elif tokens < 1:
                refused = "rpm"
                headers["retry-after"] = f"{(1 - tokens) / rate:.3f}"
            else:
                tokens -= 1
            self._rpm_tokens = tokens
            headers.update(
                {
                    "x-ratelimit-limit-requests": f"{config.limit_rpm:g}",
                    "x-ratelimit-remaining-requests": str(int(tokens)),
                    "x-ratelimit-reset-requests": f"{round((capacity - tokens) / rate * 1000)}ms",
                }
            )
        elif self.in_flight >= config.max_inflight:
            refused = "inflight"
        if refused == "inflight":
            headers["retry-after"] = f"{config.retry_after_s:g}"
        if refused:
            self.limited[refused] += 1
            headers["retry-after-ms"] = str(round(float(headers["retry-after"]) * 1000))
        request["limit_headers"] = headers
        return refused is not None

    def answer(self, outcome: str, prompt: str, config: FakeConfig) -> str:
        """The answer's text: none parsable for a noscore fault, else a configured verbatim answer or the fake's own."""
        if outcome == "noscore":
            return NOSCORE_TEXT
        verbatim = next((v for k, v in config.answers.items() if k in prompt), None)
        return verbatim if verbatim is not None else fake_answer(prompt, config.labels, config.prefer)

    async def _model_get(self, request: web.Request) -> web.Response:
        kind, status, body = fake_gemini.model_lookup(
            request.match_info["model"], request.match_info["api_version"], request.headers, request.query, self.config
        )
        self.model_gets[kind] += 1
        self.last_request = {
            "kind": f"{kind}-model",
            "path": request.path_qs,
            "headers": dict(request.headers),
            "body": None,
        }
        return web.json_response(body, status=status)


async def _add_limit_headers(request: web.Request, response: web.StreamResponse) -> None:
    """The server-side limits' headers (stored by ``_over_limit``) on whatever answer the request gets."""
    for key, value in request.get("limit_headers", {}).items():
        response.headers[key] = value
