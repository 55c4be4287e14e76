"""The adaptive concurrency window: its arithmetic on scripted outcomes (windows computed by hand), and the
real OpenAI client against the fake server's in-flight limit (the window finds the limit, few 429s)."""

from __future__ import annotations

import asyncio
import time

import pytest

from judgebench.exceptions import ConfigError
from judgebench.llm.remote.api import OpenAIBackend, TransientError
from judgebench.llm.remote.concurrency import AdaptiveConcurrency, parse_duration, rate_limit_hold
from judgebench.testing.fake_app import FakeConfig, fake_label
from judgebench.testing.fake_process import FakeLLMServer


def run(coro):
    return asyncio.run(coro)


async def fill(limit: AdaptiveConcurrency, n: int) -> list:
    return [await limit.acquire() for _ in range(n)]


async def blocked(limit: AdaptiveConcurrency) -> bool:
    """Whether one more acquire waits (the event loop is given a few turns to grant it)."""
    task = asyncio.ensure_future(limit.acquire())
    for _ in range(5):
        await asyncio.sleep(0)
    if task.done():
        limit.release(task.result(), "other")
        return False
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return True


def test_slow_start_then_one_decrease_per_window_then_additive_increase():
    async def script():
        lim = AdaptiveConcurrency(10, floor=2, initial=4, decrease=0.5, probe_successes=8, slow_start_step=1.0)
        s = await fill(lim, 4)
        assert [x.seq for x in s] == [0, 1, 2, 3] and [x.in_flight for x in s] == [1, 2, 3, 4]
        assert lim.window == 4 and await blocked(lim)
        lim.release(s[0], "ok")  # slow start: +1 per success
        lim.release(s[1], "ok")
        assert lim.limit == 6.0 and lim.in_flight == 2
        s += await fill(lim, 4)  # seq 4..7, in flight 3..6
        assert [x.in_flight for x in s[4:]] == [3, 4, 5, 6] and await blocked(lim)
        lim.release(s[7], "overload")  # refused with 6 in flight: 6 * 0.5
        assert lim.limit == 3.0 and lim.failed_at == 6 and lim.decreases == 1
        lim.release(s[6], "overload")  # sent before the decrease: the same burst, no second halving
        assert lim.limit == 3.0 and lim.decreases == 1 and lim.overloads == 2
        assert lim.failed_at == 5  # refused with 5 in flight: the lowest level that failed
        assert lim.in_flight == 4 and lim.window == 3 and await blocked(lim)
        lim.release(s[2], "ok")  # additive now: +1/limit per success
        assert lim.limit == pytest.approx(3 + 1 / 3)
        lim.release(s[3], "ok")
        assert lim.limit == pytest.approx(10 / 3 + 3 / 10)
        lim.release(s[4], "other")  # says nothing about load
        assert lim.limit == pytest.approx(109 / 30) and lim.in_flight == 1
        t = await fill(lim, 2)  # window 3, one in flight: seq 8 and 9, sent after the decrease
        assert [x.seq for x in t] == [8, 9]
        lim.release(t[1], "overload")  # a new window: decreases again, from min(limit, 3 in flight)
        assert lim.limit == pytest.approx(2.0) and lim.failed_at == 3 and lim.decreases == 2
        lim.release(s[5], "overload")  # old burst
        lim.release(t[0], "ok")
        # band [failed_at - 1, failed_at) = [2, 3): one slot takes probe_successes (8) successes here
        assert lim.limit == pytest.approx(2 + 1 / 8)
        assert lim.in_flight == 0 and lim.window == 2

    run(script())


