"""What a failed request means, the same for online calls and batch jobs: each SDK's exceptions turned into
TransientError (worth retrying, after the server's Retry-After) or PermanentError (retrying cannot help)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator


class TransientError(Exception):
    """Worth retrying: 429, 5xx, timeouts, connection errors, malformed responses.

    ``overload`` (429, 503, 529) shrinks the adaptive concurrency window; ``headers`` are the response's,
    for its rate-limit headers.
    """

    def __init__(
        self, kind: str, message: str, retry_after: float | None = None, *, overload: bool | None = None, headers=None
    ):
        super().__init__(f"{kind}: {message}")
        self.kind, self.retry_after = kind, retry_after
        self.overload = kind == "429" if overload is None else overload
        self.headers = headers


class PermanentError(Exception):
    """Retrying cannot help (bad request, auth, unknown model). ``tokens``: (input, answer, thinking) tokens of a
    paid answer that is unusable (cut off at max_output_tokens): its spend is counted all the same."""

    def __init__(self, kind: str, message: str, tokens: tuple[int, int, int] = (0, 0, 0)):
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.tokens = tokens


def retry_after(headers) -> float | None:
    """Seconds the server asks us to wait (``retry-after-ms`` or ``retry-after``), if it says."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    try:
        return float(value) if value else None
    except ValueError:
        return None


@contextlib.contextmanager
def openai_errors() -> Iterator[None]:
    """The openai client's exceptions, inside the block, as TransientError / PermanentError."""
    import openai

    try:
        yield
    except openai.RateLimitError as e:
        raise TransientError("429", str(e)[:200], retry_after(e.response.headers), headers=e.response.headers) from e
    except openai.InternalServerError as e:
        raise TransientError(
            "5xx",
            str(e)[:200],
            retry_after(e.response.headers),
            overload=e.status_code in (503, 529),
            headers=e.response.headers,
        ) from e
    except openai.APITimeoutError as e:
        raise TransientError("timeout", str(e)[:200]) from e
    except openai.APIConnectionError as e:
        raise TransientError("connection", str(e)[:200]) from e
    except openai.APIStatusError as e:
        if e.status_code in (408, 409):
            raise TransientError(str(e.status_code), str(e)[:200], retry_after(e.response.headers)) from e
        raise PermanentError(str(e.status_code), str(e)[:300]) from e
    except (json.JSONDecodeError, openai.APIResponseValidationError, ValueError) as e:
        raise TransientError("malformed", str(e)[:200]) from e


@contextlib.contextmanager
def gemini_errors() -> Iterator[None]:
    """The google-genai SDK's exceptions, inside the block, as TransientError / PermanentError."""
    from google.genai import errors

    try:
        yield
    except errors.ClientError as e:
        headers = getattr(e.response, "headers", None)
        if e.code in (408, 429):
            raise TransientError(str(e.code), str(e)[:200], retry_after(headers), headers=headers) from e
        raise PermanentError(str(e.code), str(e)[:300]) from e
    except errors.ServerError as e:
        headers = getattr(e.response, "headers", None)
        raise TransientError("5xx", str(e)[:200], retry_after(headers), overload=e.code == 503, headers=headers) from e
    except (json.JSONDecodeError, ValueError) as e:
        raise TransientError("malformed", str(e)[:200]) from e
    except Exception as e:  # httpx / aiohttp timeouts and connection errors surface as their own types
        name = type(e).__name__.lower()
        if "timeout" in name:
            raise TransientError("timeout", str(e)[:200]) from e
        if "connect" in name or "network" in name or "protocol" in name:
            raise TransientError("connection", str(e)[:200]) from e
        raise
