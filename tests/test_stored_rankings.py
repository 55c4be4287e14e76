"""A stored ranking is never read back wrong: every read checks the digest it was stored with.

The damage is done by hand to the stored bytes (lines reversed, cut to half, garbage appended, the digest of
an older judgebench missing, an MLflow artifact cut short); each must stop the cell with one line naming the
stored file and ``force=true``, and ``force=true`` must compute the ranking again (the true nDCG comes back).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import cli_runner
from judgebench import rankings


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return cli_runner.warm_store(tmp_path_factory)


def _args(store: Path, tmp: Path, *extra: str, cache: str = "cache") -> list[str]:
    return [
        "ranker=bm25",
        "judge=human",
        "progress=false",
        f"experiment_name={tmp.name}",
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={tmp / cache}",
        f"hydra.run.dir={tmp}/out",
        *extra,
    ]


def _cells(store: Path, tmp: Path, ranking: bool = False) -> list:
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    exp = client.get_experiment_by_name(tmp.name).experiment_id
    kind = "ranking" if ranking else "job"
    return client.search_runs([exp], f"tags.`judgebench.kind` = '{kind}'", order_by=["attributes.start_time DESC"])


def _stored(tmp: Path, cache: str = "cache") -> Path:
    (path,) = (tmp / cache / "rankings").glob("*.trec")
    return path


def _refused(res, path: Path) -> str:
    assert res.rc == 2, str(res)
    (line,) = res.error_lines
    assert str(path) in line and "force=true" in line and "Traceback" not in res.err, str(res)
    return line


DAMAGE = {
    "reversed": lambda b: b"".join(reversed(b.splitlines(keepends=True))),
    "half": lambda b: b[: len(b) // 2],
    "garbage": lambda b: b + bytes([0xFF, 0xFE, 0x00, 0x81]) * 8,
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_stored_ranking_stops_the_cell_and_force_computes_it_again(store, tmp_path, damage):
    first = cli_runner.run(_args(store, tmp_path, "force=true"), cwd=tmp_path)
    assert first.rc == 0, str(first)
    truth = _cells(store, tmp_path)[0].data.metrics["ndcg10_human"]
    path = _stored(tmp_path)
    good = path.read_bytes()
    path.write_bytes(DAMAGE[damage](good))
    line = _refused(cli_runner.run(_args(store, tmp_path, "judge=simulated"), cwd=tmp_path), path)
    assert "does not match its digest" in line
    # job=rank force=true computes it again instead of reading the damaged file back
    again = cli_runner.run(_args(store, tmp_path, "job=rank", "force=true"), cwd=tmp_path)
    assert again.rc == 0, str(again)
    assert path.read_bytes() == good
    ranked = _cells(store, tmp_path, ranking=True)[0].data
    assert ranked.metrics["ranking_computed"] == 1
    assert ranked.tags["judgebench.ranking_sha256"] == hashlib.sha256(good).hexdigest()
    done = cli_runner.run(_args(store, tmp_path, "force=true"), cwd=tmp_path)
    assert done.rc == 0 and _cells(store, tmp_path)[0].data.metrics["ndcg10_human"] == truth, str(done)


def test_a_grid_cell_with_force_repairs_a_damaged_ranking_and_one_without_a_digest_is_refused(store, tmp_path):
    assert cli_runner.run(_args(store, tmp_path, "force=true"), cwd=tmp_path).rc == 0
    truth = _cells(store, tmp_path)[0].data.metrics["ndcg10_human"]
    path = _stored(tmp_path)
    meta_path = path.with_suffix(".json")
    meta = json.loads(meta_path.read_text())
    meta.pop("sha256")  # as an older judgebench stored it
    meta_path.write_text(json.dumps(meta))
    line = _refused(cli_runner.run(_args(store, tmp_path, "judge=simulated"), cwd=tmp_path), path)
    assert "without a digest" in line
    path.write_bytes(DAMAGE["reversed"](path.read_bytes()))
    fixed = cli_runner.run(_args(store, tmp_path, "force=true"), cwd=tmp_path)
    assert fixed.rc == 0 and "computing it again" in fixed.out + fixed.err, str(fixed)
    assert (
        _cells(store, tmp_path)[0].data.metrics["ndcg10_human"] == truth
        and _cells(store, tmp_path)[0].data.metrics["ranking_computed"] == 1
    )


def test_a_truncated_mlflow_artifact_is_refused_on_a_machine_with_an_empty_store(store, tmp_path):
    assert cli_runner.run(_args(store, tmp_path, "job=rank", "force=true"), cwd=tmp_path).rc == 0
    run = _cells(store, tmp_path, ranking=True)[0]
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    with tempfile.TemporaryDirectory() as tmp:
        local = Path(client.download_artifacts(run.info.run_id, "run.trec", tmp))
        assert hashlib.sha256(local.read_bytes()).hexdigest() == run.data.tags["judgebench.ranking_sha256"]
    (artifact,) = (store / "artifacts").glob(f"**/{run.info.run_id}/artifacts/run.trec")
    artifact.write_bytes(artifact.read_bytes()[:200])
    res = cli_runner.run(_args(store, tmp_path, "judge=simulated", cache="other"), cwd=tmp_path)
    line = _refused(res, Path(f"run.trec of MLflow run {run.info.run_id}"))
    assert "does not match its digest" in line
    assert not list((tmp_path / "other" / "rankings").glob("*.trec"))  # nothing damaged was stored


def test_an_empty_stored_ranking_names_the_stored_file(tmp_path):
    with pytest.raises(rankings.StoredRankingError) as e:
        rankings.parse("", str(tmp_path / "rankings" / "k.trec"))
    assert str(e.value).startswith(str(tmp_path / "rankings" / "k.trec")) and "/tmp" not in str(e.value).replace(
        str(tmp_path), ""
    )
    store = rankings.RankingStore(tmp_path)
    store.write("k", "q1 Q0 d1 1 2.0 s\n", {})
    assert store.read("k") == "q1 Q0 d1 1 2.0 s\n"
    store.path("k").write_bytes(b"\xff\xfe")
    with pytest.raises(rankings.StoredRankingError, match="does not match its digest"):
        store.read("k")


def test_a_rank_job_killed_with_sigkill_is_marked_killed_by_the_rerun(store, tmp_path):
    import socket
    import subprocess
    import sys

    assert cli_runner.run(_args(store, tmp_path, "job=rank"), cwd=tmp_path).rc == 0
    done = _cells(store, tmp_path, ranking=True)[0]
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # its pid is free now: the process a SIGKILL left behind
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    killed = client.create_run(
        done.info.experiment_id,
        tags={
            "judgebench.kind": "ranking",
            "judgebench.ranking_key": done.data.tags["judgebench.ranking_key"],
            "judgebench.host": socket.gethostname(),
            "judgebench.pid": str(dead.pid),
        },
    )
    again = cli_runner.run(_args(store, tmp_path, "job=rank"), cwd=tmp_path)
    assert again.rc == 0, str(again)
    assert client.get_run(killed.info.run_id).info.status == "KILLED"
    assert client.get_run(done.info.run_id).info.status == "FINISHED"


def test_the_metrics_stored_beside_a_ranking_are_checked_when_read(tmp_path):
    """A ranker's statistics (a run file's documents outside the pool) are stored with their own digest: read back
    as written, an edited figure or a garbled mapping stops with the file's name; a ranking stored before the digest
    existed is read as it is."""
    store = rankings.RankingStore(tmp_path)
    store.write("k", "q1 Q0 d1 1 2.0 s\n", {"metrics": {"outside_pool_kept": 2, "outside_pool_of": 12}})
    assert store.metrics("k") == {"outside_pool_kept": 2.0, "outside_pool_of": 12.0}
    meta_path = tmp_path / "rankings" / "k.json"
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "metrics": {"outside_pool_kept": 0, "outside_pool_of": 12}}))
    with pytest.raises(rankings.StoredRankingError, match="metrics do not match their digest") as e:
        store.metrics("k")
    assert str(e.value).startswith(str(meta_path))
    meta_path.write_text(json.dumps({k: v for k, v in {**meta, "metrics": ["x"]}.items() if k != "metrics_sha256"}))
    with pytest.raises(rankings.StoredRankingError, match="not a mapping of names to numbers"):
        store.metrics("k")
    meta_path.write_text(
        json.dumps({k: v for k, v in meta.items() if k != "metrics_sha256"})
    )  # stored before the digest
    assert store.metrics("k") == {"outside_pool_kept": 2.0, "outside_pool_of": 12.0}
