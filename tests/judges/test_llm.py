"""API judges end to end against the local fake servers, through the real openai / google-genai clients."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from judgebench.data.datasets import Dataset
from judgebench.exceptions import ConfigError
from judgebench.judges.llm import LLMJudge
from judgebench.judges.parsing import parse_label
from judgebench.llm.prompts import load_prompt
from judgebench.llm.remote.api import GeminiBackend, OpenAIBackend
from judgebench.testing.fake_app import fake_label
from judgebench.testing.fake_process import FakeLLMServer

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def small() -> Dataset:
    queries = {f"q{i}": f"question number {i} about {{braces}}" for i in range(4)}
    docs = {f"d{i}": f"passage {i} with text {{not a field}} and zebra{i % 3}" for i in range(30)}
    pool = pd.DataFrame(
        [(q, f"d{j}", 30.0 - j, j + 1) for q in queries for j in range(30)],
        columns=["query_id", "doc_id", "score", "rank"],
    )
    qrels = pool.iloc[::2][["query_id", "doc_id"]].assign(relevance=lambda f: [i % 4 for i in range(len(f))])
    return Dataset("small", queries, qrels.reset_index(drop=True), docs, pool)


def make_judge(srv, tmp_path, backend="openai", **kw) -> LLMJudge:
    opts = dict(backoff_base_s=0.01, backoff_max_s=0.05, max_concurrency=kw.pop("max_concurrency", 8), **kw)
    if backend == "openai":
        be = OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url, **opts)
    else:
        be = GeminiBackend("gemini-3.8-flash", base_url=srv.base_url, **opts)
    return LLMJudge(
        name=f"fake-{backend}", family=backend, model=be.model, backend=be, cache_dir=str(tmp_path), progress=False
    )


@pytest.mark.parametrize("backend", ["openai", "gemini"])
def test_labels_come_from_the_answers_and_a_rerun_makes_no_call(server, small, tmp_path, monkeypatch, backend):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")
    server.configure(latency_s=0.0, fail_429=0, fail_500=0, fail_timeout=0, fail_malformed=0, fail_noscore=0)
    server.reset()
    pairs = small.label_set()[["query_id", "doc_id"]]
    judge = make_judge(server, tmp_path, backend)
    result = judge.judge(pairs, small, small.corpus)
    assert len(result.labels) == len(pairs) == 60 and result.failed.empty
    template = load_prompt("umbrela_bing")
    for q, d, label in result.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        prompt = template.render(query=small.queries[q], passage=small.corpus[d])
        assert label == fake_label(prompt)
    assert server.stats()["requests"] == 60
    assert result.usage.calls_made == 60 and result.usage.calls_cached == 0
    assert result.usage.input_tokens > 60 * 100  # the server counts words of the ~200-word prompt

    again = make_judge(server, tmp_path, backend).judge(pairs, small, small.corpus)
    assert server.stats()["requests"] == 60  # zero new calls
    assert again.usage.calls_made == 0 and again.usage.calls_cached == 60 and again.usage.cost_usd == 0
    pd.testing.assert_frame_equal(again.labels, result.labels)


def test_faults_are_retried_counted_and_never_become_labels(server, small, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server.configure(
        latency_s=0.0,
        fail_429=0.2,
        fail_500=0.1,
        fail_timeout=0.05,
        fail_malformed=0.05,
        fail_noscore=0.1,
        timeout_hang_s=2.0,
        seed=3,
    )
    server.reset()
    pairs = small.label_set()[["query_id", "doc_id"]]
    judge = make_judge(server, tmp_path, timeout_s=0.3, max_retries=8)
    try:
        result = judge.judge(pairs, small, small.corpus)
    finally:
        stats = server.stats()
        server.configure(fail_429=0, fail_500=0, fail_timeout=0, fail_malformed=0, fail_noscore=0)
    outcomes = stats["by_outcome"]
    errors = result.usage.errors
    assert errors.get("429", 0) == outcomes.get("429", 0) > 0
    assert errors.get("5xx", 0) == outcomes.get("500", 0) > 0
    assert errors.get("malformed", 0) == outcomes.get("malformed", 0)
    assert errors.get("timeout", 0) == outcomes.get("timeout", 0)
    assert errors.get("unparsable", 0) == outcomes.get("noscore", 0) > 0
    assert result.usage.requests == stats["requests"]
    # every pair either has the server's label or is reported failed, never a made-up label
    template = load_prompt("umbrela_bing")
    for q, d, label in result.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        assert label == fake_label(template.render(query=small.queries[q], passage=small.corpus[d]))
    assert len(result.labels) + len(result.failed) == len(pairs)
    assert result.usage.calls_failed == len(result.failed)
    # calls, requests, retries and re-asks are separate counts: every request the server saw is a distinct
    # prompt's first ask (answered, or given up on), a re-ask of an answer without a score, or a retry
    u = result.usage
    unanswered = int((result.failed["error"] != "unparsable").sum())
    assert u.reasks == stats["by_outcome"].get("noscore", 0) - int((result.failed["error"] == "unparsable").sum()) > 0
    assert u.calls_made == len(pairs) - unanswered
    assert stats["requests"] == u.calls_made + unanswered + u.reasks + u.retries


def test_token_limiter_counts_every_token_of_a_long_prompt():
    """One acquire may not exceed the limiter's capacity (one second's quota): a long prompt must be taken
    in several acquires, all of it, not capped at one second's worth."""
    import asyncio

    from judgebench.llm.remote.rate_limits import acquire_tokens

    class Recorder:
        max_rate = 10.0

        def __init__(self):
            self.taken = []

        async def acquire(self, amount):
            assert amount <= self.max_rate
            self.taken.append(amount)

    rec = Recorder()
    asyncio.run(acquire_tokens(rec, 35))
    assert rec.taken == [10.0, 10.0, 10.0, 5.0] and sum(rec.taken) == 35


