"""RunTags: the one schema of the MLflow tags jobs write and compare reads."""

from dataclasses import fields
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from judgebench.compare.store import collect
from judgebench.identity.run_tags import NAMES, PREFIX, RunTags

REPO = Path(__file__).resolve().parents[2]


def test_round_trip_keeps_every_field_and_ignores_foreign_tags():
    every = RunTags(**{f.name: f"value of {f.name}" for f in fields(RunTags)})
    written = every.to_tags()
    assert len(written) == len(fields(RunTags)) == len(NAMES)  # one distinct MLflow name per field
    assert written["judgebench.config_hash"] == "value of config_hash" and written["dataset"] == "value of dataset"
    read = RunTags.from_tags({**written, "mlflow.runName": "x", "judgebench.not_declared": "y"})
    assert read == every
    sparse = RunTags(kind="job", ranker_model="")
    assert sparse.to_tags() == {"judgebench.kind": "job", "ranker_model": ""}  # None is not written, "" is
    assert RunTags.from_tags(sparse.to_tags()) == sparse
    with pytest.raises(TypeError):
        RunTags(undeclared="x")  # a tag a job would write must be declared first


def _cfg(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlruns/mlflow.db",
                f"artifact_root={tmp}/mlruns/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=tags",
                "sweep_id=s1",
                "progress=false",
                *overrides,
            ],
        )


def test_every_tag_the_jobs_write_is_declared_and_compare_reads_it_back(tmp_path, monkeypatch):
    from judgebench.jobs.labels_only import run_labels_only
    from judgebench.jobs.pipeline import run_job
    from judgebench.jobs.rank_job import run_rank

    monkeypatch.setenv("SLURM_JOB_ID", "77")  # the optional SLURM tags are written too
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "76")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    cell = run_job(_cfg(tmp_path, "ranker=oracle", "perturbation=swap_1", "judge=simulated"))
    assert cell.status == "finished"
    assert run_rank(_cfg(tmp_path, "job=rank", "ranker=simulated_llm", "perturbation=perfect")).status == "finished"
    assert run_labels_only(_cfg(tmp_path, "job=labels_only", "judge=simulated")).status == "finished"

    client = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("tags").experiment_id])
    kinds = {r.data.tags.get(f"{PREFIX}kind") for r in runs}
    assert {"job", "judge_summary", "labels", "ranking"} <= kinds, kinds
    for r in runs:
        ours = {k for k in r.data.tags if not k.startswith("mlflow.")}
        assert ours - NAMES == set(), (r.data.tags.get(f"{PREFIX}kind"), sorted(ours - NAMES))

    written = client.get_run(cell.run_id).data.tags
    assert written["slurm_array_task_id"] == "3" and written["judgebench.sweep_id"] == "s1"
    read = RunTags.from_tags(written)
    assert read.to_tags() == {k: v for k, v in written.items() if k in NAMES}  # nothing of ours lost on the way back
    row = collect.run_row(client.get_run(cell.run_id))
    assert (row["system"], row["judge"], row["sweep_id"]) == ("Swap[1]", "simulated", "s1")
    assert (
        row["judge_hash"] == written["judgebench.judge_hash"]
        and row["dataset_hash"] == written["judgebench.dataset_hash"]
    )


def test_where_finds_runs_by_declared_tag_names_and_status(tmp_path):
    """Searches for runs name their tags through RunTags, as the writers do: the filter finds exactly the runs
    written with those values (and that status)."""
    assert RunTags.where(kind="ranking", ranking_key="k1", status="FINISHED") == (
        "tags.`judgebench.kind` = 'ranking' and tags.`judgebench.ranking_key` = 'k1' and attributes.status = 'FINISHED'"
    )
    assert RunTags.where(dataset="toy") == "tags.`dataset` = 'toy'"  # a shown tag: its bare name
    with pytest.raises(KeyError):
        RunTags.where(rankingkey="k1")  # an undeclared tag cannot be searched for
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.create_experiment("w", artifact_location=str(tmp_path / "artifacts"))
    made = {}
    for kind, key, status in (
        ("ranking", "k1", "FINISHED"),
        ("ranking", "k1", "RUNNING"),
        ("ranking", "k2", "FINISHED"),
        ("job", "k1", "FINISHED"),
    ):
        run = client.create_run(exp, tags=RunTags(kind=kind, ranking_key=key, dataset="toy").to_tags())
        if status == "FINISHED":
            client.set_terminated(run.info.run_id, "FINISHED")
        made[(kind, key, status)] = run.info.run_id

    def found(filt):
        return {r.info.run_id for r in client.search_runs([exp], filter_string=filt)}

    assert found(RunTags.where(kind="ranking", ranking_key="k1", status="FINISHED")) == {
        made[("ranking", "k1", "FINISHED")]
    }
    assert found(RunTags.where(kind="ranking", ranking_key="k1")) == {
        made[("ranking", "k1", "FINISHED")],
        made[("ranking", "k1", "RUNNING")],
    }
    assert found(RunTags.where(dataset="toy", status="RUNNING")) == {made[("ranking", "k1", "RUNNING")]}
