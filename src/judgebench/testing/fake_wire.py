"""What the fake server's two protocols look like on the wire: error bodies and where a request's prompt is.

Shared by the online handlers (fake_openai_endpoints.py, fake_gemini_endpoints.py) and the batch endpoints
(fake_batches.py).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web


def openai_error(
    status: int, message: str, type_: str, code: str | None, headers: dict[str, str] | None = None
) -> web.Response:
    body = {"error": {"message": message, "type": type_, "param": None, "code": code}}
    return web.json_response(body, status=status, headers=headers)


def google_error(status: int, message: str, state: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(
        {"error": {"code": status, "message": message, "status": state}}, status=status, headers=headers
    )


def _text_of(content: Any, key: str) -> str:
    """Text of an OpenAI message content / Gemini parts list (string or list of text parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get(key, "")) for p in content if isinstance(p, dict))
    return ""


def openai_prompt(body: dict[str, Any]) -> str:
    """The prompt the fake answers: the last user message."""
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return _text_of(users[-1].get("content"), "text") if users else ""


def gemini_prompt(body: dict[str, Any]) -> str:
    """The prompt the fake answers: the text parts of the last user content."""
    users = [c for c in body.get("contents") or [] if isinstance(c, dict) and c.get("role", "user") == "user"]
    return _text_of(users[-1].get("parts"), "text") if users else ""
