"""Which HTTP client the OpenAI SDK sends with: its aiohttp transport by default, its httpx one on request."""

from __future__ import annotations

import logging

log = logging.getLogger("judgebench")

HTTP_TRANSPORTS = ("aiohttp", "httpx")


def openai_http_client(transport: str):
    """The SDK's aiohttp client (``openai.DefaultAioHttpClient``), or None for its default httpx one.

    httpx's pool probes every idle connection (a ``poll`` and a dict of socket attributes) on each of its two
    passes per request, so on a CPU-bound client its cost grows with the connections kept open; aiohttp takes
    the last released connection and probes nothing. Measured with ``python -m benchmarks.versus``: about half
    the client CPU per request. Falls back to httpx, with a warning, when the SDK or aiohttp lacks it.
    """
    if transport == "httpx":
        return None
    try:
        import openai

        return openai.DefaultAioHttpClient()
    except (AttributeError, RuntimeError) as e:  # an SDK older than its aiohttp client, or aiohttp not installed
        log.warning("http_transport=aiohttp unavailable (%s); using the SDK's httpx client", e)
        return None
