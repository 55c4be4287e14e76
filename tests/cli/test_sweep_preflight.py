"""One preflight per sweep (cli/sweep_preflight.py, called by the sweeper before the launcher): what does not depend on
the cell is said once, exit 2, no cell started, nothing left in MLflow; a finished grid still reruns offline."""

from __future__ import annotations

import socket
from pathlib import Path

from mlflow.tracking import MlflowClient

import cli_runner
from cli_runner import env_with
from judgebench.testing.fake_process import FakeLLMServer

STORE: dict[str, Path] = {}
_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]
NOISE = ("Error executing job", "HYDRA_FULL_ERROR", "CellError", "Traceback", "[ERROR]")


def common(tmp: Path, experiment: str) -> list[str]:
    return [
        "progress=false",
        f"tracking_uri=sqlite:///{STORE['dir']}/mlflow.db",
        f"artifact_root={STORE['dir']}/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.sweep.dir={tmp}/multirun",
        f"experiment_name={experiment}",
    ]


def no_keys() -> dict[str, str]:
    env = env_with()
    env.pop("OPENAI_API_KEY")
    return env


def runs_of(experiment: str) -> list:
    """Every run of the experiment, deleted ones included (the sweep's parent run included): a refused sweep opens
    no run at all, its parent run is started only once the sweep's checks passed."""
    from mlflow.entities import ViewType

    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL) if exp else []


def said_once(res: cli_runner.Result, *phrases: str) -> str:
    everything = res.out + res.err
    assert res.rc == 2 and len(res.error_lines) == 1, str(res)
    line = res.error_lines[0]
    for phrase in phrases:
        assert phrase in line and everything.count(phrase) == 1, (phrase, str(res))
    for noise in NOISE:
        assert noise not in everything, (noise, str(res))
    return line


def test_a_four_cell_sweep_without_a_key_says_so_once_and_starts_no_cell(tmp_path):
    res = cli_runner.run(
        ["-m", "judge=gemini_pro,gemini_flash", "ranker=oracle,bm25", *common(tmp_path, "nokey")],
        cwd=tmp_path,
        env=no_keys(),
    )
    said_once(res, "needs an API key: set GEMINI_API_KEY or GOOGLE_API_KEY", "no cell was started")
    assert not list((tmp_path / "multirun").rglob(".judgebench/jobs/*.json"))  # no cell record: none started
    assert "#0" not in res.out and runs_of("nokey") == []  # no summary of failed cells; no parent run


def test_a_missing_run_file_in_a_sweep_is_said_once(tmp_path):
    res = cli_runner.run(
        [
            "-m",
            "ranker=runfile",
            f"ranker.path={tmp_path}/nope.run",
            "ranker.name=Mine",
            "judge=human,simulated",
            *common(tmp_path, "norun"),
        ],
        cwd=tmp_path,
        env=env_with(),
    )
    said_once(res, f"{tmp_path}/nope.run: file not found (ranker.path)")
    assert runs_of("norun") == []  # nothing RUNNING, FAILED or deleted


def test_a_misspelt_added_key_in_a_sweep_is_said_once_and_leaves_no_run(tmp_path):
    res = cli_runner.run(
        ["-m", "judge=human,simulated", "+judge.nam=x", *common(tmp_path, "typo")], cwd=tmp_path, env=env_with()
    )
    said_once(
        res, "+judge.nam=x: judge (human) takes no setting 'nam'; did you mean judge.name?", "no cell was started"
    )
    assert runs_of("typo") == []


def test_a_finished_grid_reruns_with_no_key_and_no_server(tmp_path):
    """The sweep's check follows the cell's rule: a backend whose every answer is cached is not asked about."""
    grid = ["-m", "judge=gpt_4o_mini", "ranker=oracle,bm25", *common(tmp_path, "cached")]
    with FakeLLMServer() as srv:
        first = cli_runner.run([*grid, f"judge.base_url={srv.openai_base_url}"], cwd=tmp_path, env=env_with())
    assert first.rc == 0, str(first)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    again = cli_runner.run([*grid, f"judge.base_url={dead}", "force=true"], cwd=tmp_path, env=no_keys())
    assert again.rc == 0 and "2 ran" in again.out, str(again)
