"""The fake LLM server, driven by the real official clients (openai, google-genai) over real HTTP.

These tests pin both the fake's behaviour (deterministic answers, seeded faults, counters) and what each
client raises for each fault, which is what the LLM backends must handle.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from urllib.parse import urlparse

import httpx2
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from judgebench.testing.fake_app import (
    NOSCORE_TEXT,
    fake_answer,
    fake_label,
    sha256_hex,
)
from judgebench.testing.fake_config import FakeConfig, draw_outcome
from judgebench.testing.fake_process import FakeLLMServer

JUDGE_PROMPTS = [
    f"Query: {q}\nPassage: {p}\nRate 0-3. Answer as ##final score: N"
    for q, p in [
        ("cats", "cats purr"),
        ("dogs", "dogs bark"),
        ("tax law", "the 1040 form"),
        ("x", "y"),
        ("a b", "c d e"),
        ("zebra facts", "zebras have stripes"),
        ("mars", "red planet"),
        ("rust", "borrow checker"),
    ]
]


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (a container's PID 1 may never reap orphans)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv
    assert not _alive(srv.pid)


@pytest.fixture
def srv(server: FakeLLMServer) -> FakeLLMServer:
    """The shared server, back to default settings and zeroed counters for each test."""
    server.configure(**asdict(FakeConfig()))
    server.reset()
    return server


@pytest.fixture
def client(srv: FakeLLMServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=srv.openai_base_url, api_key="test-key", max_retries=0) as c:
        yield c


def _chat(client: openai.OpenAI, prompt: str, **kw: object) -> str:
    r = client.chat.completions.create(model="fake-judge", messages=[{"role": "user", "content": prompt}], **kw)
    return r.choices[0].message.content or ""


def _gemini(srv: FakeLLMServer, **http: object) -> genai.Client:
    return genai.Client(api_key="x", http_options=types.HttpOptions(base_url=srv.base_url, **http))


# ---------------------------------------------------------------- OpenAI: answers


def test_openai_judge_answers_usage_and_request(client: openai.OpenAI, srv: FakeLLMServer) -> None:
    labels = set()
    for prompt in JUDGE_PROMPTS:
        r = client.chat.completions.create(
            model="fake-judge",
            temperature=0,
            top_p=1,
            max_tokens=20,
            messages=[{"role": "system", "content": "You are a judge."}, {"role": "user", "content": prompt}],
        )
        text = r.choices[0].message.content
        assert text == f"##final score: {fake_label(prompt)}" == fake_answer(prompt)
        assert r.object == "chat.completion" and r.model == "fake-judge" and r.choices[0].finish_reason == "stop"
        assert r.usage is not None
        assert (r.usage.prompt_tokens, r.usage.completion_tokens) == (len(prompt.split()), 3)
        assert r.usage.total_tokens == len(prompt.split()) + 3
        labels.add(fake_label(prompt))
    assert len(labels) >= 3  # the prompts above exercise several labels
    body = srv.stats()["last_request"]["body"]
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0, 1, 20)


def test_openai_label_override_first_match_wins(client: openai.OpenAI, srv: FakeLLMServer) -> None:
    srv.configure(labels={"zebra": 3, "stripes": 1, "cats": 0})
    assert _chat(client, JUDGE_PROMPTS[5]) == "##final score: 3"  # holds both "zebra" and "stripes"
    assert _chat(client, "Passage: black and white stripes ##final score") == "##final score: 1"
    assert _chat(client, JUDGE_PROMPTS[0]) == "##final score: 0"
    assert _chat(client, JUDGE_PROMPTS[6]) == f"##final score: {fake_label(JUDGE_PROMPTS[6])}"


def _prp(a: str, b: str) -> str:
    return (
        f'Given a query "animals", which of the following two passages is more relevant to the query?\n\n'
        f'Passage A: "{a}"\n\nPassage B: "{b}"\n\nOutput Passage A or Passage B:'
    )


def test_openai_pairwise_and_prefer(client: openai.OpenAI, srv: FakeLLMServer) -> None:
    seen = set()
    for i in range(12):
        prompt = _prp(f"passage {i}", f"other {i}")
        answer = _chat(client, prompt)
        assert answer == fake_answer(prompt) and answer in ("Passage A", "Passage B")
        seen.add(answer)
    assert seen == {"Passage A", "Passage B"}
    srv.configure(prefer=["zebra"])
    assert _chat(client, _prp("a horse", "a zebra")) == "Passage B"
    assert _chat(client, _prp("a zebra", "a horse")) == "Passage A"
    both = _prp("zebra one", "zebra two")  # not decisive: falls back to the sha choice
    assert _chat(client, both) == fake_answer(both)


def test_openai_rewrite_other_and_models(client: openai.OpenAI) -> None:
    prompt = "Please rewrite the following text:\nCats purr. Dogs bark! Do fish sleep?"
    assert _chat(client, prompt) == "In other words: Do fish sleep? Dogs bark! Cats purr."
    assert _chat(client, "Hello there") == "OK"
    assert "fake-judge" in {m.id for m in client.models.list()}


# ---------------------------------------------------------------- OpenAI: concurrency


def test_async_openai_concurrency_is_real(srv: FakeLLMServer) -> None:
    srv.configure(latency_s=0.2)

    async def run() -> tuple[list[str], float]:
        async with openai.AsyncOpenAI(base_url=srv.openai_base_url, api_key="test-key", max_retries=0) as c:
            t0 = time.perf_counter()
            rs = await asyncio.gather(
                *[
                    c.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": f"doc {i} ##final score"}]
                    )
                    for i in range(32)
                ]
            )
            return [r.choices[0].message.content or "" for r in rs], time.perf_counter() - t0

    answers, elapsed = asyncio.run(run())
    assert answers == [fake_answer(f"doc {i} ##final score") for i in range(32)]
    assert elapsed < 2.0, f"32 x 0.2 s took {elapsed:.2f} s: requests were serialised"
    stats = srv.stats()
    assert stats["max_in_flight"] >= 16 and stats["in_flight"] == 0
    assert stats["by_outcome"]["ok"] == stats["by_kind"]["openai"] == 32


# ---------------------------------------------------------------- OpenAI: faults


def test_openai_fault_exception_types(client: openai.OpenAI, srv: FakeLLMServer) -> None:
    srv.configure(fail_429=1.0, retry_after_s=0.25)
    with pytest.raises(openai.RateLimitError) as rate:
        _chat(client, "x ##final score")
    assert rate.value.status_code == 429
    assert rate.value.response.headers["retry-after"] == "0.25"
    assert rate.value.response.headers["retry-after-ms"] == "250"
    assert rate.value.body["code"] == "rate_limit_exceeded"  # type: ignore[index]

    srv.configure(fail_429=0.0, fail_500=1.0)
    with pytest.raises(openai.InternalServerError):
        _chat(client, "x ##final score")

    srv.configure(fail_500=0.0, fail_timeout=1.0)
    t0 = time.perf_counter()
    with pytest.raises(openai.APITimeoutError):
        _chat(client, "x ##final score", timeout=0.5)
    assert time.perf_counter() - t0 < 5

    # a 200 with a broken application/json body: openai does not wrap the decode error
    srv.configure(fail_timeout=0.0, fail_malformed=1.0)
    with pytest.raises(json.JSONDecodeError):
        _chat(client, "x ##final score")

    srv.configure(fail_malformed=0.0, fail_noscore=1.0)
    assert _chat(client, "x ##final score") == NOSCORE_TEXT
    assert srv.stats()["by_outcome"] == {
        "ok": 0,
        "429": 1,
        "500": 1,
        "timeout": 1,
        "malformed": 1,
        "noscore": 1,
        "unauthorized": 0,
        "bad_request": 0,
        "not_found": 0,
    }


def test_seeded_faults_match_client_exceptions_exactly(client: openai.OpenAI, srv: FakeLLMServer) -> None:
    srv.configure(seed=1234, fail_429=0.2, fail_500=0.1)

    def run() -> list[str]:
        seen = []
        for i in range(200):
            try:
                _chat(client, f"q{i} ##final score")
                seen.append("ok")
            except openai.RateLimitError:
                seen.append("429")
            except openai.InternalServerError:
                seen.append("500")
        return seen

    seen = run()
    counts = Counter(seen)
    by_outcome = srv.stats()["by_outcome"]
    assert {k: by_outcome[k] for k in ("ok", "429", "500")} == {k: counts[k] for k in ("ok", "429", "500")}
    assert sum(by_outcome.values()) == 200 and 20 < counts["429"] < 60 and 5 < counts["500"] < 35
    # the same sequence the seeded RNG gives outside the server (sequential requests: arrival order = send order)
    rng, cfg = random.Random(1234), FakeConfig(fail_429=0.2, fail_500=0.1)
    assert seen == [draw_outcome(rng, cfg) for _ in range(200)]
    srv.reset()  # restarts the RNG: a rerun is identical
    assert run() == seen


# ---------------------------------------------------------------- google-genai


def test_genai_sync_and_async(srv: FakeLLMServer) -> None:
    prompt = JUDGE_PROMPTS[2]
    config = types.GenerateContentConfig(temperature=0, top_p=1, system_instruction="You are a judge.")
    g = _gemini(srv)
    r = g.models.generate_content(model="gemini-3.8-flash", contents=prompt, config=config)
    assert r.text == fake_answer(prompt)
    assert r.usage_metadata is not None
    assert r.usage_metadata.prompt_token_count == len(prompt.split())
    assert r.usage_metadata.candidates_token_count == 3
    # no thinking config: a Gemini 3 model thinks anyway (dynamic), as the real API does
    assert r.usage_metadata.thoughts_token_count == FakeConfig().thoughts
    assert r.usage_metadata.total_token_count == len(prompt.split()) + 3 + FakeConfig().thoughts
    assert r.model_version == "gemini-3.8-flash"
    last = srv.stats()["last_request"]
    assert last["path"] == "/v1/models/gemini-3.8-flash:generateContent"  # google-genai's default api_version
    assert last["headers"]["x-goog-api-key"] == "x"
    assert last["body"]["generationConfig"] == {"temperature": 0.0, "topP": 1.0}
    assert last["body"]["systemInstruction"]["parts"] == [{"text": "You are a judge."}]

    async def run() -> types.GenerateContentResponse:
        a = _gemini(srv, api_version="v1beta").aio
        try:
            return await a.models.generate_content(
                model="gemini-3.1-pro-preview", contents=JUDGE_PROMPTS[3], config=config
            )
        finally:
            await a.aclose()

    r = asyncio.run(run())
    assert r.text == fake_answer(JUDGE_PROMPTS[3])
    assert r.usage_metadata is not None and r.usage_metadata.prompt_token_count == len(JUDGE_PROMPTS[3].split())
    assert srv.stats()["last_request"]["path"] == "/v1beta/models/gemini-3.1-pro-preview:generateContent"
    assert srv.stats()["by_kind"] == {"openai": 0, "gemini": 2}


def test_genai_fault_exception_types(srv: FakeLLMServer) -> None:
    g = _gemini(srv, timeout=500)  # milliseconds

    def call() -> str | None:
        return g.models.generate_content(model="gemini-3.8-flash", contents="x ##final score").text

    async def acall() -> str | None:
        a = _gemini(srv, timeout=500).aio
        try:
            return (await a.models.generate_content(model="gemini-3.8-flash", contents="x ##final score")).text
        finally:
            await a.aclose()

    srv.configure(fail_429=1.0)
    for run in (call, lambda: asyncio.run(acall())):
        with pytest.raises(genai_errors.ClientError) as err:
            run()
        assert err.value.code == 429 and err.value.status == "RESOURCE_EXHAUSTED"
    srv.configure(fail_429=0.0, fail_500=1.0)
    for run in (call, lambda: asyncio.run(acall())):
        with pytest.raises(genai_errors.ServerError) as err5:
            run()
        assert err5.value.code == 500
    srv.configure(fail_500=0.0, fail_malformed=1.0)
    for run in (call, lambda: asyncio.run(acall())):
        with pytest.raises(json.JSONDecodeError):
            run()
    # timeouts are not wrapped: httpx2 (sync transport) and aiohttp/asyncio (async transport) raise their own
    srv.configure(fail_malformed=0.0, fail_timeout=1.0)
    with pytest.raises(httpx2.TimeoutException):
        call()
    with pytest.raises(TimeoutError):
        asyncio.run(acall())
    srv.configure(fail_timeout=0.0, fail_noscore=1.0)
    assert call() == NOSCORE_TEXT


# ---------------------------------------------------------------- auth, counters, binding, processes


def _post(url: str, payload: object, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    req = urllib.request.Request(
        url,
        data=json.dumps(payload).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_auth_required(srv: FakeLLMServer) -> None:
    chat = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    for headers in ({}, {"Authorization": "Bearer "}, {"Authorization": "Basic abc"}):
        status, body = _post(srv.openai_base_url + "/chat/completions", chat, headers)
        assert status == 401
        assert set(body["error"]) == {"message", "type", "param", "code"}
    assert _post(srv.openai_base_url + "/chat/completions", chat, {"Authorization": "Bearer k"})[0] == 200
    gem = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    status, body = _post(srv.base_url + "/v1beta/models/g:generateContent", gem)
    assert status == 403 and body["error"]["status"] == "PERMISSION_DENIED"
    assert _post(srv.base_url + "/v1beta/models/g:generateContent?key=k", gem)[1]["candidates"][0]["content"] == {
        "role": "model",
        "parts": [{"text": "OK"}],
    }
    assert srv.stats()["by_outcome"]["unauthorized"] == 4


def test_counters_and_reset(client: openai.OpenAI, srv: FakeLLMServer) -> None:
    for prompt in ["same ##final score"] * 3 + ["other"]:
        _chat(client, prompt)
    g = _gemini(srv)  # keep a reference: a collected genai.Client closes its transport
    g.models.generate_content(model="g", contents="same ##final score")
    stats = srv.stats()
    assert stats["requests"] == 5 and stats["by_kind"] == {"openai": 4, "gemini": 1}
    assert Counter(stats["prompt_sha256"]) == {sha256_hex("same ##final score"): 4, sha256_hex("other"): 1}
    assert stats["max_in_flight"] == 1 and stats["in_flight"] == 0
    srv.reset()
    stats = srv.stats()
    assert stats["requests"] == 0 and stats["prompt_sha256"] == [] and set(stats["by_outcome"].values()) == {0}
    assert stats["config"] == asdict(FakeConfig())  # reset keeps the settings
    with pytest.raises(ValueError, match="unknown"):
        srv.configure(fail_418=0.5)
    with pytest.raises(ValueError, match="sum"):
        srv.configure(fail_429=0.7, fail_500=0.7)
    status, body = _post(srv.base_url + "/_config", {"nonsense": 1})  # the server validates too
    assert status == 400 and "unknown" in body["error"]


def test_binds_loopback_only(srv: FakeLLMServer) -> None:
    assert urlparse(srv.base_url).hostname == "127.0.0.1"
    assert srv.stats()["bound"] == [["127.0.0.1", srv.port]]
    if not Path("/proc/net/tcp").exists():
        pytest.skip("no /proc/net/tcp to inspect listening sockets")
    listening = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if Path(table).exists():
            for line in Path(table).read_text().splitlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                addr, port = local.split(":")
                if state == "0A" and int(port, 16) == srv.port:
                    listening.append(addr)
    assert listening == ["0100007F"]  # 127.0.0.1, IPv4 only: not 0.0.0.0, not ::


def test_close_leaves_no_process() -> None:
    srv = FakeLLMServer()
    pid = srv.pid
    assert _alive(pid)
    srv.close()
    srv.close()  # idempotent
    assert not _alive(pid)


def test_server_dies_with_killed_parent(tmp_path: Path) -> None:
    """A parent killed with SIGKILL runs no cleanup: the server must notice its pipe closing and exit."""
    code = (
        "import os, signal\nfrom judgebench.testing.fake_process import FakeLLMServer\n"
        "srv = FakeLLMServer()\nprint(srv.pid, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGKILL, out.stderr
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
        pytest.fail(f"server process {pid} outlived its killed parent")


def test_cli_foreground() -> None:
    with subprocess.Popen(
        [
            sys.executable,
            "-m",
            "judgebench.testing.fake_process",
            "--port",
            "0",
            "--label",
            "zebra=2",
            "--fail-429",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as proc:
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            url = next(w for w in line.split() if w.startswith("http://127.0.0.1:"))
            with openai.OpenAI(base_url=url + "/v1", api_key="k", max_retries=0) as c:
                assert _chat(c, "a zebra ##final score") == "##final score: 2"
        finally:
            proc.terminate()
            proc.wait(10)
