"""What the fake server knows about Gemini models: ``models.get``, retired ids, and thinking.

The Gemini API answers 404 NOT_FOUND for a retired or unknown model id; the fake does the same on
``models.get`` (``GET /{api_version}/models/{model}``) and, for retired ids (the table in
:mod:`judgebench.llm.remote.gemini_models`), on ``generateContent``; any other id is answered there, so tests may
name models freely. ``models.get`` knows :data:`KNOWN_MODELS` and the ids in ``FakeConfig.models``.

Thinking follows the API: a request's ``thinkingConfig`` asks for a budget (2.5 models) or a level (Gemini
3); without one, the models that think by default (2.5 Flash and Pro, Gemini 3) think anyway. The fake
thinks ``FakeConfig.thoughts`` tokens at level high or with dynamic thinking (a budget caps it; low a
quarter, medium a half, minimal none), reports them as ``thoughtsTokenCount``, and they eat into
``maxOutputTokens``: the answer (one token per word) is cut to what is left, to nothing when thinking used
it all, with finishReason MAX_TOKENS. Settings the API refuses (both a budget and a level, a level for a
2.5 model, budget 0 where thinking cannot be turned off, thinking for a model that does not think) are
answered 400 INVALID_ARGUMENT.
"""

from __future__ import annotations

from typing import Any

from judgebench.llm.remote.gemini_models import base_id, replacement, thinking_rules

KNOWN_MODELS: dict[str, str] = {
    "gemini-3.8-flash": "Gemini 3.8 Flash",
    "gemini-3.7-flash": "Gemini 3.7 Flash",
    "gemini-3.6-flash": "Gemini 3.6 Flash",
    "gemini-3.5-flash": "Gemini 3.5 Flash",
    "gemini-3.5-flash-lite": "Gemini 3.5 Flash-Lite",
    "gemini-3.1-flash-lite": "Gemini 3.1 Flash-Lite",
    "gemini-3.1-pro-preview": "Gemini 3.1 Pro Preview",
    "gemini-3-flash-preview": "Gemini 3 Flash Preview",
    "gemini-2.5-flash-lite": "Gemini 2.5 Flash-Lite",
}
"""Model ids the fake's ``models.get`` describes (current ones, December 2026), with display names."""
OUTPUT_TOKEN_LIMIT = 65536
_LEVEL_SHARE = {"minimal": 0.0, "low": 0.25, "medium": 0.5, "high": 1.0}


def not_found_message(model: str, api_version: str) -> str:
    return (
        f"models/{model} is not found for API version {api_version}, or is not supported for generateContent. "
        "Call ListModels to see the list of available models and their supported methods."
    )


def retired(model: str) -> bool:
    return replacement(model) is not None


def _google(status: int, message: str, state: str) -> dict[str, Any]:
    return {"error": {"code": status, "message": message, "status": state}}


