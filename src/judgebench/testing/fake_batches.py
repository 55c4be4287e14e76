"""The fake server's batch endpoints: OpenAI's Files + Batches API and Gemini's ``batchGenerateContent``, as
the official clients call them, so batch mode is tested through the real SDKs.

A batch answers every line with the same deterministic text an online request gets (``FakeLLMApp.answer``),
after the behaviour set by :class:`FakeBatchConfig` (``POST /_batch_config``): in progress for a number of
polls or seconds, a share of failed lines, or expiry. Every submission is counted (``GET /_batch_stats``),
so a test can tell how many prompts were paid for, and how many twice.

Endpoints: ``POST /v1/files`` (multipart), ``GET /v1/files/{id}/content``, ``POST /v1/batches``,
``GET /v1/batches/{id}``; ``POST /{version}/models/{model}:batchGenerateContent``, ``GET /{version}/batches/{id}``
(the SDK's default version is ``v1``: a poll carrying a Gemini key goes to the Gemini handler). OpenAI's expired
batch returns the lines done before expiry (``expire_done_share``); Gemini's returns none.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from aiohttp import web

from judgebench.testing import fake_gemini
from judgebench.testing.fake_answers import sha256_hex
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

FakeLLMApp = Any  # the online app these endpoints sit beside (fake_app.py imports this module, not the reverse)


@dataclass(frozen=True)
class FakeBatchConfig:
    """How batches behave. Whether a batch is still in progress follows the current settings (so a test can
    hold batches and release them); its failed and expired lines follow the settings it was created with."""

    polls_in_progress: int = 0  # a batch answers "in progress" to its first N polls
    seconds_in_progress: float = 0.0  # ... and until N seconds after its creation
    fail_share: float = 0.0  # share of lines answered with an error (drawn per line, seeded)
    fail_once: bool = True  # a prompt fails at most once: its re-submission succeeds
    expire: bool = False  # the batch ends expired: only the first expire_done_share lines answered
    expire_done_share: float = 0.5
    poll_500: bool = False  # every poll of a batch answers 500 (a provider having trouble)
    seed: int = 0

    def updated(self, **kw: Any) -> FakeBatchConfig:
        """A validated copy with ``kw`` applied; unknown keys and impossible values raise ValueError."""
        names = {f.name: f for f in fields(self)}
        unknown = sorted(set(kw) - set(names))
        if unknown:
            raise ValueError(f"unknown fake batch setting(s) {unknown}; known: {sorted(names)}")
        clean: dict[str, Any] = {}
        for key, value in kw.items():
            kind = type(getattr(self, key))
            clean[key] = bool(value) if kind is bool else kind(value)
            if kind is not bool and clean[key] < 0:
                raise ValueError(f"{key} must be >= 0, got {value}")
        new = replace(self, **clean)
        if new.fail_share > 1 or new.expire_done_share > 1:
            raise ValueError("fail_share and expire_done_share are shares in [0, 1]")
        return new


@dataclass
class _Batch:
    id: str
    kind: str  # openai | gemini
    lines: list[dict[str, Any]]  # {"key": custom_id or metadata, "prompt": ..., "model": ...}
    config: FakeBatchConfig
    created: float
    polls: int = 0
    results: list[dict[str, Any]] | None = None  # per line: {"text": ...} or {"error": (code, message)}
    state: str = "in_progress"  # in_progress | completed | expired
    file_ids: dict[str, str] = field(default_factory=dict)  # OpenAI: input_file_id, output_file_id, error_file_id


class FakeBatches:
    """Batch state and handlers, beside the online handlers of one :class:`FakeLLMApp`."""

    def __init__(self, fake: FakeLLMApp) -> None:
        self.fake = fake
        self.config = FakeBatchConfig()
        self.reset()

    def reset(self) -> None:
        self.rng = random.Random(self.config.seed)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, _Batch] = {}
        self.failed_once: set[str] = set()
        self.created = dict.fromkeys(("openai", "gemini"), 0)
        self.submitted = 0  # lines (prompts) in every batch created
        self.submitted_sha256: list[str] = []  # one per line, in submission order
        self.failed_sha256: list[str] = []
        self.polls = 0

    def stats(self) -> dict[str, Any]:
        return {
            "batches_created": dict(self.created),
            "batches": sum(self.created.values()),
            "prompts_submitted": self.submitted,
            "submitted_sha256": list(self.submitted_sha256),
            "failed_sha256": list(self.failed_sha256),
            "polls": self.polls,
            "states": {b.id: b.state for b in self.batches.values()},
            "config": asdict(self.config),
        }

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/files", self._openai_upload)
        app.router.add_get("/v1/files/{file_id}/content", self._openai_content)
        app.router.add_post("/v1/batches", self._openai_create)
        app.router.add_get("/v1/batches/{batch_id}", self._openai_retrieve)
        app.router.add_post(
            r"/{api_version:v1[a-z0-9]*}/models/{model:[^/:]+}:batchGenerateContent", self._gemini_create
        )
        app.router.add_get(r"/{api_version:v1[a-z0-9]*}/batches/{batch_id}", self._gemini_get)
        app.router.add_get("/_batch_stats", self._h_stats)
        app.router.add_post("/_batch_config", self._h_config)
        app.router.add_post("/_batch_reset", self._h_reset)

    # -- control
    async def _h_stats(self, request: web.Request) -> web.Response:
        return web.json_response(self.stats())

    async def _h_config(self, request: web.Request) -> web.Response:
        try:
            kw = await request.json()
            self.config = self.config.updated(**kw)
            if "seed" in kw:
                self.rng = random.Random(self.config.seed)
        except (ValueError, TypeError) as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(asdict(self.config))

    async def _h_reset(self, request: web.Request) -> web.Response:
        self.reset()
        return web.json_response({"ok": True})

    # -- the batch life cycle, shared
    def _create(self, kind: str, lines: list[dict[str, Any]], prefix: str = "") -> _Batch:
        self.created[kind] += 1
        batch = _Batch(f"{prefix}batch_fake{sum(self.created.values())}", kind, lines, self.config, time.time())
        self.batches[batch.id] = batch
        for line in lines:
            self.submitted += 1
            self.submitted_sha256.append(sha256_hex(line["prompt"]))
        return batch

    def _advance(self, batch: _Batch) -> None:
        """One poll: still in progress, or done now (its answers drawn once, at completion)."""
        self.polls += 1
        batch.polls += 1
        now, cfg = self.config, batch.config
        if (
            batch.results is not None
            or batch.polls <= now.polls_in_progress
            or time.time() - batch.created < now.seconds_in_progress
        ):
            return
        n_done = round(len(batch.lines) * cfg.expire_done_share) if cfg.expire else len(batch.lines)
        results: list[dict[str, Any]] = []
        for i, line in enumerate(batch.lines):
            digest = sha256_hex(line["prompt"])
            if i >= n_done:
                results.append(
                    {
                        "error": (
                            "batch_expired",
                            "This request could not be executed before the completion window expired.",
                        )
                    }
                )
            elif self.rng.random() < cfg.fail_share and not (cfg.fail_once and digest in self.failed_once):
                self.failed_once.add(digest)
                self.failed_sha256.append(digest)
                results.append({"error": ("server_error", "The fake server failed this line.")})
            else:
                results.append({"text": self.fake.answer("ok", line["prompt"], self.fake.config)})
        batch.results = results
        batch.state = "expired" if cfg.expire else "completed"

    # -- OpenAI
    @staticmethod
    def _openai_authed(request: web.Request) -> bool:
        auth = request.headers.get("Authorization", "")
        return auth.startswith("Bearer ") and bool(auth[7:].strip())

    def _new_file(self, content: bytes, name: str) -> dict[str, Any]:
        file_id = f"file-fake{len(self.files) + 1}"
        self.files[file_id] = content
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": name,
            "purpose": "batch",
            "status": "processed",
        }

    async def _openai_upload(self, request: web.Request) -> web.Response:
        if not self._openai_authed(request):
            return _openai_error(401, "You didn't provide an API key.", "invalid_request_error", None)
        form = await request.post()
        upload = form.get("file")
        if form.get("purpose") != "batch" or upload is None or not hasattr(upload, "file"):
            return _openai_error(
                400,
                "The fake server wants a multipart upload with purpose=batch and a file.",
                "invalid_request_error",
                None,
            )
        return web.json_response(self._new_file(upload.file.read(), upload.filename or "batch.jsonl"))

    async def _openai_content(self, request: web.Request) -> web.Response:
        content = self.files.get(request.match_info["file_id"])
        if content is None:
            return _openai_error(404, "No such file.", "invalid_request_error", None)
        return web.Response(body=content, content_type="application/octet-stream")

    async def _openai_create(self, request: web.Request) -> web.Response:
        if not self._openai_authed(request):
            return _openai_error(401, "You didn't provide an API key.", "invalid_request_error", None)
        body = await request.json()
        content = self.files.get(str(body.get("input_file_id")))
        if content is None or body.get("endpoint") != "/v1/chat/completions":
            return _openai_error(
                400,
                "input_file_id must name an uploaded file and endpoint must be /v1/chat/completions.",
                "invalid_request_error",
                None,
            )
        lines = []
        for raw in content.decode().splitlines():
            if raw.strip():
                item = json.loads(raw)
                lines.append(
                    {
                        "key": item["custom_id"],
                        "prompt": openai_prompt(item["body"]),
                        "model": item["body"].get("model", "fake-llm"),
                    }
                )
        batch = self._create("openai", lines)
        batch.file_ids["input_file_id"] = str(body["input_file_id"])
        return web.json_response(self._openai_batch(batch))

    async def _openai_retrieve(self, request: web.Request) -> web.Response:
        if self._gemini_authed(request):  # the Gemini SDK polls GET /v1/batches/{id} too (api_version v1)
            return await self._gemini_get(request)
        if self.config.poll_500:
            return _openai_error(500, "The fake server is having trouble.", "server_error", None)
        batch = self.batches.get(request.match_info["batch_id"])
        if batch is None or batch.kind != "openai":
            return _openai_error(404, "No such batch.", "invalid_request_error", None)
        self._advance(batch)
        return web.json_response(self._openai_batch(batch))

    def _openai_batch(self, batch: _Batch) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": batch.id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
            "input_file_id": batch.file_ids.get("input_file_id", ""),
            "created_at": int(batch.created),
            "status": batch.state,
            "request_counts": {"total": len(batch.lines), "completed": 0, "failed": 0},
        }
        if batch.results is None:
            return body
        out, err = [], []
        for i, (line, res) in enumerate(zip(batch.lines, batch.results)):
            if "text" in res:
                p, c = len(line["prompt"].split()), len(res["text"].split())
                out.append(
                    {
                        "id": f"batch_req_{i}",
                        "custom_id": line["key"],
                        "error": None,
                        "response": {
                            "status_code": 200,
                            "request_id": f"req_{i}",
                            "body": {
                                "id": f"chatcmpl-batch{i}",
                                "object": "chat.completion",
                                "created": int(batch.created),
                                "model": line["model"],
                                "choices": [
                                    {
                                        "index": 0,
                                        "finish_reason": "stop",
                                        "message": {"role": "assistant", "content": res["text"]},
                                    }
                                ],
                                "usage": {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c},
                            },
                        },
                    }
                )
            else:
                code, message = res["error"]
                err.append(
                    {
                        "id": f"batch_req_{i}",
                        "custom_id": line["key"],
                        "response": None,
                        "error": {"code": code, "message": message},
                    }
                )
        body["request_counts"] = {"total": len(batch.lines), "completed": len(out), "failed": len(err)}
        for name, rows in (("output_file_id", out), ("error_file_id", err)):
            if rows:
                if name not in batch.file_ids:
                    content = "".join(json.dumps(r) + "\n" for r in rows).encode()
                    batch.file_ids[name] = self._new_file(content, f"{batch.id}_{name}.jsonl")["id"]
                body[name] = batch.file_ids[name]
        return body

    # -- Gemini
    @staticmethod
    def _gemini_authed(request: web.Request) -> bool:
        return bool(request.headers.get("x-goog-api-key", "").strip() or request.query.get("key"))

    async def _gemini_create(self, request: web.Request) -> web.Response:
        if not self._gemini_authed(request):
            return _google_error(403, "Method doesn't allow unregistered callers.", "PERMISSION_DENIED")
        body = await request.json()
        requests = (((body.get("batch") or {}).get("inputConfig") or {}).get("requests") or {}).get("requests")
        if not isinstance(requests, list):
            return _google_error(
                400, "batch.inputConfig.requests.requests must be a list (inline requests).", "INVALID_ARGUMENT"
            )
        model = request.match_info["model"]
        lines = [
            {
                "key": item.get("metadata") or {},
                "prompt": gemini_prompt(item.get("request") or {}),
                "model": model,
                "generation": (item.get("request") or {}).get("generationConfig") or {},
            }
            for item in requests
        ]
        batch = self._create("gemini", lines, prefix="batches/")
        return web.json_response(self._gemini_batch(batch))

    async def _gemini_get(self, request: web.Request) -> web.Response:
        if self.config.poll_500:
            return _google_error(500, "The fake server is having trouble.", "INTERNAL")
        batch = self.batches.get("batches/" + request.match_info["batch_id"])
        if batch is None:
            return _google_error(404, "Batch not found.", "NOT_FOUND")
        self._advance(batch)
        return web.json_response(self._gemini_batch(batch))

    def _gemini_batch(self, batch: _Batch) -> dict[str, Any]:
        state = {
            "in_progress": "BATCH_STATE_RUNNING" if batch.polls else "BATCH_STATE_PENDING",
            "completed": "BATCH_STATE_SUCCEEDED",
            "expired": "BATCH_STATE_EXPIRED",
        }[batch.state]
        meta: dict[str, Any] = {
            "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
            "name": batch.id,
            "model": f"models/{batch.lines[0]['model'] if batch.lines else ''}",
            "state": state,
        }
        if batch.results is not None and batch.state == "completed":
            responses = []
            for line, res in zip(batch.lines, batch.results):
                if "text" in res:  # thinking as online (fake_gemini), from the line's own generation config
                    response = fake_gemini.generate_response(
                        line["model"],
                        line["generation"],
                        line["prompt"],
                        res["text"],
                        self.fake.config.thoughts,
                        batch.id,
                    )
                    responses.append(
                        {"metadata": line["key"], "response": {k: response[k] for k in ("candidates", "usageMetadata")}}
                    )
                else:
                    responses.append({"metadata": line["key"], "error": {"code": 500, "message": res["error"][1]}})
            meta["output"] = {"inlinedResponses": {"inlinedResponses": responses}}
        return {"name": batch.id, "metadata": meta, "done": batch.results is not None}
