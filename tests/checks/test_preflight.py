"""The headline Gemini command against the fake Gemini server (its own process), and the preflight: a
retired model, a missing key, an unknown model or a server without the model is one line and exit 2 in
seconds, before any generateContent request; thinking tokens reach the cell's metrics and its cost. Every
case is a real run.py (tests/helpers/cli_runner.py)."""

from __future__ import annotations

import socket
from dataclasses import asdict
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import cli_runner
from cli_runner import env_with
from judgebench.testing.fake_app import FakeConfig
from judgebench.testing.fake_process import FakeLLMServer

STORE: dict[str, Path] = {}
_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]

PRICES = {"gemini_pro": (2.0, 12.0), "gemini_flash": (0.75, 3.75)}  # conf/judge/gemini_*.yaml, USD per M tokens
LOW = FakeConfig().thoughts // 4  # what the fake thinks at level low, these judges' least
HEADLINE = ["-m", "dataset=toy", "judge=gemini_pro,gemini_flash", "+system=bm25,oracle_perfect"]


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server):
    server.configure(**asdict(FakeConfig()))
    server.reset()
    return server


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


def gemini_env(**extra: str) -> dict[str, str]:
    return env_with(GEMINI_API_KEY="fake-gemini-key", **extra)


def refused(args: list[str], tmp: Path, env: dict[str, str]) -> cli_runner.Result:
    """run.py ARGS, which the preflight must refuse before any cell logs anything: the experiment gets no job run."""
    res = cli_runner.run(args, cwd=tmp, env=env, timeout=120)  # a hang guard: a refusal takes seconds
    experiment = next(a.split("=", 1)[1] for a in args if a.startswith("experiment_name="))
    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], "tags.`judgebench.kind` = 'job'") if exp else []
    assert runs == [], [r.data.tags for r in runs]
    return res


def one_line(res: cli_runner.Result, *phrases: str) -> str:
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err + res.out, str(res)
    for phrase in phrases:
        assert phrase in res.error_lines[0], f"{phrase!r} not in {res.error_lines[0]!r}"
    return res.error_lines[0]


def nothing_sent(srv, model_gets: int = 0) -> None:
    stats = srv.stats()
    assert stats["requests"] == 0 and stats["by_kind"] == {"openai": 0, "gemini": 0}, stats  # no generateContent
    assert sum(stats["model_gets"].values()) == model_gets, stats["model_gets"]


def test_the_headline_grid_runs_and_counts_thinking_in_usage_and_cost(srv, tmp_path):
    res = cli_runner.run(
        [*HEADLINE, f"++judge.base_url={srv.base_url}", *common(tmp_path, "headline")], cwd=tmp_path, env=gemini_env()
    )
    assert res.rc == 0, str(res)
    assert "4 cells - 4 ran, 0 skipped, 0 failed" in res.out, str(res)
    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    runs = client.search_runs(
        [client.get_experiment_by_name("headline").experiment_id], "tags.`judgebench.kind` = 'job'"
    )
    assert sorted(r.data.tags["judge_model"] for r in runs) == ["gemini-3.1-pro-preview"] * 2 + ["gemini-3.8-flash"] * 2
    pairs = None
    for judge, (p_in, p_out) in PRICES.items():
        cells = [r.data.metrics for r in runs if r.data.tags["judge"] == judge]
        made = [m for m in cells if m["calls_made"] > 0]
        assert len(cells) == 2 and len(made) == 1  # the second cell of a judge reads the first one's answers
        m = made[0]
        pairs = pairs or m["calls_made"]
        assert m["calls_made"] == pairs and m["thinking_tokens"] == pairs * LOW and m["output_tokens"] == pairs * 3
        by_hand = (m["input_tokens"] * p_in + (m["output_tokens"] + m["thinking_tokens"]) * p_out) / 1e6
        assert m["cost_usd"] == pytest.approx(by_hand, rel=1e-9)
        assert m["cost_usd"] - (m["input_tokens"] * p_in + m["output_tokens"] * p_out) / 1e6 == pytest.approx(
            pairs * LOW * p_out / 1e6
        )
        assert all(c["cost_usd_labels"] == pytest.approx(by_hand) for c in cells)
    stats = srv.stats()
    assert stats["by_kind"]["gemini"] == 2 * pairs and stats["by_outcome"]["ok"] == 2 * pairs
    assert stats["model_gets"]["gemini"] == 2  # one lookup per model in the process, not one per cell


def test_a_retired_model_is_one_line_naming_the_replacement_and_nothing_is_sent(srv, tmp_path):
    args = [
        *HEADLINE,
        f"++judge.base_url={srv.base_url}",
        "++judge.backend.model=gemini-1.5-flash",
        *common(tmp_path, "retired"),
    ]
    res = refused(args, tmp_path, gemini_env())
    one_line(
        res, "judge.backend.model=gemini-1.5-flash", "retired", "use gemini-3.8-flash instead", "judge=gemini_flash"
    )
    nothing_sent(srv)  # the table knows it: not even a model lookup


def test_a_missing_key_is_one_line_and_nothing_is_sent(srv, tmp_path):
    res = refused([*HEADLINE, f"++judge.base_url={srv.base_url}", *common(tmp_path, "nokey")], tmp_path, env_with())
    one_line(res, "needs an API key", "GEMINI_API_KEY or GOOGLE_API_KEY")
    nothing_sent(srv)


