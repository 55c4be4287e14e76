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
from judgebench.exceptions import BatchNotDone, CacheError, ConfigError
from judgebench.judges.llm import LLMJudge
from judgebench.llm.batch_api import batch_store
from judgebench.llm.batch_api.batch import split_lines
from judgebench.llm.batch_api.batch_provider import BatchLine
from judgebench.llm.prompts import load_prompt
from judgebench.llm.remote.api import GeminiBackend, OpenAIBackend
from judgebench.llm.remote.batch_settings import BatchSettings
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
    srv.configure_batches(
        **{
            "polls_in_progress": 0,
            "seconds_in_progress": 0,
            "fail_share": 0.0,
            "expire": False,
            "expire_done_share": 0.5,
            "poll_500": False,
            "seed": 0,
            **batch_kw,
        }
    )


def small_dataset(n_queries: int = 3, n_docs: int = 8) -> Dataset:
    queries = {f"q{i}": f"question {i} about zebras" for i in range(n_queries)}
    docs = {f"d{i}": f"passage {i} says something about topic {i % 3}" for i in range(n_docs)}
    pool = pd.DataFrame(
        [(q, f"d{j}", float(n_docs - j), j + 1) for q in queries for j in range(n_docs)],
        columns=["query_id", "doc_id", "score", "rank"],
    )
    qrels = pool[["query_id", "doc_id"]].assign(relevance=0)
    return Dataset("batchy", queries, qrels, docs, pool)


def make_judge(base_url: str, cache_dir: str, backend: str, mode: str = "batch", **batch) -> LLMJudge:
    opts = dict(
        mode=mode,
        batch={"poll_interval_s": 0.02, **batch},
        backoff_base_s=0.01,
        backoff_max_s=0.05,
        price_input_per_mtok=PRICE_IN,
        price_output_per_mtok=PRICE_OUT,
    )
    if backend == "openai":
        be = OpenAIBackend("gpt-4o-mini", base_url=base_url + "/v1", **opts)
    else:
        be = GeminiBackend("gemini-2.5-flash-lite", base_url=base_url, **opts)  # thinking off: answers as without it
    return LLMJudge(
        name=f"batch-{backend}", family=backend, model=be.model, backend=be, cache_dir=cache_dir, progress=False
    )


def prompts_of(ds: Dataset, pairs: pd.DataFrame) -> dict[tuple[str, str], str]:
    template = load_prompt("umbrela_bing")
    return {
        (q, d): template.render(query=ds.queries[q], passage=ds.corpus[d])
        for q, d in zip(pairs["query_id"], pairs["doc_id"])
    }


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
    child = multiprocessing.get_context("fork").Process(
        target=judge_in_child, args=(server.base_url, str(tmp_path), backend)
    )
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
    assert sorted(
        sha256_hex(prompts[q, d]) for q, d in zip(first.failed["query_id"], first.failed["doc_id"])
    ) == sorted(failed_sha)
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
    assert BatchSettings.from_config({"price_factor": 0.4, "max_requests": 7}) == BatchSettings(
        price_factor=0.4, max_requests=7
    )
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
    from judgebench.tracking.run_params import cell_config

    online = {"name": "j", "backend": {"model": "gpt-4o-mini", "temperature": 0.0}}
    batch = {
        "name": "j",
        "backend": {
            "model": "gpt-4o-mini",
            "temperature": 0.0,
            "mode": "batch",
            "batch": {"poll_interval_s": 5, "max_requests": 10, "price_factor": 0.5},
        },
    }
    assert component_hash(online) == component_hash(batch)
    assert (
        cell_config({"judge": batch})
        == cell_config({"judge": online})
        == {"judge.name": "j", "judge.backend.model": "gpt-4o-mini", "judge.backend.temperature": 0.0}
    )


