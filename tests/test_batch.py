"""Batch mode (judge.backend.mode=batch) through the real openai / google-genai clients against the fake
server's batch endpoints: the same labels as online, resume after a kill, failed and expired lines."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from pathlib import Path

import openai  # noqa: F401 - imported once here, so the forked job below does not import it again
import pandas as pd
import pytest
from google import genai  # noqa: F401

from judgebench.data.datasets import Dataset
from judgebench.exceptions import BatchNotDone, ConfigError
from judgebench.judges.llm import LLMJudge
from judgebench.llm.api import GeminiBackend, OpenAIBackend
from judgebench.llm.batch import BatchLine, split_lines
from judgebench.llm.batch_settings import BatchSettings
from judgebench.llm.prompts import load_prompt
from judgebench.testing.fake_app import fake_label, sha256_hex
from judgebench.testing.fake_process import FakeLLMServer

BACKENDS = ["openai", "gemini"]
PRICE_IN, PRICE_OUT = 2.0, 8.0


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")


def fresh(srv: FakeLLMServer, **batch_kw) -> None:
    srv.reset()
    srv.reset_batches()
    srv.configure_batches(**{"polls_in_progress": 0, "seconds_in_progress": 0, "fail_share": 0.0, "expire": False,
                             "expire_done_share": 0.5, "seed": 0, **batch_kw})


def small_dataset(n_queries: int = 3, n_docs: int = 8) -> Dataset:
    queries = {f"q{i}": f"question {i} about zebras" for i in range(n_queries)}
    docs = {f"d{i}": f"passage {i} says something about topic {i % 3}" for i in range(n_docs)}
    pool = pd.DataFrame([(q, f"d{j}", float(n_docs - j), j + 1) for q in queries for j in range(n_docs)],
                        columns=["query_id", "doc_id", "score", "rank"])
    qrels = pool[["query_id", "doc_id"]].assign(relevance=0)
    return Dataset("batchy", queries, qrels, docs, pool)


def make_judge(base_url: str, cache_dir: str, backend: str, mode: str = "batch", **batch) -> LLMJudge:
    opts = dict(mode=mode, batch={"poll_interval_s": 0.02, **batch}, backoff_base_s=0.01, backoff_max_s=0.05,
                price_input_per_mtok=PRICE_IN, price_output_per_mtok=PRICE_OUT)
    if backend == "openai":
        be = OpenAIBackend("gpt-4o-mini", base_url=base_url + "/v1", **opts)
    else:
        be = GeminiBackend("gemini-2.5-flash-lite", base_url=base_url, **opts)  # thinking off: answers as without it
    return LLMJudge(name=f"batch-{backend}", family=backend, model=be.model, backend=be, cache_dir=cache_dir,
                    progress=False)


def prompts_of(ds: Dataset, pairs: pd.DataFrame) -> dict[tuple[str, str], str]:
    template = load_prompt("umbrela_bing")
    return {(q, d): template.render(query=ds.queries[q], passage=ds.corpus[d])
            for q, d in zip(pairs["query_id"], pairs["doc_id"])}


def saved_batches(cache_dir: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted((cache_dir / "batches").glob("batch-*.json"))]


@pytest.mark.parametrize("backend", BACKENDS)
def test_batch_labels_match_online_cost_half_and_a_later_online_run_makes_no_call(server, tmp_path, backend):
    fresh(server, polls_in_progress=2)
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    prompts = prompts_of(ds, pairs)
    result = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    assert result.failed.empty and len(result.labels) == len(pairs) == 24
    for q, d, label in result.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        assert label == fake_label(prompts[q, d])
    stats = server.batch_stats()
    assert stats["batches"] == 1 and stats["prompts_submitted"] == 24 and stats["polls"] == 3
    assert sorted(stats["submitted_sha256"]) == sorted(sha256_hex(p) for p in prompts.values())
    assert server.stats()["requests"] == 0  # no online request at all
    u = result.usage
    assert u.batches == 1 and u.calls_made == 24 and u.requests == 24
    # the fake counts words: input = the prompt's words, output = "##final score: N" (3 words)
    assert u.input_tokens == sum(len(p.split()) for p in prompts.values()) and u.output_tokens == 3 * 24
    online_price = (u.input_tokens * PRICE_IN + u.output_tokens * PRICE_OUT) / 1e6
    assert u.cost_usd == pytest.approx(online_price / 2) and u.cost_usd_labels == pytest.approx(online_price / 2)
    assert saved_batches(tmp_path) == []  # done: nothing left to resume

    separate = make_judge(server.base_url, str(tmp_path / "online"), backend, mode="online").judge(pairs, ds, ds.corpus)
    assert server.stats()["requests"] == 24 and separate.usage.cost_usd == pytest.approx(online_price)
    pd.testing.assert_frame_equal(separate.labels, result.labels)  # batch and online: the same labels

    online = make_judge(server.base_url, str(tmp_path), backend, mode="online").judge(pairs, ds, ds.corpus)
    assert server.stats()["requests"] == 24 and server.batch_stats()["batches"] == 1  # no new call of any kind
    assert online.usage.calls_cached == 24 and online.usage.cost_usd == 0
    assert online.usage.cost_usd_labels == pytest.approx(online_price / 2)  # the labels were paid at batch price
    pd.testing.assert_frame_equal(online.labels, result.labels)


@pytest.mark.parametrize("backend", BACKENDS)
def test_prompts_answered_online_are_not_submitted(server, tmp_path, backend):
    fresh(server)
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    first = pairs.iloc[:10]
    make_judge(server.base_url, str(tmp_path), backend, mode="online").judge(first, ds, ds.corpus)
    assert server.stats()["requests"] == 10
    result = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    prompts = prompts_of(ds, pairs)
    rest = [prompts[q, d] for q, d in zip(pairs["query_id"].iloc[10:], pairs["doc_id"].iloc[10:])]
    assert sorted(server.batch_stats()["submitted_sha256"]) == sorted(sha256_hex(p) for p in rest)
    assert result.usage.calls_cached == 10 and result.usage.calls_made == 14 and len(result.labels) == 24


def judge_in_child(base_url: str, cache_dir: str, backend: str) -> None:
    ds = small_dataset()
    make_judge(base_url, cache_dir, backend).judge(ds.label_set()[["query_id", "doc_id"]], ds, ds.corpus)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_job_killed_while_polling_is_resumed_and_pays_nothing_twice(server, tmp_path, backend):
    fresh(server, polls_in_progress=10**6)  # held in progress until released below
    # a forked child: the job is a separate process that dies without any clean-up, as under `kill -9`
    child = multiprocessing.get_context("fork").Process(target=judge_in_child,
                                                        args=(server.base_url, str(tmp_path), backend))
    child.start()
    try:
        deadline = time.monotonic() + 60
        while server.batch_stats()["polls"] < 3:
            assert child.is_alive(), f"the judging child exited ({child.exitcode}) before it was killed"
            assert time.monotonic() < deadline, "the child never polled its batch"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        assert child.exitcode == -signal.SIGKILL
    finally:
        if child.is_alive():
            child.kill()
            child.join(10)
    stats = server.batch_stats()
    (batch_id,) = stats["states"]
    assert stats["states"][batch_id] == "in_progress" and stats["prompts_submitted"] == 24
    saved = saved_batches(tmp_path)
    assert [s["batch_id"] for s in saved] == [batch_id] and len(saved[0]["keys"]) == 24

    server.configure_batches(polls_in_progress=0)  # the provider finishes the batch meanwhile
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    result = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    stats = server.batch_stats()
    assert stats["batches"] == 1 and stats["prompts_submitted"] == 24  # the same batch: 0 prompts paid twice
    assert len(set(stats["submitted_sha256"])) == 24 and stats["states"] == {batch_id: "completed"}
    assert len(result.labels) == 24 and result.failed.empty
    assert result.usage.batches == 0 and result.usage.calls_made == 24
    assert saved_batches(tmp_path) == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_failed_lines_are_reported_and_only_they_are_resubmitted(server, tmp_path, backend):
    fresh(server, fail_share=0.3, seed=5)
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    prompts = prompts_of(ds, pairs)
    first = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    failed_sha = server.batch_stats()["failed_sha256"]
    assert 0 < len(failed_sha) < 24
    assert len(first.failed) == len(failed_sha) and len(first.labels) == 24 - len(failed_sha)
    assert sorted(sha256_hex(prompts[q, d]) for q, d in zip(first.failed["query_id"], first.failed["doc_id"])) \
        == sorted(failed_sha)
    assert first.usage.calls_failed == len(failed_sha)
    assert sum(first.usage.errors.values()) == len(failed_sha)

    second = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    stats = server.batch_stats()
    assert stats["batches"] == 2 and stats["prompts_submitted"] == 24 + len(failed_sha)
    assert sorted(stats["submitted_sha256"][24:]) == sorted(failed_sha)  # only the failed ones, once each
    assert second.failed.empty and len(second.labels) == 24 and second.usage.calls_made == len(failed_sha)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_expired_batch_is_reported_per_prompt_and_resubmitted(server, tmp_path, backend):
    fresh(server, expire=True, expire_done_share=0.5)
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    first = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    # OpenAI returns what finished before expiry (its output file); Gemini returns nothing of an expired job
    answered = 12 if backend == "openai" else 0
    assert len(first.labels) == answered and len(first.failed) == 24 - answered
    assert set(first.failed["error"]) == {"batch_expired"}
    assert first.usage.errors == {"batch_expired": 24 - answered}

    server.configure_batches(expire=False)
    second = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    stats = server.batch_stats()
    assert stats["batches"] == 2 and stats["prompts_submitted"] == 24 + 24 - answered
    assert len(second.labels) == 24 and second.usage.calls_made == 24 - answered


def test_a_batch_past_its_timeout_stops_the_job_and_a_rerun_resumes_it(server, tmp_path):
    fresh(server, polls_in_progress=10**6)
    ds = small_dataset(1, 4)
    pairs = ds.label_set()[["query_id", "doc_id"]]
    with pytest.raises(BatchNotDone, match=r"still in_progress .*timeout_s=0.2.*run again to resume"):
        make_judge(server.base_url, str(tmp_path), "openai", timeout_s=0.2).judge(pairs, ds, ds.corpus)
    (saved,) = saved_batches(tmp_path)
    server.configure_batches(polls_in_progress=0)
    result = make_judge(server.base_url, str(tmp_path), "openai").judge(pairs, ds, ds.corpus)
    assert len(result.labels) == 4 and server.batch_stats()["batches"] == 1
    assert list(server.batch_stats()["states"]) == [saved["batch_id"]]


def test_a_label_set_above_the_limits_is_split_into_batches(server, tmp_path):
    fresh(server)
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    result = make_judge(server.base_url, str(tmp_path), "openai", max_requests=10).judge(pairs, ds, ds.corpus)
    assert server.batch_stats()["batches"] == 3 and result.usage.batches == 3 and len(result.labels) == 24


def test_split_lines_respects_count_and_bytes():
    lines = [BatchLine(str(i), "x" * n) for i, n in enumerate([5, 5, 5, 20, 1, 1, 1])]
    chunks = split_lines(lines, max_requests=2, max_bytes=12, size=lambda line: len(line.prompt))
    assert [[line.key for line in c] for c in chunks] == [["0", "1"], ["2"], ["3"], ["4", "5"], ["6"]]


def test_batch_settings_are_checked():
    assert BatchSettings.from_config({"price_factor": 0.4, "max_requests": 7}) == \
        BatchSettings(price_factor=0.4, max_requests=7)
    with pytest.raises(ConfigError, match=r"judge\.backend\.batch\.poll_interval_s=0: expected a positive number"):
        BatchSettings.from_config({"poll_interval_s": 0})
    with pytest.raises(ConfigError, match=r"unknown setting\(s\) \['poll_every'\]"):
        BatchSettings.from_config({"poll_every": 3})
    with pytest.raises(ConfigError, match=r"judge\.backend\.mode='offline': expected one of \['online', 'batch'\]"):
        OpenAIBackend("gpt-4o-mini", mode="offline")
    be = OpenAIBackend("gpt-4o-mini", price_input_per_mtok=1.0, price_output_per_mtok=4.0, batch={"price_factor": 0.25})
    assert be.cost(1_000_000, 1_000_000) == 5.0 and be.cost(1_000_000, 1_000_000, batch=True) == 1.25
    assert GeminiBackend("gemini-2.5-flash-lite").batch.max_bytes == 20_000_000  # inline requests: Gemini's limit
    assert OpenAIBackend("gpt-4o-mini").batch == BatchSettings(max_requests=50_000, max_bytes=200_000_000)


def test_a_server_without_a_batch_api_is_a_one_line_error(server, tmp_path):
    fresh(server)
    ds = small_dataset(1, 2)
    judge = make_judge(server.base_url + "/no-batch-api", str(tmp_path), "openai")
    with pytest.raises(ConfigError, match=r"refused a batch of 2 prompts \(404: .*mode=online works without"):
        judge.judge(ds.label_set()[["query_id", "doc_id"]], ds, ds.corpus)
    assert server.batch_stats()["batches"] == 0 and saved_batches(tmp_path) == []


def test_mode_and_batch_settings_leave_the_judge_identity_alone():
    from judgebench.identity import component_hash
    from judgebench.tracking import cell_config

    online = {"name": "j", "backend": {"model": "gpt-4o-mini", "temperature": 0.0}}
    batch = {"name": "j", "backend": {"model": "gpt-4o-mini", "temperature": 0.0, "mode": "batch",
                                      "batch": {"poll_interval_s": 5, "max_requests": 10, "price_factor": 0.5}}}
    assert component_hash(online) == component_hash(batch)
    assert cell_config({"judge": batch}) == cell_config({"judge": online}) == {
        "judge.name": "j", "judge.backend.model": "gpt-4o-mini", "judge.backend.temperature": 0.0}