def test_refusals_of_one_burst_cap_the_window_below_their_in_flight_count():
    async def script():
        lim = AdaptiveConcurrency(16, initial=8, decrease=0.5)
        s = await fill(lim, 8)
        lim.release(s[7], "overload")  # first back: refused with 8 in flight -> min(8 * 0.5, 7)
        assert lim.limit == 4.0 and lim.failed_at == 8
        more = AdaptiveConcurrency(16, initial=8, decrease=0.9)
        s = await fill(more, 8)
        more.release(s[7], "overload")  # min(8 * 0.9, 7) = 7
        assert more.limit == pytest.approx(7.0)
        more.release(s[4], "overload")  # same burst, refused with 5 in flight: capped at 4, no 0.9 cut
        assert more.limit == 4.0 and more.failed_at == 5 and more.decreases == 1
        more.release(s[6], "overload")  # refused with 7 in flight: the cap of 6 is above the window
        assert more.limit == 4.0 and more.failed_at == 5 and more.overloads == 3

        default = AdaptiveConcurrency(64, initial=8)  # slow start adds half a slot per success
        s = await fill(default, 8)
        for x in s[:4]:
            default.release(x, "ok")
        assert default.limit == 10.0 and default.window == 10

    run(script())


def test_floor_ceiling_and_the_probe_band():
    async def script():
        lim = AdaptiveConcurrency(5, floor=2, initial=3, decrease=0.5, slow_start_step=1.0)
        s = await fill(lim, 3)
        for x in s:
            lim.release(x, "ok")
        assert lim.limit == 5.0  # 3 + 3, capped at the ceiling
        for _ in range(3):  # three windows, each refused at once: never below the floor
            (x,) = await fill(lim, 1)
            lim.release(x, "overload")
        assert lim.limit == 2.0 and lim.decreases == 3

        probe = AdaptiveConcurrency(20, initial=10, decrease=0.9, probe_successes=20)
        s = await fill(probe, 10)
        probe.release(s[9], "overload")  # refused with 10 in flight: 9.0, inside [9, 10)
        assert probe.limit == pytest.approx(9.0) and probe.failed_at == 10
        for k in range(1, 5):
            probe.release(s[k - 1], "ok")
            assert probe.limit == pytest.approx(9 + k / 20)  # 1/max(limit, 20) per success, not 1/9

    run(script())


def test_fixed_mode_is_a_plain_semaphore():
    async def script():
        lim = AdaptiveConcurrency(3, initial=1, adaptive=False)
        s = await fill(lim, 3)  # initial is ignored: the window is max_concurrency
        assert await blocked(lim)
        lim.release(s[0], "overload", {"x-ratelimit-remaining-requests": "0"}, 5.0)
        assert lim.window == 3 and lim.overloads == 1 and lim.decreases == 0
        assert not await blocked(lim)  # the slot is free again and nothing holds

    run(script())


def test_a_cancelled_waiter_leaks_no_slot_and_slot_classifies_exceptions():
    async def script():
        lim = AdaptiveConcurrency(1, initial=1)
        (x,) = await fill(lim, 1)
        assert await blocked(lim)  # cancels the waiter
        lim.release(x, "ok")
        assert lim.in_flight == 0 and not lim._waiters
        lim2 = AdaptiveConcurrency(8, initial=4, decrease=0.5)
        with pytest.raises(TransientError):
            async with lim2.slot():
                raise TransientError("429", "slow down", 0.1)  # kind 429 is an overload
        assert lim2.limit == 1.0 and lim2.failed_at == 1  # refused with 1 in flight: 0.5, raised to the floor
        with pytest.raises(TransientError):
            async with lim2.slot():
                raise TransientError("5xx", "boom")  # a 500 is not an overload
        assert lim2.decreases == 1 and lim2.in_flight == 0
        async with lim2.slot():
            pass
        assert lim2.limit == pytest.approx(1.0 + 1.0)  # 1 + 1/1 (additive after an overload)

    run(script())