def _saved_and_running(server, tmp_path, ds, backend="openai") -> dict:
    """A batch of the whole label set, submitted, its id saved, left running (the job stopped waiting for it)."""
    fresh(server, polls_in_progress=10**6)
    pairs = ds.label_set()[["query_id", "doc_id"]]
    with pytest.raises(BatchNotDone, match="run again to resume"):
        make_judge(server.base_url, str(tmp_path), backend, timeout_s=0.2).judge(pairs, ds, ds.corpus)
    (saved,) = saved_batches(tmp_path)
    assert server.batch_stats()["prompts_submitted"] == len(pairs) == len(saved["keys"])
    return saved


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_batch_resumed_by_a_run_over_part_of_it_stores_every_answer(server, tmp_path, backend):
    """The saved batch holds 24 prompts; a run over 12 of them resumes it: all 24 answers are cached, so the run
    over all 24 that follows pays nothing (no second batch, every label from the cache)."""
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    saved = _saved_and_running(server, tmp_path, ds, backend)
    server.configure_batches(polls_in_progress=0)
    half = make_judge(server.base_url, str(tmp_path), backend).judge(pairs.iloc[:12], ds, ds.corpus)
    assert len(half.labels) == 12 and half.usage.calls_made == 12 and half.usage.batches == 0
    assert saved_batches(tmp_path) == []  # done, every answer stored: nothing left to resume

    full = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    stats = server.batch_stats()
    assert stats["batches"] == 1 and stats["prompts_submitted"] == 24  # nothing submitted, nothing paid twice
    assert full.usage.calls_cached == 24 and full.usage.calls_made == 0 and full.usage.cost_usd == 0
    prompts = prompts_of(ds, pairs)
    assert all(
        label == fake_label(prompts[q, d])
        for q, d, label in full.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False)
    )
    assert list(stats["states"]) == [saved["batch_id"]]


def test_an_unwritable_batch_folder_fails_before_any_batch_is_paid(server, tmp_path):
    fresh(server)
    ds = small_dataset(1, 4)
    (tmp_path / "batches").write_text("not a folder")  # the id folder cannot be created (works as root too)
    judge = make_judge(server.base_url, str(tmp_path), "openai")
    with pytest.raises(CacheError, match=rf"cache {tmp_path / 'batches'} is not writable: .*batch ids"):
        judge.judge(ds.label_set()[["query_id", "doc_id"]], ds, ds.corpus)
    assert server.batch_stats()["batches"] == 0 and server.stats()["requests"] == 0


class _NoReplace:
    """batch_store's view of ``os``: the rename that saves an id file fails (disk full after the probe)."""

    def __getattr__(self, name):
        return getattr(os, name)

    @staticmethod
    def replace(src, dst):
        raise OSError(28, "No space left on device", str(dst))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_batch_id_that_cannot_be_saved_is_named_and_can_be_resumed_by_hand(server, tmp_path, monkeypatch, backend):
    fresh(server, polls_in_progress=10**6)
    ds = small_dataset()
    pairs = ds.label_set()[["query_id", "doc_id"]]
    monkeypatch.setattr(batch_store, "os", _NoReplace())
    with pytest.raises(CacheError) as err:
        make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    monkeypatch.undo()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    (batch_id,) = server.batch_stats()["states"]
    message = str(err.value)
    assert f"batch {batch_id} ({backend}, " in message and "24 prompts) was created and is paid for" in message
    assert "No space left on device" in message and saved_batches(tmp_path) == [] and "\n" not in message
    by_hand = json.dumps({"batch_id": batch_id, "backend": backend})
    assert f"save {by_hand} as {tmp_path / 'batches'}/batch-resume.json and run again" in message

    (tmp_path / "batches" / "batch-resume.json").write_text(by_hand)  # what the message says to do
    server.configure_batches(polls_in_progress=0)
    result = make_judge(server.base_url, str(tmp_path), backend).judge(pairs, ds, ds.corpus)
    assert (
        server.batch_stats()["batches"] == 1 and server.batch_stats()["prompts_submitted"] == 24
    )  # resumed, not paid again
    assert len(result.labels) == 24 and result.failed.empty and result.usage.batches == 0
    assert saved_batches(tmp_path) == [] and not (tmp_path / "batches" / "batch-resume.json").exists()


def test_a_provider_failing_on_resume_stops_with_one_line_and_keeps_the_id(server, tmp_path):
    ds = small_dataset(1, 4)
    pairs = ds.label_set()[["query_id", "doc_id"]]
    saved = _saved_and_running(server, tmp_path, ds)
    server.configure_batches(poll_500=True, polls_in_progress=0)
    judge = make_judge(server.base_url, str(tmp_path), "openai")
    judge.backend.max_retries = 1
    with pytest.raises(
        BatchNotDone,
        match=rf"saved batch {saved['batch_id']} \(openai\) could not be polled .*500.*"
        r"its id is kept in .*run again later to resume it",
    ):
        judge.judge(pairs, ds, ds.corpus)
    assert saved_batches(tmp_path) == [saved] and server.batch_stats()["batches"] == 1
    server.configure_batches(poll_500=False)
    result = make_judge(server.base_url, str(tmp_path), "openai").judge(pairs, ds, ds.corpus)
    assert len(result.labels) == 4 and server.batch_stats()["batches"] == 1


