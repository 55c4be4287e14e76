"""The fake LLM server's application: a local aiohttp app speaking the real OpenAI chat-completions and Gemini
``generateContent`` HTTP protocols, so LLM backends are tested (and benchmarked) through the official clients
without network access. :mod:`judgebench.testing.fake_process` runs it in its own process.

Answers are deterministic functions of the prompt (see :func:`fake_answer`), faults are drawn from a seeded
RNG in arrival order, and every request is counted, so a test can predict both the answers and the failures.

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
from dataclasses import asdict, dataclass, field, fields, replace
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
from judgebench.testing.fake_wire import (
    gemini_prompt,
    openai_prompt,
)
from judgebench.testing.fake_wire import (
    google_error as _google_error,
)
from judgebench.testing.fake_wire import (
    openai_error as _openai_error,
)

HOST = "127.0.0.1"
"""The only address the server binds: a fake must never be reachable from outside the machine."""

FAULTS = ("429", "500", "timeout", "malformed", "noscore")
"""Fault outcomes, in the order their shares are stacked on one uniform draw per request."""
OUTCOMES = ("ok", *FAULTS, "unauthorized", "bad_request", "not_found")
KINDS = ("openai", "gemini")

_FAULT_FIELD = {
    "429": "fail_429",
    "500": "fail_500",
    "timeout": "fail_timeout",
    "malformed": "fail_malformed",
    "noscore": "fail_noscore",
}


# ---------------------------------------------------------------- configuration


@dataclass(frozen=True)
class FakeConfig:
    """Run-time behaviour; every field can be set at construction, via ``configure(**kw)`` or ``POST /_config``."""

    latency_s: float = 0.0  # asyncio.sleep per request, so concurrent requests overlap for real
    fail_429: float = 0.0  # share of requests answered 429 with Retry-After
    fail_500: float = 0.0
    fail_timeout: float = 0.0  # share of requests that hang timeout_hang_s before answering
    fail_malformed: float = 0.0  # share of 200 answers whose body is not valid JSON
    fail_noscore: float = 0.0  # share of 200 answers whose text holds no parsable score
    retry_after_s: float = 0.05
    timeout_hang_s: float = 30.0
    seed: int = 0  # fault RNG seed; the RNG restarts on a new seed and on reset
    labels: dict[str, int] = field(default_factory=dict)
    prefer: list[str] = field(default_factory=list)
    # judging prompts containing a substring get this answer text verbatim (first match wins)
    answers: dict[str, str] = field(default_factory=dict)
    # API keys answered 401 with the key echoed in the error body, as some servers do
    reject_keys: list[str] = field(default_factory=list)
    # OpenAI's model lookup (retrieve, list) refuses them too, unless this is set: a server whose model list is public
    lookup_any_key: bool = False
    # server-side limits (0: none): requests beyond them are answered 429 at once, with Retry-After, and
    # counted in by_outcome["429"] and in stats()["limited"]; limit_rpm also sends OpenAI's x-ratelimit-*-requests
    # headers on every answer (a token bucket holding one second's quota, refilled at limit_rpm / 60 per second)
    max_inflight: int = 0
    limit_rpm: float = 0.0
    # Gemini thinking: tokens a thinking answer spends at level high or when dynamic (see fake_gemini)
    thoughts: int = 200
    # model ids models.get describes besides fake_gemini.KNOWN_MODELS
    models: list[str] = field(default_factory=list)
    # model ids answered 404 everywhere (both protocols), beside the retired Gemini ids
    missing_models: list[str] = field(default_factory=list)

    def updated(self, **kw: Any) -> FakeConfig:
        """A validated copy with ``kw`` applied; unknown keys and impossible shares raise ValueError."""
        names = {f.name for f in fields(self)}
        unknown = sorted(set(kw) - names)
        if unknown:
            raise ValueError(f"unknown fake server setting(s) {unknown}; known: {sorted(names)}")
        clean: dict[str, Any] = {}
        for key, value in kw.items():
            if key == "labels":
                clean[key] = {str(k): int(v) for k, v in dict(value or {}).items()}
            elif key == "answers":
                clean[key] = {str(k): str(v) for k, v in dict(value or {}).items()}
            elif key in ("prefer", "reject_keys", "models", "missing_models"):
                clean[key] = [str(s) for s in (value or [])]
            elif key == "lookup_any_key":
                clean[key] = bool(value)
            elif key in ("seed", "max_inflight", "thoughts"):
                clean[key] = int(value)
                if key != "seed" and clean[key] < 0:
                    raise ValueError(f"{key} must be >= 0, got {value}")
            else:
                clean[key] = float(value)
                if clean[key] < 0:
                    raise ValueError(f"{key} must be >= 0, got {value}")
        new = replace(self, **clean)
        shares = [getattr(new, f) for f in _FAULT_FIELD.values()]
        if any(s > 1 for s in shares) or sum(shares) > 1 + 1e-9:
            raise ValueError(f"fault shares must each be in [0, 1] and sum to <= 1, got {shares}")
        return new


def draw_outcome(rng: random.Random, config: FakeConfig) -> str:
    """One uniform draw per request, split into stacked fault shares (429, 500, timeout, malformed, noscore)."""
    u, edge = rng.random(), 0.0
    for outcome in FAULTS:
        edge += getattr(config, _FAULT_FIELD[outcome])
        if u < edge:
            return outcome
    return "ok"


# ---------------------------------------------------------------- the aiohttp application


class FakeLLMApp:
    """Server state (config, fault RNG, counters) and the request handlers; runs inside one event loop."""

    def __init__(self, config: FakeConfig | None = None) -> None:
        self.config = config or FakeConfig()
        self.bound: list[list[Any]] = []
        self._models: list[str] = ["fake-llm"]
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
        app.router.add_post("/v1/chat/completions", self._openai_chat)
        app.router.add_get("/v1/models", self._openai_models)
        app.router.add_post(r"/{api_version:v1[a-z0-9]*}/models/{model:[^/:]+}:generateContent", self._gemini)
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

    # -- shared request pipeline
    async def _admit(
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

    def _answer(self, outcome: str, prompt: str, config: FakeConfig) -> str:
        if outcome == "noscore":
            return NOSCORE_TEXT
        verbatim = next((v for k, v in config.answers.items() if k in prompt), None)
        return verbatim if verbatim is not None else fake_answer(prompt, config.labels, config.prefer)

    # -- OpenAI
    async def _openai_chat(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        authed = auth.startswith("Bearer ") and bool(auth[7:].strip())
        outcome, body, prompt, config = await self._admit(request, "openai", authed, openai_prompt)
        if outcome == "unauthorized":
            return _openai_error(
                401,
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                "invalid_request_error",
                None,
            )
        if auth[7:].strip() in config.reject_keys:
            self.by_outcome[outcome] -= 1
            self.by_outcome["unauthorized"] += 1
            return _openai_error(
                401,
                f"Incorrect API key provided: {auth[7:].strip()}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            )
        if outcome == "bad_request" or body.get("stream"):
            return _openai_error(
                400, "The fake server wants a non-streaming JSON chat request.", "invalid_request_error", None
            )
        if outcome == "429":
            return _openai_error(
                429,
                "Rate limit reached (fake server).",
                "requests",
                "rate_limit_exceeded",
                headers={
                    "retry-after": f"{config.retry_after_s:g}",
                    "retry-after-ms": str(round(config.retry_after_s * 1000)),
                },
            )
        if outcome == "500":
            return _openai_error(500, "The server had an error while processing your request.", "server_error", None)
        if outcome == "malformed":
            return web.Response(body=MALFORMED_BODY, content_type="application/json")
        model = str(body.get("model", "fake-llm"))
        if model in config.missing_models:
            self.by_outcome[outcome] -= 1
            self.by_outcome["not_found"] += 1
            return _openai_error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            )
        if model not in self._models:
            self._models.append(model)
        text = self._answer(outcome, prompt, config)
        p, c = len(prompt.split()), len(text.split())
        return web.json_response(
            {
                "id": f"chatcmpl-fake{self.requests}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
            }
        )

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

    async def _openai_models(self, request: web.Request) -> web.Response:
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return _openai_error(401, "You didn't provide an API key.", "invalid_request_error", None)
        if auth[7:].strip() in self.config.reject_keys and not self.config.lookup_any_key:
            return _openai_error(
                401, f"Incorrect API key provided: {auth[7:].strip()}.", "invalid_request_error", "invalid_api_key"
            )
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "judgebench-fake"} for m in self._models
                ],
            }
        )

    # -- Gemini
    async def _gemini(self, request: web.Request) -> web.Response:
        authed = bool(request.headers.get("x-goog-api-key", "").strip() or request.query.get("key"))
        outcome, body, prompt, config = await self._admit(request, "gemini", authed, gemini_prompt)
        if outcome == "unauthorized":
            return _google_error(
                403,
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity to call "
                "this API.",
                "PERMISSION_DENIED",
            )
        if (request.headers.get("x-goog-api-key", "").strip() or request.query.get("key", "")) in config.reject_keys:
            self.by_outcome[outcome] -= 1
            self.by_outcome["unauthorized"] += 1
            return _google_error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT")
        if outcome == "bad_request":
            return _google_error(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
        model = request.match_info["model"]
        if fake_gemini.retired(model) or model in config.missing_models:  # drawn, then refused: counted not_found
            self.by_outcome[outcome] -= 1
            self.by_outcome["not_found"] += 1
            return _google_error(
                404, fake_gemini.not_found_message(model, request.match_info["api_version"]), "NOT_FOUND"
            )
        generation = body.get("generationConfig") or {}
        refused = fake_gemini.thinking_problem(model, generation)
        if refused:
            self.by_outcome[outcome] -= 1
            self.by_outcome["bad_request"] += 1
            return _google_error(400, refused, "INVALID_ARGUMENT")
        if outcome == "429":
            return _google_error(
                429,
                "Resource has been exhausted (e.g. check quota).",
                "RESOURCE_EXHAUSTED",
                headers={"retry-after": f"{config.retry_after_s:g}"},
            )
        if outcome == "500":
            return _google_error(
                500,
                "An internal error has occurred. Please retry or report in "
                "https://developers.generativeai.google/guide/troubleshooting",
                "INTERNAL",
            )
        if outcome == "malformed":
            return web.Response(body=MALFORMED_BODY, content_type="application/json")
        text = self._answer(outcome, prompt, config)
        return web.json_response(
            fake_gemini.generate_response(model, generation, prompt, text, config.thoughts, f"fake{self.requests}")
        )


async def _add_limit_headers(request: web.Request, response: web.StreamResponse) -> None:
    """The server-side limits' headers (stored by ``_over_limit``) on whatever answer the request gets."""
    for key, value in request.get("limit_headers", {}).items():
        response.headers[key] = value
