"""OpenAI's Batch API through the official client: a JSONL file of chat-completion requests (one per prompt,
``custom_id`` = the call-cache key) uploaded with ``purpose="batch"``, one batch job over it, polled until it
ends, then its output and error files downloaded."""

from __future__ import annotations

import json
from typing import Any

from judgebench.llm.batch_api.batch_provider import BatchLine, BatchProvider, BatchStatus, LineAnswer, LineError
from judgebench.llm.remote.provider_errors import openai_errors

ENDPOINT = "/v1/chat/completions"
_STATES = {"completed": "succeeded", "failed": "failed", "expired": "expired", "cancelled": "cancelled"}
"""OpenAI batch statuses that end it; validating, in_progress, finalizing and cancelling are running."""


class OpenAIBatches(BatchProvider):
    def __init__(self, backend, system) -> None:
        super().__init__(backend, system)
        self._last: dict[str, Any] = {}  # batch id -> the last Batch object polled

    def request(self, line: BatchLine) -> dict[str, Any]:
        b = self.backend
        messages = ([{"role": "system", "content": self.system}] if self.system else []) + [
            {"role": "user", "content": line.prompt}
        ]
        return {
            "custom_id": line.key,
            "method": "POST",
            "url": ENDPOINT,
            "body": {
                "model": b.model,
                "messages": messages,
                "temperature": b.temperature,
                "top_p": b.top_p,
                "frequency_penalty": getattr(b, "frequency_penalty", 0.0),
                **(
                    {"max_completion_tokens": b.request_max_output_tokens, **b.thinking_config}
                    if b.thinking_config
                    else {"max_tokens": b.max_output_tokens}
                ),
            },
        }

    def line_bytes(self, line: BatchLine) -> int:
        return len(json.dumps(self.request(line)).encode()) + 1

    async def submit(self, lines: list[BatchLine]) -> str:
        data = "".join(json.dumps(self.request(line)) + "\n" for line in lines).encode()
        client = self.backend._client
        with openai_errors():
            uploaded = await client.files.create(file=("judgebench-batch.jsonl", data), purpose="batch")
            batch = await client.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT, completion_window="24h")
        return str(batch.id)

    async def poll(self, batch_id: str) -> BatchStatus:
        with openai_errors():
            batch = await self.backend._client.batches.retrieve(batch_id)
        self._last[batch_id] = batch
        counts = batch.request_counts
        done = (counts.completed or 0) + (counts.failed or 0) if counts else None
        errors = getattr(batch.errors, "data", None) or []
        message = "; ".join(f"{e.code}: {e.message}" for e in errors if e is not None)[:300]
        return BatchStatus(_STATES.get(batch.status, "running"), batch.status, done, message)

    async def results(self, batch_id: str) -> dict[str, LineAnswer | LineError]:
        batch = self._last.get(batch_id) or await self._retrieve(batch_id)
        out: dict[str, LineAnswer | LineError] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            with openai_errors():
                content = await self.backend._client.files.content(file_id)
            for raw in content.text.splitlines():
                if raw.strip():
                    item = json.loads(raw)
                    out[str(item.get("custom_id"))] = _line_result(item)
        return out

    async def _retrieve(self, batch_id: str) -> Any:
        with openai_errors():
            return await self.backend._client.batches.retrieve(batch_id)


def _line_result(item: dict[str, Any]) -> LineAnswer | LineError:
    """One line of an output or error file: an answer (status 200 with choices) or why there is none."""
    error, response = item.get("error"), item.get("response") or {}
    if error:
        return LineError(str(error.get("code") or "batch_line"), str(error.get("message") or error)[:300])
    body = response.get("body") or {}
    status = response.get("status_code")
    if status != 200:
        message = (body.get("error") or {}).get("message") if isinstance(body, dict) else None
        return LineError(str(status), str(message or body)[:300])
    choices = body.get("choices") or []
    if not choices:
        return LineError("malformed", "response without choices")
    usage = body.get("usage") or {}
    thinking = int((usage.get("completion_tokens_details") or {}).get("reasoning_tokens") or 0)
    return LineAnswer(
        (choices[0].get("message") or {}).get("content") or "",
        int(usage.get("prompt_tokens") or 0),
        max(0, int(usage.get("completion_tokens") or 0) - thinking),
        thinking,
    )
