"""Gemini's batch mode through the google-genai SDK: one ``batches.create`` of inline requests (the prompt,
the generation settings and ``metadata={"key": <call-cache key>}``), polled with ``batches.get`` until its
job state ends, then read from the job's inline responses."""

from __future__ import annotations

import json
from typing import Any

from judgebench.llm.batch_api.batch_provider import BatchLine, BatchProvider, BatchStatus, LineAnswer, LineError
from judgebench.llm.remote.gemini_models import gemini_answer
from judgebench.llm.remote.provider_errors import gemini_errors

_STATES = {
    "JOB_STATE_SUCCEEDED": "succeeded",
    "JOB_STATE_PARTIALLY_SUCCEEDED": "succeeded",
    "JOB_STATE_FAILED": "failed",
    "JOB_STATE_EXPIRED": "expired",
    "JOB_STATE_CANCELLED": "cancelled",
}
"""Job states that end a batch; pending, queued, running, ... are running."""


class GeminiBatches(BatchProvider):
    def __init__(self, backend, system) -> None:
        super().__init__(backend, system)
        self._last: dict[str, Any] = {}  # batch name -> the last BatchJob polled

    def request(self, line: BatchLine) -> dict[str, Any]:
        b = self.backend
        config: dict[str, Any] = {
            "temperature": b.temperature,
            "top_p": b.top_p,
            "max_output_tokens": b.request_max_output_tokens,
        }
        if b.thinking_config:  # as online (GeminiBackend.request_config): the same answer for the same key
            config["thinking_config"] = dict(b.thinking_config)
        if self.system:
            config["system_instruction"] = self.system
        return {
            "contents": [{"role": "user", "parts": [{"text": line.prompt}]}],
            "config": config,
            "metadata": {"key": line.key},
        }

    def line_bytes(self, line: BatchLine) -> int:
        return len(json.dumps(self.request(line)).encode())

    async def submit(self, lines: list[BatchLine]) -> str:
        with gemini_errors():
            job = await self.backend._client.aio.batches.create(
                model=self.backend.model,
                src=[self.request(line) for line in lines],
                config={"display_name": "judgebench"},
            )
        return str(job.name)

    async def poll(self, batch_id: str) -> BatchStatus:
        with gemini_errors():
            job = await self.backend._client.aio.batches.get(name=batch_id)
        self._last[batch_id] = job
        state = getattr(job.state, "value", None) or str(job.state)
        message = f"{job.error.code}: {job.error.message}" if getattr(job, "error", None) else ""
        return BatchStatus(_STATES.get(state, "running"), state, None, message)

    async def results(self, batch_id: str) -> dict[str, LineAnswer | LineError]:
        job = self._last.get(batch_id)
        if job is None:
            with gemini_errors():
                job = await self.backend._client.aio.batches.get(name=batch_id)
        out: dict[str, LineAnswer | LineError] = {}
        for item in (job.dest.inlined_responses or []) if job.dest else []:
            key = (item.metadata or {}).get("key")
            if key is None:
                continue
            if item.error is not None or item.response is None:
                code = getattr(item.error, "code", None)
                out[key] = LineError(
                    str(code or "batch_line"), str(getattr(item.error, "message", "") or "no response")
                )
                continue
            out[key] = LineAnswer(*gemini_answer(item.response))
        return out
