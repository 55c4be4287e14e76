"""The fake server's OpenAI endpoints: ``POST /v1/chat/completions`` and ``GET /v1/models``, answered as OpenAI
answers them (``Authorization: Bearer`` required, its error bodies and headers, a usage block counting words).

Why apart: the request pipeline (counting, the fault draw, latency, server-side limits) is one for both protocols
(:class:`~judgebench.testing.fake_app.FakeLLMApp`); what differs per provider is how a drawn outcome looks on the
wire, here for OpenAI and in :mod:`judgebench.testing.fake_gemini_endpoints` for Gemini.
"""

from __future__ import annotations

import time
from typing import Any

from aiohttp import web

from judgebench.testing.fake_answers import MALFORMED_BODY
from judgebench.testing.fake_wire import openai_error, openai_prompt

FakeLLMApp = Any  # the app these endpoints answer for (fake_app.py imports this module, not the reverse)


class FakeOpenAIEndpoints:
    """The OpenAI handlers of one :class:`FakeLLMApp`, and the model ids its ``GET /v1/models`` lists (each model a
    chat request named is added)."""

    def __init__(self, fake: FakeLLMApp) -> None:
        self.fake = fake
        self.models: list[str] = ["fake-llm"]

    async def chat(self, request: web.Request) -> web.Response:
        fake = self.fake
        auth = request.headers.get("Authorization", "")
        authed = auth.startswith("Bearer ") and bool(auth[7:].strip())
        outcome, body, prompt, config = await fake.admit(request, "openai", authed, openai_prompt)
        if outcome == "unauthorized":
            return openai_error(
                401,
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                "invalid_request_error",
                None,
            )
        if auth[7:].strip() in config.reject_keys:
            fake.by_outcome[outcome] -= 1
            fake.by_outcome["unauthorized"] += 1
            return openai_error(
                401,
                f"Incorrect API key provided: {auth[7:].strip()}. You can find your API key at "
                "https://platform.openai.com/account/api-keys.",
                "invalid_request_error",
                "invalid_api_key",
            )
        if outcome == "bad_request" or body.get("stream"):
            return openai_error(
                400, "The fake server wants a non-streaming JSON chat request.", "invalid_request_error", None
            )
        if outcome == "429":
            return openai_error(
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
            return openai_error(500, "The server had an error while processing your request.", "server_error", None)
        if outcome == "malformed":
            return web.Response(body=MALFORMED_BODY, content_type="application/json")
        model = str(body.get("model", "fake-llm"))
        if model in config.missing_models:
            fake.by_outcome[outcome] -= 1
            fake.by_outcome["not_found"] += 1
            return openai_error(
                404,
                f"The model `{model}` does not exist or you do not have access to it.",
                "invalid_request_error",
                "model_not_found",
            )
        if model not in self.models:
            self.models.append(model)
        text = fake.answer(outcome, prompt, config)
        p, c = len(prompt.split()), len(text.split())
        return web.json_response(
            {
                "id": f"chatcmpl-fake{fake.requests}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
            }
        )

    async def list_models(self, request: web.Request) -> web.Response:
        config = self.fake.config
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return openai_error(401, "You didn't provide an API key.", "invalid_request_error", None)
        if auth[7:].strip() in config.reject_keys and not config.lookup_any_key:
            return openai_error(
                401, f"Incorrect API key provided: {auth[7:].strip()}.", "invalid_request_error", "invalid_api_key"
            )
        return web.json_response(
            {
                "object": "list",
                "data": [
                    {"id": m, "object": "model", "created": 0, "owned_by": "judgebench-fake"} for m in self.models
                ],
            }
        )
