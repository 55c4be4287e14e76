"""The fake server's Gemini endpoint: ``POST /{v1,v1beta,...}/models/{model}:generateContent``, answered as the
Gemini API answers it (``x-goog-api-key`` header or ``?key=`` required, Google's error bodies, 404 for a retired or
missing model, 400 for thinking settings the model refuses, thinking tokens that eat into ``maxOutputTokens``).

Why apart: the request pipeline is one for both protocols (:class:`~judgebench.testing.fake_app.FakeLLMApp`); how a
drawn outcome looks on the wire differs per provider, here for Gemini (what the fake knows of Gemini's models and
thinking: :mod:`judgebench.testing.fake_gemini`).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from judgebench.testing import fake_gemini
from judgebench.testing.fake_answers import MALFORMED_BODY
from judgebench.testing.fake_wire import gemini_prompt, google_error

FakeLLMApp = Any  # the app this endpoint answers for (fake_app.py imports this module, not the reverse)


class FakeGeminiEndpoints:
    """The Gemini ``generateContent`` handler of one :class:`FakeLLMApp`."""

    def __init__(self, fake: FakeLLMApp) -> None:
        self.fake = fake

    async def generate(self, request: web.Request) -> web.Response:
        fake = self.fake
        authed = bool(request.headers.get("x-goog-api-key", "").strip() or request.query.get("key"))
        outcome, body, prompt, config = await fake.admit(request, "gemini", authed, gemini_prompt)
        if outcome == "unauthorized":
            return google_error(
                403,
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity to call "
                "this API.",
                "PERMISSION_DENIED",
            )
        if (request.headers.get("x-goog-api-key", "").strip() or request.query.get("key", "")) in config.reject_keys:
            fake.by_outcome[outcome] -= 1
            fake.by_outcome["unauthorized"] += 1
            return google_error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT")
        if outcome == "bad_request":
            return google_error(400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
        model = request.match_info["model"]
        if fake_gemini.retired(model) or model in config.missing_models:  # drawn, then refused: counted not_found
            fake.by_outcome[outcome] -= 1
            fake.by_outcome["not_found"] += 1
            return google_error(
                404, fake_gemini.not_found_message(model, request.match_info["api_version"]), "NOT_FOUND"
            )
        generation = body.get("generationConfig") or {}
        refused = fake_gemini.thinking_problem(model, generation)
        if refused:
            fake.by_outcome[outcome] -= 1
            fake.by_outcome["bad_request"] += 1
            return google_error(400, refused, "INVALID_ARGUMENT")
        if outcome == "429":
            return google_error(
                429,
                "Resource has been exhausted (e.g. check quota).",
                "RESOURCE_EXHAUSTED",
                headers={"retry-after": f"{config.retry_after_s:g}"},
            )
        if outcome == "500":
            return google_error(
                500,
                "An internal error has occurred. Please retry or report in "
                "https://developers.generativeai.google/guide/troubleshooting",
                "INTERNAL",
            )
        if outcome == "malformed":
            return web.Response(body=MALFORMED_BODY, content_type="application/json")
        text = fake.answer(outcome, prompt, config)
        return web.json_response(
            fake_gemini.generate_response(model, generation, prompt, text, config.thoughts, f"fake{fake.requests}")
        )