def test_an_unknown_model_is_one_line_after_one_lookup(srv, tmp_path):
    args = [
        "judge=gemini_flash",
        f"judge.base_url={srv.base_url}",
        "judge.backend.model=gemini-3.8-flsh",
        "ranker=oracle",
        *common(tmp_path, "typo"),
    ]
    res = refused(args, tmp_path, gemini_env())
    one_line(res, "judge.backend.model=gemini-3.8-flsh", "has no such model (404 NOT_FOUND", "check the model name")
    nothing_sent(srv, model_gets=1)


def test_an_unreachable_gemini_server_is_one_line(srv, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there
    res = refused(
        ["judge=gemini_flash", f"judge.base_url=http://127.0.0.1:{port}", "ranker=oracle", *common(tmp_path, "down")],
        tmp_path,
        gemini_env(),
    )
    one_line(res, f"cannot connect to http://127.0.0.1:{port}", "judge.base_url")


def test_an_openai_compatible_server_without_the_model(srv, tmp_path):
    """No models.retrieve of the model (404): the list is asked too (vLLM and llama.cpp serve only that)."""
    srv.configure(missing_models=["gpt-4o-mini"])
    res = cli_runner.run(
        [
            "judge=gpt_4o_mini",
            f"judge.base_url={srv.openai_base_url}",
            "ranker=oracle",
            *common(tmp_path, "openai_missing"),
        ],
        cwd=tmp_path,
        env=env_with(),
    )
    one_line(res, "judge.backend.model=gpt-4o-mini", "has no such model", "the server serves fake-llm, not gpt-4o-mini")
    nothing_sent(srv, model_gets=1)


def test_a_dry_run_asks_no_server_but_refuses_a_retired_model_offline(srv, tmp_path):
    """A dry run is offline (checks/offline_checks.py): no model lookup, the backend listed as not checked; a retired
    Gemini id is still refused, since that needs no request."""
    cell = [
        "judge=gemini_flash",
        f"judge.base_url={srv.base_url}",
        "ranker=oracle",
        "dry_run=true",
        *common(tmp_path, "dry"),
    ]
    res = cli_runner.run(cell, cwd=tmp_path, env=gemini_env())
    assert res.rc == 0 and "[dry run]" in res.out and "calls to make" in res.out, str(res)
    assert f"[dry run] not checked: judge gemini gemini-3.8-flash at {srv.base_url} (key set" in res.out, res.out
    nothing_sent(srv, model_gets=0)
    srv.reset()
    one_line(
        cli_runner.run([*cell, "judge.backend.model=gemini-2.5-pro"], cwd=tmp_path, env=gemini_env()),
        "gemini-2.5-pro",
        "retired",
        "use gemini-3.1-pro-preview instead",
    )
    nothing_sent(srv)


def test_labels_only_and_content_bias_check_before_any_work(srv, tmp_path):
    res = cli_runner.run(
        [
            "job=labels_only",
            "judge=gemini_pro",
            f"judge.base_url={srv.base_url}",
            "judge.backend.model=gemini-1.0-pro",
            *common(tmp_path, "labels"),
        ],
        cwd=tmp_path,
        env=gemini_env(),
    )
    one_line(res, "gemini-1.0-pro", "use gemini-3.1-pro-preview instead (judge=gemini_pro")
    res = cli_runner.run(
        [
            "+experiment=content_bias",
            "judge=gemini_flash",
            f"judge.base_url={srv.base_url}",
            "rewriter=gemini_flash",
            f"rewriter.base_url={srv.base_url}",
            "rewriter.backend.model=gemini-2.0-flash",
            "content_bias.per_level=2",
            "content_bias.score_with_ranker=false",
            *common(tmp_path, "cb"),
        ],
        cwd=tmp_path,
        env=gemini_env(),
    )
    one_line(
        res,
        "rewriter.backend.model=gemini-2.0-flash",
        "use gemini-3.8-flash instead (rewriter.backend.model=gemini-3.8-flash)",
    )
    nothing_sent(srv, model_gets=1)  # the judge's model was looked up first and is fine


def test_a_fully_cached_cell_needs_no_network_but_a_retired_model_with_calls_to_make_is_refused(srv, tmp_path):
    cell = ["judge=gemini_flash", "ranker=oracle", *common(tmp_path, "cached")]
    assert cli_runner.run([*cell, f"judge.base_url={srv.base_url}"], cwd=tmp_path, env=gemini_env()).rc == 0
    asked = srv.stats()["by_kind"]["gemini"]
    assert asked > 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    res = cli_runner.run([*cell, f"judge.base_url={dead}", "force=true"], cwd=tmp_path, env=gemini_env())
    assert res.rc == 0, str(res)  # every answer is cached: nothing to send, nothing to check
    one_line(
        cli_runner.run(
            [*cell, f"judge.base_url={dead}", "force=true", "judge.backend.model=gemini-1.5-flash"],
            cwd=tmp_path,
            env=gemini_env(),
        ),
        "retired",
    )
    assert srv.stats()["by_kind"]["gemini"] == asked
