"""Many jobs starting at once against one MLflow store (a SLURM array, a parallel local sweep).

Known MLflow races: schema creation when several processes open a fresh SQLite store, concurrent
experiment creation, SQLite "database is locked". Processes are forked from a warm parent and
released together by a barrier, so their store accesses overlap as much as they can.
"""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from judgebench.jobs.common import load_dataset
from judgebench.jobs.pipeline import run_job
from judgebench.tracking import mlflow_store, retries

REPO = Path(__file__).resolve().parents[2]
CELLS = [(judge, pert) for judge in ("human", "simulated") for pert in ("perfect", "swap_1", "swap_2", "swap_3")]
FORK = mp.get_context("fork")
pytestmark = pytest.mark.real_mlflow_schema  # these are about MLflow creating a store's schema under contention


def cfg_for(tmp: Path, *overrides: str, return_hydra_config: bool = False):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            return_hydra_config=return_hydra_config,
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlruns/mlflow.db",
                f"artifact_root={tmp}/mlruns/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=concurrent",
                "sweep_id=c1",
                "progress=false",
                *overrides,
            ],
        )


def _job(cfg, barrier, results) -> None:
    barrier.wait()
    try:
        outcome = run_job(cfg)
        results.put((outcome.status, outcome.run_id))
    except BaseException as exc:  # report, never hang the parent
        results.put(("error", repr(exc)[:500]))


def _run_all(target, args_list) -> list:
    barrier, results = FORK.Barrier(len(args_list)), FORK.Queue()
    procs = [FORK.Process(target=target, args=(*args, barrier, results)) for args in args_list]
    for p in procs:
        p.start()
    out = [results.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return out


def test_eight_concurrent_jobs_on_a_fresh_store_make_eight_complete_runs(tmp_path):
    cfgs = [cfg_for(tmp_path, "ranker=oracle", f"perturbation={pert}", f"judge={judge}") for judge, pert in CELLS]
    load_dataset(cfgs[0].dataset)  # warm the parent: the children race on MLflow, not on imports
    assert not (tmp_path / "mlruns").exists()  # nobody created the store or the experiment beforehand

    outcomes = _run_all(_job, [(cfg,) for cfg in cfgs])
    assert [status for status, _ in outcomes] == ["finished"] * 8, outcomes

    client = MlflowClient(cfgs[0].tracking_uri)
    experiments = [e for e in client.search_experiments() if e.name == "concurrent"]
    assert len(experiments) == 1
    runs = client.search_runs([experiments[0].experiment_id], "tags.`judgebench.kind` = 'job'")
    assert len(runs) == 8 and {r.info.status for r in runs} == {"FINISHED"}
    assert {r.info.run_id for r in runs} == {run_id for _, run_id in outcomes}
    assert len({r.data.tags["judgebench.config_hash"] for r in runs}) == 8
    for r in runs:  # complete: params, metrics and artifacts all logged
        assert (
            r.info.experiment_id == client.get_experiment_by_name("concurrent").experiment_id
            and "ndcg10_human" in r.data.metrics
        )
        assert {"run.trec", "per_query.csv", "config.yaml"} <= {a.path for a in client.list_artifacts(r.info.run_id)}

    # and all eight again at once: every cell is found finished, nothing is logged twice
    outcomes = _run_all(_job, [(cfg,) for cfg in cfgs])
    assert [status for status, _ in outcomes] == ["skipped-done"] * 8, outcomes
    assert len(client.search_runs([experiments[0].experiment_id], "tags.`judgebench.kind` = 'job'")) == 8
    # one judge, one label set: its statistics are logged once, not once per concurrent job
    summaries = client.search_runs([experiments[0].experiment_id], "tags.`judgebench.kind` = 'judge_summary'")
    assert len({r.data.tags["judge"] for r in summaries}) == len(summaries)


def _create(uri, artifact_root, barrier, results) -> None:
    barrier.wait()
    try:
        mlflow_store.ensure_sqlite_parent(uri)
        results.put(mlflow_store.get_or_create_experiment(MlflowClient(uri), "raced", artifact_root))
    except BaseException as exc:
        results.put(f"error: {exc!r}"[:500])


def test_experiment_creation_is_idempotent_under_contention(tmp_path):
    uri = f"sqlite:///{tmp_path}/store/mlflow.db"
    ids = _run_all(_create, [(uri, str(tmp_path / "artifacts"))] * 12)
    assert len(set(ids)) == 1 and not str(ids[0]).startswith("error"), ids
    names = [e.name for e in MlflowClient(uri).search_experiments()]
    assert names.count("raced") == 1


def test_sweep_callback_creates_the_experiment_before_the_jobs(tmp_path, monkeypatch):
    from omegaconf import open_dict

    from judgebench.cli.sweep_store import precreate_experiment

    monkeypatch.chdir(tmp_path)  # the default store, ${hydra:runtime.cwd}/mlruns/mlflow.db, lands here
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(config_name="config", return_hydra_config=True, overrides=["experiment_name=concurrent"])
    exp_id = precreate_experiment(cfg)
    client = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    experiment = client.get_experiment_by_name("concurrent")
    assert (
        experiment.experiment_id == exp_id and experiment.artifact_location == "mlflow-artifacts:/concurrent"
    )  # beside the store: relative
    assert (tmp_path / "mlruns" / "mlflow.db.ready").exists()
    # a swept experiment name cannot be created up front: the jobs create theirs
    swept = cfg_for(tmp_path / "other", return_hydra_config=True)
    with open_dict(swept):
        swept.hydra.overrides.task.append("experiment_name=a,b")
    assert precreate_experiment(swept) is None and not (tmp_path / "other").exists()


@pytest.mark.parametrize("attempts_failing", [1, 3])
def test_transient_store_errors_are_retried(attempts_failing):
    from mlflow.exceptions import MlflowException

    calls = []

    def flaky():
        calls.append(1)
        if len(calls) <= attempts_failing:
            raise MlflowException("(sqlite3.OperationalError) database is locked", error_code="TEMPORARILY_UNAVAILABLE")
        return "ok"

    assert retries.retry(flaky) == "ok" and len(calls) == attempts_failing + 1
    with pytest.raises(MlflowException):  # anything else is raised at once
        retries.retry(lambda: (_ for _ in ()).throw(MlflowException("bad param", error_code="INVALID_PARAMETER_VALUE")))