def test_missing_key_names_the_variable(server, small, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    judge = make_judge(server, tmp_path)
    with pytest.raises(ConfigError, match="set OPENAI_API_KEY"):
        judge.judge(small.label_set()[["query_id", "doc_id"]].head(2), small, small.corpus)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        make_judge(server, tmp_path, "gemini").judge(
            small.label_set()[["query_id", "doc_id"]].head(2), small, small.corpus
        )


@pytest.mark.parametrize(
    ("transport", "client_class"), [("aiohttp", "_InstalledAioHttpClient"), ("httpx", "AsyncHttpxClientWrapper")]
)
def test_openai_judge_sends_through_the_http_transport_it_names(
    server, small, tmp_path, monkeypatch, transport, client_class
):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server.configure(latency_s=0.0, fail_429=0, fail_500=0, fail_timeout=0, fail_malformed=0, fail_noscore=0)
    server.reset()
    pairs = small.label_set()[["query_id", "doc_id"]]
    judge = make_judge(server, tmp_path, http_transport=transport)
    result = judge.judge(pairs, small, small.corpus)
    assert (
        type(judge.backend._client._client).__name__ == client_class
    )  # the SDK's aiohttp client, or its httpx default
    assert server.stats()["requests"] == 60 and result.failed.empty
    template = load_prompt("umbrela_bing")
    assert [
        fake_label(template.render(query=small.queries[q], passage=small.corpus[d]))
        for q, d in result.labels[["query_id", "doc_id"]].itertuples(index=False)
    ] == result.labels["relevance"].tolist()


def test_bad_backend_settings_are_config_errors():
    with pytest.raises(ConfigError, match="http_transport='requests'"):
        OpenAIBackend("m", http_transport="requests")
    with pytest.raises(ConfigError, match="max_concurrency=-1"):
        OpenAIBackend("m", max_concurrency=-1)
    with pytest.raises(ConfigError, match="requests_per_minute=0"):
        OpenAIBackend("m", requests_per_minute=0)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("##final score: 2", 2),
        ("## Final Score: **3**", 3),
        ("M: 2\nT: 1\n##final score:1", 1),
        ("final score - 0", 0),
        ("2", 2),
        ("**1**", 1),
        ("I think it is relevant.", None),
        ("##final score: 7", None),
        ("", None),
        (None, None),
        ("##final score: 2.5", None),
        ("score 3/3", None),
        # the scale, not a grade (a real SmolLM2 answer through llama.cpp), and a grade followed by words
        ("determine the final score: 0, 1, or 2. Then ... the final score: 0, 1, or 2", None),
        ("final score 0-3", None),
        ("final score 0 to 3", None),
        ("##final score: 2, because the passage answers it", 2),
        ("##final score: 2/3", 2),
        # trailing punctuation
        ("##final score: 2.", 2),
        ("##final score: 3!", 3),
        ("##final score: **1**.", 1),
        ("Final score: 0;", 0),
        # several scores: they must agree, else the answer has no score (re-asked, then a failure)
        ("##final score: 2\n##final score: 3", None),
        ("##final score: 1 ... '##final score: 3'", None),
        ("##final score: 2 (so: ##final score: 2.)", 2),
        ("##final score: 1\n##final score: 7", None),
    ],
)
def test_parse_label(text, label):
    assert parse_label(text) == label


