"""Simple mistakes get their one line before the heavy work: input files before the job's imports and the MLflow
store (checks/input_checks.py), compare's unknown experiment before MLflow is imported (compare/quick_checks.py), models
download offline without the hub client's retries; a run that failed on its input before any work is deleted.
What is asserted is what is skipped (modules not imported, no store created, no retry), not a time: the times are
in the issue's note."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient

import cli_runner
from cli_runner import env_with
from judgebench.data.datasets import load_toy

REPO = Path(__file__).resolve().parents[2]
STORE: dict[str, Path] = {}
_warm = cli_runner.store_fixture(STORE)
HEAVY = ("mlflow", "judgebench.jobs.pipeline", "sklearn", "matplotlib")

PROBE = """
import json, sys
{setup}
code = None
try:
    code = {call}
except SystemExit as e:
    code = e.code
print(json.dumps({{"code": code, "imported": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def probe(tmp: Path, setup: str, call: str, env: dict | None = None) -> tuple[dict, str]:
    """Run ``call`` in a fresh interpreter: its exit code and which heavy modules it imported; and its stderr."""
    code = PROBE.format(setup=setup, call=call, heavy=HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp, env=env or env_with(), capture_output=True, text=True, timeout=300
    )
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def run_py(tmp: Path, *args: str) -> tuple[dict, str]:
    argv = ["run.py", *args, "progress=false", f"hydra.run.dir={tmp}/out"]
    return probe(tmp, f"import judgebench.cli.run as r\nsys.argv = {argv!r}", "r.cli()")


def error_lines(err: str, prefix: str = "judgebench: error:") -> list[str]:
    return [x for x in err.splitlines() if x.startswith(prefix)]


def test_a_missing_run_file_is_said_before_the_job_imports_and_the_store(tmp_path):
    got, err = run_py(tmp_path, "ranker=runfile", f"ranker.path={tmp_path}/nope.run", "ranker.name=Mine")
    assert got["code"] == 2 and error_lines(err) == [
        f"judgebench: error: {tmp_path}/nope.run: file not found (ranker.path)"
    ], err
    assert got["imported"] == [] and not (tmp_path / "mlruns").exists(), got


def test_bad_qrels_for_the_qrels_judge_are_said_before_the_job_imports_and_the_store(tmp_path):
    (tmp_path / "labels.txt").write_text("q1 0 d1 2\nq1 0 d2 high\n", encoding="utf-8")
    got, err = run_py(tmp_path, "judge=qrels", "judge.path=labels.txt")
    lines = error_lines(err)
    assert (
        got["code"] == 2
        and len(lines) == 1
        and lines[0].startswith("judgebench: error: labels.txt:2:")
        and "'high'" in lines[0]
    ), err
    assert got["imported"] == [] and not (tmp_path / "mlruns").exists(), got


def test_an_unknown_compare_experiment_is_one_error_line_before_mlflow_is_imported(tmp_path):
    uri = f"sqlite:///{STORE['dir']}/mlflow.db"
    MlflowClient(uri).create_experiment("known_one")
    args = [f"tracking_uri={uri}", "experiment=no_such"]
    got, err = probe(tmp_path, "from judgebench.compare.entry import main", f"main({args!r})")
    assert got == {"code": 2, "imported": []}, (got, err)
    assert err.strip().startswith(
        "judgebench-compare: error: no MLflow experiment named 'no_such'; experiments in this store: "
    )
    assert "known_one" in err
    # a known experiment goes on to the compare itself (which imports MLflow and says what it finds)
    got, err = probe(
        tmp_path, "from judgebench.compare.entry import main", f"main({[args[0], 'experiment=known_one']!r})"
    )
    assert got["code"] == 2 and "mlflow" in got["imported"] and err.startswith("judgebench-compare: error: "), (
        got,
        err,
    )
    assert "no MLflow experiment named" not in err


def test_models_download_list_offline_is_one_line_without_the_hubs_retries(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens there
    env = env_with(HF_ENDPOINT=dead, HF_HOME=str(tmp_path / "hf"))
    for proxy in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(proxy, None)
    done = subprocess.run(
        [sys.executable, "-m", "judgebench.cli", "models", "download", "google/flan-t5-small", "--list"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = error_lines(done.stderr)
    assert done.returncode == 2 and len(lines) == 1 and f"cannot reach {dead}" in lines[0], done.stderr
    assert "Retry" not in done.stderr + done.stdout, done.stderr


def test_a_run_that_failed_on_its_input_before_any_work_is_deleted_not_left_failed(tmp_path):
    """The run file names a query the dataset lacks: found when the cell ranks, after its run was opened."""
    pool = load_toy().pool
    lines = "".join(
        f"{q} Q0 {d} {r} {s!r} mine\n"
        for q, d, s, r in pool[["query_id", "doc_id", "score", "rank"]].itertuples(index=False)
    )
    (tmp_path / "mine.run").write_text(lines + "q_unknown Q0 d1 1 1.0 mine\n", encoding="utf-8")
    uri = f"sqlite:///{STORE['dir']}/mlflow.db"
    res = cli_runner.run(
        [
            "ranker=runfile",
            f"ranker.path={tmp_path}/mine.run",
            "ranker.name=Mine",
            "judge=human",
            "progress=false",
            f"tracking_uri={uri}",
            f"artifact_root={STORE['dir']}/artifacts",
            f"cache_dir={tmp_path}/cache",
            f"hydra.run.dir={tmp_path}/out",
            "experiment_name=bad_input",
        ],
        cwd=tmp_path,
        env=env_with(),
    )
    assert res.rc == 2 and len(res.error_lines) == 1 and "q_unknown" in res.error_lines[0], str(res)
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name("bad_input").experiment_id
    assert client.search_runs([exp]) == []  # neither FAILED nor anything else in the UI or compare
    deleted = client.search_runs([exp], run_view_type=ViewType.DELETED_ONLY)
    assert len(deleted) == 1 and deleted[0].data.tags["judgebench.kind"] == "job"


def test_a_misspelt_key_is_one_line_exit_2_before_the_job_imports(tmp_path):
    """Hydra's own error (a key the config lacks) is our one line with the key probably meant, not Hydra's report."""
    got, err = run_py(tmp_path, "judge=gpt_4o_mini", "judge.temprature=0")
    assert got["code"] == 2 and err.strip().splitlines() == [
        "judgebench: error: judge.temprature=0: judge (gpt_4o_mini) has no setting 'temprature'; did you mean "
        "judge.backend.temperature?"
    ], err
    assert got["imported"] == [] and not (tmp_path / "mlruns").exists(), got


def test_a_refused_sweep_is_said_before_mlflow_is_imported_and_opens_no_store(tmp_path):
    """The sweep's checks run before its MLflow store and parent run are opened (sweep_store.open_sweep_store):
    a refused sweep imports no MLflow, creates no store, leaves no run (RUNNING, FAILED or deleted) and prints one
    line."""
    got, err = run_py(
        tmp_path,
        "-m",
        "ranker=runfile",
        f"ranker.path={tmp_path}/nope.run",
        "ranker.name=Mine",
        "judge=human,simulated",
        f"hydra.sweep.dir={tmp_path}/multirun",
    )
    assert got["code"] == 2 and err.strip().splitlines() == [
        f"judgebench: error: {tmp_path}/nope.run: file not found (ranker.path) (checked once for the sweep; no "
        "cell was started)"
    ], err
    assert got["imported"] == [] and not (tmp_path / "mlruns").exists(), got