@pytest.mark.parametrize("damage", ["keys-not-a-list", "truncated"])
def test_an_unusable_id_file_is_reported_with_the_batch_it_names_and_kept(server, tmp_path, caplog, damage):
    ds = small_dataset(1, 4)
    pairs = ds.label_set()[["query_id", "doc_id"]]
    saved = _saved_and_running(server, tmp_path, ds)
    (path,) = (tmp_path / "batches").glob("batch-*.json")
    text = path.read_text()
    path.write_text(
        text.replace(json.dumps(saved["keys"]), "5") if damage == "keys-not-a-list" else text[: len(text) // 2]
    )
    damaged = path.read_text()
    server.configure_batches(polls_in_progress=0)
    with caplog.at_level("WARNING"):
        result = make_judge(server.base_url, str(tmp_path), "openai").judge(pairs, ds, ds.corpus)
    assert len(result.labels) == 4  # its prompts submitted again (the damaged file cannot say which they are)
    assert server.batch_stats()["batches"] == 2
    warned = [r.getMessage() for r in caplog.records if "cannot be used" in r.getMessage()]
    assert len(warned) == 1 and str(path) in warned[0]
    assert f"it names batch {saved['batch_id']}, which is left running at the provider" in warned[0]
    assert ('"keys" must be a list of call-cache keys' if damage == "keys-not-a-list" else "not valid JSON") in warned[
        0
    ]
    assert path.read_text() == damaged  # kept: it still names a batch that may be live; never overwritten


def test_an_id_file_naming_another_batch_is_warned_and_that_batch_s_answers_are_kept(server, tmp_path, caplog):
    ds = small_dataset(2, 4)
    pairs = ds.label_set()[["query_id", "doc_id"]]
    saved = _saved_and_running(server, tmp_path, small_dataset(1, 4))  # query q0's 4 prompts, left running
    server.configure_batches(polls_in_progress=0)
    make_judge(server.base_url, str(tmp_path / "other"), "openai").judge(pairs.iloc[4:], ds, ds.corpus)  # q1's, done
    (other_id,) = set(server.batch_stats()["states"]) - {saved["batch_id"]}
    (path,) = (tmp_path / "batches").glob("batch-*.json")
    state = json.loads(path.read_text())
    path.write_text(json.dumps({**state, "batch_id": other_id}))  # the file now names another (real, done) batch
    with caplog.at_level("WARNING"):
        first = make_judge(server.base_url, str(tmp_path), "openai").judge(pairs.iloc[:4], ds, ds.corpus)
    assert first.labels.empty and len(first.failed) == 4 and set(first.failed["error"]) == {"missing"}
    warned = "\n".join(r.getMessage() for r in caplog.records)
    assert f"batch {other_id} answered none of the 4 prompts its id file {path} lists" in warned
    again = make_judge(server.base_url, str(tmp_path), "openai").judge(pairs, ds, ds.corpus)
    assert again.usage.calls_cached == 4 and again.usage.calls_made == 4  # the other batch's 4 answers were stored
    assert server.batch_stats()["batches"] == 3


def test_a_rewriter_in_batch_mode_rewrites_through_one_batch(server, tmp_path):
    from judgebench.rewriters.llm import LLMRewriter

    fresh(server)
    ds = small_dataset(1, 4)
    backend = OpenAIBackend(
        "gpt-4o-mini", base_url=server.base_url + "/v1", mode="batch", batch={"poll_interval_s": 0.02}
    )
    rewriter = LLMRewriter(name="rw", backend=backend, cache_dir=str(tmp_path), progress=False)
    texts = rewriter.rewrite(ds)
    stats = server.batch_stats()
    assert stats["batches"] == 1 and stats["prompts_submitted"] == 4 and server.stats()["requests"] == 0
    prompts = [rewriter.template.render(text=ds.corpus[d]) for d in ds.corpus]
    assert sorted(stats["submitted_sha256"]) == sorted(sha256_hex(p) for p in prompts)
    assert all(texts[d] and texts[d] != ds.corpus[d] for d in ds.corpus) and not rewriter.failed
    again = LLMRewriter(
        name="rw",
        backend=OpenAIBackend("gpt-4o-mini", base_url=server.base_url + "/v1"),
        cache_dir=str(tmp_path),
        progress=False,
    ).rewrite(ds)
    assert (
        again == texts and server.stats()["requests"] == 0 and server.batch_stats()["batches"] == 1
    )  # online reuses them