def test_answers_with_several_scores_are_counted(server, small, tmp_path, monkeypatch):
    """The fake server answers one pair with two agreeing scores and one with two conflicting ones."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server.reset()
    judge = make_judge(server, tmp_path)
    judge.parse_attempts = 1
    pairs = small.label_set()[["query_id", "doc_id"]]
    texts = dict(small.corpus)
    first, second = pairs["doc_id"].iloc[0], pairs["doc_id"].iloc[1]
    texts[first] += " AGREE"
    texts[second] += " CONFLICT"
    server.configure(
        answers={"AGREE": "##final score: 2\nso: ##final score: 2.", "CONFLICT": "##final score: 1 or ##final score: 3"}
    )
    try:
        result = judge.judge(pairs, small, texts)
    finally:
        server.configure(answers={})
    several = int(pairs["doc_id"].isin([first, second]).sum())  # each doc is in the label set of several queries
    assert several >= 2 and result.usage.answers_multiple_scores == several
    labels = result.labels.groupby("doc_id")["relevance"].agg(set).to_dict()
    assert labels[first] == {2} and second not in labels
    failed = result.failed[result.failed["doc_id"] == second]
    assert len(failed) == (pairs["doc_id"] == second).sum() and set(failed["error"]) == {"unparsable"}


def test_umbrela_prompt_is_word_for_word_and_braces_in_passages_are_safe(tmp_path):
    reference = REPO / "tests" / "data" / "umbrela_zeroshot_bing.txt"  # provenance in tests/data/README.md
    assert reference.is_file(), f"reference prompt missing at {reference}"
    template = load_prompt("umbrela_bing")
    assert template.text == reference.read_text(encoding="utf-8")
    out = template.render(query="what is {x}", passage="a {passage} with {query} inside")
    assert "Query: what is {x}\nPassage: a {passage} with {query} inside\n" in out
    assert template.version.startswith("umbrela_bing@")
    bad = tmp_path / "bad.txt"
    bad.write_text("Query: {query} only")
    with pytest.raises(ValueError, match=r"lacks the placeholder\(s\) \{passage\}"):
        load_prompt(str(bad))


@pytest.mark.slow  # ~40 s: a grid with an API judge, then its rerun
def test_grid_with_an_api_judge_leaks_no_key_and_reruns_free(tmp_path):
    """A toy cell judged by gpt_4o_mini on the fake server; the planted key appears in no output."""
    planted = "sk-planted-7f3a9c1e5b"
    with FakeLLMServer() as srv:
        env = {**os.environ, "OPENAI_API_KEY": planted, "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
        cmd = [
            sys.executable,
            str(REPO / "run.py"),
            "-m",
            "ranker=oracle",
            "perturbation=perfect,swap_1",
            "judge=gpt_4o_mini",
            f"judge.base_url={srv.openai_base_url}",
            "experiment_name=api",
            f"hydra.sweep.dir={tmp_path}/multirun",
            "progress=false",
        ]
        first = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr[-3000:]
        made = srv.stats()["requests"]
        # the judge labels the toy label set once, whatever the ranker
        from judgebench.data.datasets import load_toy

        assert made == len(load_toy().label_set())
        dry = subprocess.run(
            [*cmd, "dry_run=true", "force=true"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert dry.returncode == 0 and "0 calls to make" in dry.stdout, dry.stdout + dry.stderr[-2000:]
        second = subprocess.run(
            [*cmd, "force=true"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert second.returncode == 0, second.stderr[-3000:]
        assert srv.stats()["requests"] == made  # the rerun made zero calls
    hits = subprocess.run(["grep", "-rl", planted, str(tmp_path)], capture_output=True, text=True)
    assert hits.stdout == "", f"API key leaked into: {hits.stdout}"