def model_lookup(model: str, api_version: str, headers, query, config) -> tuple[str, int, dict[str, Any]]:
    """(kind, status, body) for ``GET /{api_version}/models/{model}``: Gemini's models.get when the request
    carries a Gemini key (or the api_version is not v1), else OpenAI's models.retrieve."""
    key = bool(headers.get("x-goog-api-key", "").strip() or query.get("key"))
    missing = model in config.missing_models
    if not key and api_version == "v1":
        if not headers.get("Authorization", "").startswith("Bearer "):
            return (
                "openai",
                401,
                {
                    "error": {
                        "message": "You didn't provide an API key.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": None,
                    }
                },
            )
        bearer = headers.get("Authorization", "")[7:].strip()
        if (
            bearer in config.reject_keys and not config.lookup_any_key
        ):  # what OpenAI answers a wrong key, on the lookup as on every request
            return (
                "openai",
                401,
                {
                    "error": {
                        "message": f"Incorrect API key provided: {bearer}.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "invalid_api_key",
                    }
                },
            )
        if missing:
            return (
                "openai",
                404,
                {
                    "error": {
                        "message": f"The model `{model}` does not exist or you do not have access to it.",
                        "type": "invalid_request_error",
                        "param": None,
                        "code": "model_not_found",
                    }
                },
            )
        return "openai", 200, {"id": model, "object": "model", "created": 0, "owned_by": "judgebench-fake"}
    if not key:
        return (
            "gemini",
            403,
            _google(
                403,
                "Method doesn't allow unregistered callers (callers without established "
                "identity). Please use API Key or other form of API consumer identity to "
                "call this API.",
                "PERMISSION_DENIED",
            ),
        )
    given = headers.get("x-goog-api-key", "").strip() or query.get("key", "")
    if given in config.reject_keys:  # what Gemini answers a wrong key, on the lookup as on every request
        return "gemini", 400, _google(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT")
    resource = None if missing else model_resource(model, config.models)
    if resource is None:
        return "gemini", 404, _google(404, not_found_message(model, api_version), "NOT_FOUND")
    return "gemini", 200, resource


def model_resource(model: str, extra: list[str]) -> dict[str, Any] | None:
    """The ``Model`` resource ``models.get`` returns, or None (404) for a retired or unknown id."""
    name = base_id(model)
    if retired(name) or (name not in KNOWN_MODELS and name not in extra):
        return None
    return {
        "name": f"models/{name}",
        "version": name.split("-")[1],
        "displayName": KNOWN_MODELS.get(name, name),
        "description": "A model of the judgebench fake server.",
        "inputTokenLimit": 1048576,
        "outputTokenLimit": OUTPUT_TOKEN_LIMIT,
        "supportedGenerationMethods": ["generateContent", "countTokens", "batchGenerateContent"],
        "temperature": 1.0,
        "maxTemperature": 2.0,
        "topP": 0.95,
        "topK": 64,
        "thinking": thinking_rules(name).control != "none",
    }


def _thinking(generation_config: dict[str, Any]) -> tuple[int | None, str | None]:
    """(budget, level) of a request's thinking config; proto JSON takes camelCase and snake_case names alike
    (google-genai sends ``thinking_level``)."""
    config = generation_config.get("thinkingConfig") or generation_config.get("thinking_config") or {}
    budget = config.get("thinkingBudget", config.get("thinking_budget"))
    level = config.get("thinkingLevel", config.get("thinking_level"))
    return (None if budget is None else int(budget)), (None if level is None else str(level).lower())


def thinking_problem(model: str, generation_config: dict[str, Any]) -> str | None:
    """The API's 400 message for a thinking config this model refuses, else None."""
    budget, level = _thinking(generation_config)
    rules = thinking_rules(model)
    if budget is not None and level is not None:
        return "You cannot use both thinking_level and the legacy thinking_budget parameter in the same request."
    if rules.control == "none" and (level is not None or budget not in (None, 0)):
        return f"Thinking is not enabled for models/{model}."
    if rules.control == "budget" and level is not None:
        return "Thinking level is not supported for this model."
    if rules.control == "budget" and budget == 0 and rules.min_budget:
        return "Budget 0 is invalid. This model only works in thinking mode."
    if rules.control == "level" and level is not None and level not in rules.levels:
        return f"Thinking level {level} is not supported for models/{model}."
    return None


def planned_thoughts(model: str, generation_config: dict[str, Any], thoughts: int) -> int:
    """How many tokens the fake thinks for this request, before max_output_tokens cuts anything."""
    budget, level = _thinking(generation_config)
    if budget is not None:
        return thoughts if budget < 0 else min(budget, thoughts)
    if level is not None:
        return int(thoughts * _LEVEL_SHARE.get(level, 1.0))
    return thoughts if thinking_rules(model).thinks_by_default else 0


def generate_response(
    model: str, generation_config: dict[str, Any], prompt: str, text: str, thoughts: int, response_id: str
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` body: the answer after thinking took its share of maxOutputTokens."""
    limit = generation_config.get("maxOutputTokens")
    thought = planned_thoughts(model, generation_config, thoughts)
    finish = "STOP"
    words = text.split()
    if limit is not None:
        thought = min(thought, int(limit))
        room = int(limit) - thought
        if len(words) > room:
            words, finish = words[:room], "MAX_TOKENS"
            text = " ".join(words)
    p, c = len(prompt.split()), len(words)
    content: dict[str, Any] = {"role": "model"}
    if text:
        content["parts"] = [{"text": text}]
    usage: dict[str, Any] = {"promptTokenCount": p, "totalTokenCount": p + c + thought}
    if c:
        usage["candidatesTokenCount"] = c
    if thought:
        usage["thoughtsTokenCount"] = thought
    return {
        "candidates": [{"content": content, "finishReason": finish, "index": 0}],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": response_id,
    }