def test_rate_limit_headers_and_durations():
    assert parse_duration("1s") == 1 and parse_duration("6m0s") == 360 and parse_duration("20ms") == pytest.approx(0.02)
    assert parse_duration("1h2m3.5s") == pytest.approx(3723.5) and parse_duration("0.25") == 0.25
    assert parse_duration("soon") is None and parse_duration(None) is None
    used_up = {
        "x-ratelimit-remaining-requests": "0",
        "x-ratelimit-reset-requests": "850ms",
        "x-ratelimit-remaining-tokens": "1200",
        "x-ratelimit-reset-tokens": "3s",
    }
    assert rate_limit_hold(used_up) == pytest.approx(0.85)
    assert rate_limit_hold(used_up, retry_after=0.3) == pytest.approx(0.3)  # the server's own advice first
    assert rate_limit_hold({**used_up, "x-ratelimit-remaining-tokens": "0"}) == pytest.approx(3.0)  # the longer
    assert rate_limit_hold({"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "1s"}) is None
    assert (
        rate_limit_hold({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s"}) == 60
    )  # capped
    assert rate_limit_hold(None) is None


def test_an_announced_rpm_limit_paces_the_requests():
    async def script():
        lim = AdaptiveConcurrency(8, initial=4)
        s = await fill(lim, 3)
        lim.release(s[0], "overload", {"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "3"})
        assert lim.paced_rpm == pytest.approx(600 * 0.97)
        lim.release(s[1], "overload", {"x-ratelimit-limit-requests": "1200"})  # a higher one does not raise it
        assert lim.paced_rpm == pytest.approx(582)
        lim.release(s[2], "ok", {"x-ratelimit-limit-requests": "60"})  # only refusals are listened to
        assert lim.paced_rpm == pytest.approx(582)
        gap = 60 / 582
        before = time.monotonic()
        first, second = await fill(lim, 2)  # evenly spaced: the second goes at least 60 / 582 s after the first
        waited = time.monotonic() - before
        assert [first.seq, second.seq] == [3, 4]
        assert waited >= 0.99 * gap and lim._next_send >= before + 2 * gap

    run(script())


def test_the_fake_servers_limits_answer_429_with_headers():
    import aiohttp

    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    auth = {"Authorization": "Bearer k"}

    async def post(url: str, n: int, together: bool) -> list[tuple[int, dict]]:
        async with aiohttp.ClientSession() as client:

            async def one():
                async with client.post(url + "/chat/completions", json=body, headers=auth) as r:
                    await r.read()
                    return r.status, {k.lower(): v for k, v in r.headers.items()}

            if together:
                return list(await asyncio.gather(*(one() for _ in range(n))))
            return [await one() for _ in range(n)]

    with FakeLLMServer(latency_s=1.0, max_inflight=2, retry_after_s=0.25) as srv:
        codes = sorted(code for code, _ in asyncio.run(post(srv.openai_base_url, 3, True)))
        refused = [h for code, h in asyncio.run(post(srv.openai_base_url, 3, True)) if code == 429]
        stats = srv.stats()
    assert codes == [200, 200, 429] and len(refused) == 1
    assert refused[0]["retry-after"] == "0.25" and refused[0]["retry-after-ms"] == "250"
    assert stats["limited"] == {"inflight": 2, "rpm": 0} and stats["max_in_flight"] == 2
    assert stats["by_outcome"]["429"] == 2 and stats["by_outcome"]["ok"] == 4 and len(stats["prompt_sha256"]) == 4

    with FakeLLMServer(limit_rpm=6) as srv:  # a bucket of one request, refilled at one per 10 s
        r = asyncio.run(post(srv.openai_base_url, 2, False))
        stats = srv.stats()
    assert [code for code, _ in r] == [200, 429]
    assert [h["x-ratelimit-remaining-requests"] for _, h in r] == ["0", "0"]
    assert all(h["x-ratelimit-limit-requests"] == "6" for _, h in r)
    assert 9 < parse_duration(r[0][1]["x-ratelimit-reset-requests"]) <= 10  # a full bucket in 10 s
    assert 9 < float(r[1][1]["retry-after"]) <= 10  # one request's worth, just used
    assert stats["limited"] == {"inflight": 0, "rpm": 1}


def test_settings_are_checked():
    with pytest.raises(ConfigError, match="min_concurrency=9"):
        OpenAIBackend("m", max_concurrency=8, min_concurrency=9)
    with pytest.raises(ConfigError, match="initial_concurrency=0"):
        OpenAIBackend("m", initial_concurrency=0)
    from omegaconf import OmegaConf

    from judgebench.checks.settings import problems

    cfg = OmegaConf.create(
        {"judge": {"backend": {"adaptive": "yes", "min_concurrency": 0, "initial_concurrency": None}}}
    )
    assert sorted(problems(cfg)) == [
        "judge.backend.adaptive='yes': expected true or false",
        "judge.backend.min_concurrency=0: expected an integer >= 1",
    ]
    with pytest.raises(ValueError, match="max_inflight must be >= 0"):
        FakeConfig().updated(max_inflight=-1)


def synthetic_dataset(n_pairs: int):
    """n_pairs (query, passage) pairs with distinct prompts."""
    import pandas as pd

    from judgebench.data.datasets import Dataset

    queries = {f"q{i}": f"question {i} about rivers and banks" for i in range(-(-n_pairs // 20))}
    corpus = {
        f"d{i}": f"passage {i}: " + " ".join(f"word{(i * 7 + k) % 97}" for k in range(40)) for i in range(n_pairs)
    }
    pool = pd.DataFrame(
        [(f"q{i // 20}", f"d{i}", 1.0, i % 20 + 1) for i in range(n_pairs)],
        columns=["query_id", "doc_id", "score", "rank"],
    )
    qrels = pool[["query_id", "doc_id"]].assign(relevance=[i % 4 for i in range(n_pairs)])
    return Dataset("synthetic", queries, qrels, corpus, pool)


def test_the_window_finds_the_servers_in_flight_limit(tmp_path, monkeypatch):
    """max_inflight=K far below max_concurrency: every pair judged, under 2 % 429s, the window ends near K."""
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.prompts import load_prompt

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    K, N = 4, 400
    dataset = synthetic_dataset(N)
    pairs = dataset.label_set()[["query_id", "doc_id"]]
    with FakeLLMServer(latency_s=0.1, max_inflight=K, retry_after_s=0.05) as srv:
        backend = OpenAIBackend(
            "gpt-4o-mini",
            base_url=srv.openai_base_url,
            max_concurrency=8 * K,
            adaptive=True,
            initial_concurrency=2,
            backoff_base_s=0.01,
        )
        judge = LLMJudge(
            name="aimd", family="openai", model="gpt-4o-mini", backend=backend, cache_dir=str(tmp_path), progress=False
        )
        result = judge.judge(pairs, dataset, dataset.corpus)
        stats = srv.stats()
    assert len(result.labels) == N and result.failed.empty
    template = load_prompt("umbrela_bing")
    for q, d, label in result.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        assert label == fake_label(template.render(query=dataset.queries[q], passage=dataset.corpus[d]))
    refused = stats["by_outcome"]["429"]
    assert refused == stats["limited"]["inflight"] == result.usage.errors.get("429", 0)
    assert stats["requests"] == N + refused and refused / stats["requests"] < 0.02
    assert stats["max_in_flight"] == K  # the window reached the limit (and the server never let more in)
    window = backend.concurrency
    assert window.decreases >= 1 and K - 1 <= window.window <= K + 2, window.summary()


def test_gemini_resource_exhausted_shrinks_the_window(tmp_path, monkeypatch):
    """Gemini's 429 (RESOURCE_EXHAUSTED) through google-genai is an overload too: a window started above the
    server's limit comes down to it, and every refused request is retried into a label."""
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.remote.api import GeminiBackend

    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    K, N = 2, 30
    dataset = synthetic_dataset(N)
    pairs = dataset.label_set()[["query_id", "doc_id"]]
    with FakeLLMServer(latency_s=0.2, max_inflight=K, retry_after_s=0.05) as srv:
        backend = GeminiBackend(
            "gemini-3.8-flash",
            base_url=srv.gemini_base_url,
            max_concurrency=16,
            adaptive=True,
            initial_concurrency=8,
            backoff_base_s=0.01,
        )
        judge = LLMJudge(
            name="aimd-gemini",
            family="gemini",
            model="gemini-3.8-flash",
            backend=backend,
            cache_dir=str(tmp_path),
            progress=False,
        )
        result = judge.judge(pairs, dataset, dataset.corpus)
        stats = srv.stats()
    assert len(result.labels) == N and result.failed.empty
    assert stats["by_kind"]["gemini"] == stats["requests"] and stats["limited"]["inflight"] >= 1
    window = backend.concurrency
    assert window.overloads == stats["by_outcome"]["429"] and window.decreases >= 1
    assert window.failed_at is not None and window.window < 8, window.summary()  # came down from the initial 8
