"""A dry run asks nothing (rewrites included) and reports the rewrites it would make; failed rewrites are counted,
listed, warned, and above the failure share end the cell FAILED; the content-bias job applies max_failed_share."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import cli_runner
from cli_runner import env_with
from judgebench.content_bias.statistics import label_distribution
from judgebench.data.datasets import load_toy
from judgebench.llm.prompts import load_prompt
from judgebench.rewriters.llm import REWRITE_PROMPT
from judgebench.testing.fake_process import FakeLLMServer

STORE: dict[str, Path] = {}
TOY = load_toy()


_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]


def common(tmp: Path, experiment: str) -> list[str]:
    return [
        "progress=false",
        f"tracking_uri=sqlite:///{STORE['dir']}/mlflow.db",
        f"artifact_root={STORE['dir']}/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.run.dir={tmp}/out",
        f"hydra.sweep.dir={tmp}/multirun",
        f"experiment_name={experiment}",
    ]


def latest(experiment: str):
    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    runs = client.search_runs(
        [client.get_experiment_by_name(experiment).experiment_id],
        "tags.`judgebench.kind` != 'judge_summary'",
        order_by=["attributes.start_time DESC"],
    )
    return client, runs[0]


def test_a_dry_run_asks_nothing_and_reports_the_rewrites_it_would_make(tmp_path):
    docs = list(TOY.pool["doc_id"].unique())
    tokens = sum(len(REWRITE_PROMPT.replace("{text}", TOY.corpus[d])) // 4 for d in docs)
    with FakeLLMServer() as srv:
        args = [
            "ranker=oracle",
            "judge=gpt_4o_mini",
            f"judge.base_url={srv.openai_base_url}",
            "rewriter=openai",
            f"rewriter.base_url={srv.openai_base_url}",
            "dry_run=true",
            *common(tmp_path, "dry"),
        ]
        res = cli_runner.run(args, cwd=tmp_path, env=env_with())
        assert res.rc == 0, str(res)
        assert srv.stats()["requests"] == 0
        res_cb = cli_runner.run(
            [
                "+experiment=content_bias",
                "judge=gpt_4o_mini",
                f"judge.base_url={srv.openai_base_url}",
                "rewriter=openai",
                f"rewriter.base_url={srv.openai_base_url}",
                "content_bias.per_level=2",
                "content_bias.score_with_ranker=false",
                "dry_run=true",
                *common(tmp_path, "dry_cb"),
            ],
            cwd=tmp_path,
            env=env_with(),
        )
        assert res_cb.rc == 0, str(res_cb)
        assert srv.stats()["requests"] == 0
    line = next(x for x in res.out.splitlines() if "rewriter openai" in x)
    assert f"{len(docs)} documents, 0 cached, {len(docs)} rewrites to make (~{tokens} input tokens" in line, res.out
    judged = next(x for x in res.out.splitlines() if "/ gpt_4o_mini:" in x)
    n = len(TOY.label_set())
    assert f"{n} pairs, 0 cached, {n} calls to make" in judged, res.out
    assert "rewrites to make" in res_cb.out and "calls to make" in res_cb.out, res_cb.out


def _rewrite_cell(tmp: Path, srv: FakeLLMServer, experiment: str, *extra: str) -> list[str]:
    return [
        "ranker=oracle",
        "judge=human",
        "rewriter=openai",
        f"rewriter.base_url={srv.openai_base_url}",
        "+rewriter.backend.max_retries=0",
        *common(tmp, experiment),
        *extra,
    ]


def test_failed_rewrites_are_counted_listed_warned_and_bounded(tmp_path):
    docs = TOY.pool["doc_id"].nunique()
    with FakeLLMServer(fail_500=0.3, seed=3) as srv:
        res = cli_runner.run(
            _rewrite_cell(tmp_path, srv, "rewrite_fail", "rewriter.max_failed_share=0.9"), cwd=tmp_path, env=env_with()
        )
        assert res.rc == 0, str(res)
        failed = srv.stats()["by_outcome"]["500"]  # no retries: one 500 = one failed rewrite
        assert 0 < failed < docs
        assert f"rewriter openai: {failed} of {docs} rewrites failed" in res.out + res.err, str(res)
        client, run = latest("rewrite_fail")
        assert run.info.status == "FINISHED"
        assert run.data.metrics["rewrite_failed"] == failed == run.data.metrics["rewrite_kept_original"]
        kept = pd.read_csv(
            client.download_artifacts(run.info.run_id, "rewrite_failures.tsv", str(tmp_path / "dl")), sep="\t"
        )
        assert len(kept) == failed and kept["doc_id"].is_unique and set(kept["doc_id"]) <= set(TOY.corpus)
        assert kept["error"].str.contains("500").all()

        srv.reset()  # the default share (max_failed_share 5%) ends the cell FAILED, one line
        res = cli_runner.run(
            _rewrite_cell(tmp_path, srv, "rewrite_fail_default", f"cache_dir={tmp_path}/cache2"),
            cwd=tmp_path,
            env=env_with(),
        )
        assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
        assert re.search(r"\d+ of 300 rewrites failed .* above max_failed_share=5.0%", res.error_lines[0]), str(res)
        assert latest("rewrite_fail_default")[1].info.status == "FAILED"


def test_the_content_bias_job_fails_when_the_judge_never_scores(tmp_path):
    with FakeLLMServer(answers={"##final score": "I cannot tell."}) as srv:
        args = [
            "+experiment=content_bias",
            "judge=gpt_4o_mini",
            f"judge.base_url={srv.openai_base_url}",
            "judge.parse_attempts=1",
            "rewriter=openai",
            f"rewriter.base_url={srv.openai_base_url}",
            "content_bias.per_level=2",
            "content_bias.score_with_ranker=false",
            *common(tmp_path, "cb_fail"),
        ]
        res = cli_runner.run(args, cwd=tmp_path, env=env_with())
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
    assert "have no label, above max_failed_share=5.0%" in res.error_lines[0], str(res)
    assert "| judge_0" not in res.out  # no table of labels that do not exist
    assert latest("cb_fail")[1].info.status == "FAILED"


def test_label_distribution_has_no_rows_for_labels_that_do_not_exist():
    sample = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c", "d"], "relevance": [0, 0, 3, 1]})
    orig = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "relevance": [0, 1, 3]})  # d: no label
    rew = pd.DataFrame({"query_id": "q", "doc_id": ["a"], "relevance": [2]})
    d = label_distribution(sample, orig, rew)
    assert set(zip(d["view"], d["human"])) == {("original", 0), ("original", 3), ("rewritten", 0)}
    assert (d[[f"judge_{k}" for k in range(4)]].sum(axis=1) > 0).all()


def _judge_line(out: str, judge: str = "gpt_4o_mini") -> str:
    return next(x for x in out.splitlines() if x.startswith("[dry run]") and f"/ {judge}:" in x)


def _cost(line: str) -> float:
    return float(re.search(r"~\$([0-9.]+)", line).group(1))


def test_a_dry_run_creates_nothing_in_mlflow(tmp_path):
    """A dry multirun on a store that does not exist yet leaves it not existing: no database, no experiment,
    no sweep run; on an existing store it adds no experiment and no run."""
    fresh = tmp_path / "fresh"
    args = [
        "-m",
        "ranker=oracle,bm25",
        "judge=human",
        "dry_run=true",
        "progress=false",
        f"tracking_uri=sqlite:///{fresh}/mlflow.db",
        f"artifact_root={fresh}/artifacts",
        f"cache_dir={tmp_path}/cache",
        f"hydra.sweep.dir={tmp_path}/multirun",
    ]
    res = cli_runner.run(args, cwd=tmp_path, env=env_with())
    assert res.rc == 0 and "Traceback" not in res.err, str(res)
    assert res.out.count("[dry run]") == 2 and not fresh.exists()
    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    before = len(client.search_experiments())
    res = cli_runner.run(
        ["-m", "ranker=oracle,bm25", "judge=human", "dry_run=true", *common(tmp_path, "dry_nothing")],
        cwd=tmp_path,
        env=env_with(),
    )
    assert res.rc == 0, str(res)
    assert client.get_experiment_by_name("dry_nothing") is None and len(client.search_experiments()) == before


def test_a_labels_only_dry_run_prices_its_calls(tmp_path):
    template = load_prompt("umbrela_bing")
    pairs = TOY.label_set()
    tokens = sum(
        len(template.render(query=TOY.queries[q], passage=TOY.corpus[d])) // 4
        for q, d in zip(pairs["query_id"], pairs["doc_id"])
    )
    cost = (tokens * 0.15 + len(pairs) * 8 * 0.60) / 1e6  # gpt_4o_mini's prices; an answer estimated at 8 tokens
    with FakeLLMServer() as srv:
        res = cli_runner.run(
            [
                "job=labels_only",
                "judge=gpt_4o_mini",
                f"judge.base_url={srv.openai_base_url}",
                "dry_run=true",
                *common(tmp_path, "dry_labels"),
            ],
            cwd=tmp_path,
            env=env_with(),
        )
        assert res.rc == 0 and srv.stats()["requests"] == 0, str(res)
    line = _judge_line(res.out)
    assert f"{len(pairs)} pairs, 0 cached, {len(pairs)} calls to make (~{tokens} input tokens, ~${cost:.4f})" in line, (
        res.out
    )


def test_a_dry_run_after_a_batch_left_running_counts_its_prompts_as_resumed(tmp_path):
    """The real rerun polls the saved batch and pays nothing: the dry run says so, instead of 241 calls to make."""
    n = len(TOY.label_set())
    with FakeLLMServer() as srv:
        srv.configure_batches(polls_in_progress=10**6)
        cell = [
            "ranker=oracle",
            "judge=gpt_4o_mini",
            f"judge.base_url={srv.openai_base_url}",
            "judge.backend.mode=batch",
            "judge.backend.batch.poll_interval_s=0.05",
            *common(tmp_path, "dry_batch"),
        ]
        res = cli_runner.run([*cell, "judge.backend.batch.timeout_s=0.3"], cwd=tmp_path, env=env_with())
        assert res.rc == 2 and "run again to resume" in res.err, str(res)
        assert srv.batch_stats()["prompts_submitted"] == n
        res = cli_runner.run([*cell, "dry_run=true"], cwd=tmp_path, env=env_with())
        assert res.rc == 0, str(res)
        assert f"{n} pairs, 0 cached, {n} in saved batches (resumed, not paid again), 0 calls to make" in _judge_line(
            res.out
        ), res.out
        srv.configure_batches(polls_in_progress=0)
        res = cli_runner.run(cell, cwd=tmp_path, env=env_with())
        assert res.rc == 0 and srv.batch_stats()["batches"] == 1 and srv.stats()["requests"] == 0, str(res)


def test_a_batch_mode_content_bias_dry_run_prices_rewrites_and_judging_at_batch_prices(tmp_path):
    lines = {}
    with FakeLLMServer() as srv:
        for mode in ("online", "batch"):
            res = cli_runner.run(
                [
                    "+experiment=content_bias",
                    "judge=gpt_4o_mini",
                    f"judge.base_url={srv.openai_base_url}",
                    "rewriter=openai",
                    f"rewriter.base_url={srv.openai_base_url}",
                    "content_bias.per_level=2",
                    "content_bias.score_with_ranker=false",
                    f"judge.backend.mode={mode}",
                    f"+rewriter.backend.mode={mode}",
                    "dry_run=true",
                    *common(tmp_path, f"dry_cb_{mode}"),
                ],
                cwd=tmp_path,
                env=env_with(),
            )
            assert res.rc == 0 and srv.stats()["requests"] == 0, str(res)
            lines[mode] = [x for x in res.out.splitlines() if x.startswith("[dry run]") and "not checked" not in x]
    assert (
        len(lines["online"]) == len(lines["batch"]) == 4
    )  # the rewrites; the original, rewritten and injected judging
    for online, batch in zip(lines["online"], lines["batch"]):
        assert _cost(online) > 0 and _cost(batch) == pytest.approx(_cost(online) / 2, abs=1e-4), (online, batch)
        assert "at batch prices" in batch and "at batch prices" not in online
