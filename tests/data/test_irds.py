"""dataset=irds: queries, qrels and texts through ir_datasets, offline, on a local collection registered with
ir_datasets' own local-files API (create_dataset + registry.register); the pool from a run file."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from cli_runner import run, warm_store
from judgebench.data import fingerprint
from judgebench.data.trec_files import load_trec
from judgebench.exceptions import DataError
from reference_impl import ndcg10_judged
from trec_collection import QRELS, RUN, TEXTS, collection

ir_datasets = pytest.importorskip("ir_datasets")


def local_files(root: Path) -> dict[str, Path]:
    """The small collection of test_trec_files, with its queries and docs as ir_datasets' TSV files."""
    files = collection(root, "tsv")
    (root / "queries.tsv").write_text(files["topics"].read_text(encoding="utf-8"), encoding="utf-8")
    return {
        "docs": files["passages"],
        "queries": root / "queries.tsv",
        "qrels": files["qrels"],
        "pool": files["pool"],
        "topics": files["topics"],
    }


def test_a_locally_registered_collection_loads_through_ir_datasets(tmp_path):
    from judgebench.data.irds import load_irds

    files = local_files(tmp_path / "c")
    dataset_id = f"judgebench-test/{uuid.uuid4().hex[:8]}"
    ir_datasets.registry.register(
        dataset_id,
        ir_datasets.create_dataset(
            docs_tsv=str(files["docs"]), queries_tsv=str(files["queries"]), qrels_trec=str(files["qrels"])
        ),
    )
    ds = load_irds("mine", id=dataset_id, pool=str(files["pool"]), pool_depth=3)
    assert ds.queries == {"t1": "cheap flights to lisbon", "t2": "how to bake rye bread"} and ds.topic_ids == {
        "t1",
        "t2",
        "t3",
    }
    assert sorted(map(tuple, ds.qrels.values.tolist())) == sorted(QRELS)
    assert ds.pool["doc_id"].tolist() == ["a", "b", "c", "e", "f", "g"] and ds.corpus == {d: TEXTS[d] for d in "abcefg"}
    # the same collection as files: the same dataset
    same = load_trec(
        "mine", topics=str(files["topics"]), qrels=str(files["qrels"]), pool=str(files["pool"]), pool_depth=3
    )
    assert fingerprint.fingerprint(ds).hash == fingerprint.fingerprint(same).hash
    with pytest.raises(DataError, match="is not an ir_datasets id"):
        load_irds("mine", id="judgebench-test/never-registered", pool=str(files["pool"]))
    with pytest.raises(DataError, match="needs a pool: dataset.pool=RUN"):
        load_irds("mine", id=dataset_id)


def test_a_cell_runs_on_a_local_collection(tmp_path_factory, tmp_path):
    store = warm_store(tmp_path_factory)
    files = local_files(tmp_path / "c")
    local = ",".join(f"{k}:'{files[k]}'" for k in ("docs", "queries", "qrels"))
    args = [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        "experiment_name=irds",
        "dataset=irds",
        "dataset.name=mine",
        f"dataset.id=judgebench-test/{uuid.uuid4().hex[:8]}",
        f"dataset.local={{{local}}}",
        f"dataset.pool={files['pool']}",
        "dataset.pool_depth=3",
        "dataset.pool_is=bm25",
        "ranker=bm25",
        "judge=human",
    ]
    res = run(args, cwd=tmp_path)
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    (job,) = client.search_runs(
        [client.get_experiment_by_name("irds").experiment_id], filter_string="tags.`judgebench.kind` = 'job'"
    )
    ranked = [(q, d, r) for q in ("t1", "t2") for r, d in enumerate([d for qq, d, _ in RUN if qq == q][:3], start=1)]
    expected = ndcg10_judged(ranked, QRELS)
    assert job.data.metrics["ndcg10_human"] == pytest.approx(sum(expected.values()) / 2)
