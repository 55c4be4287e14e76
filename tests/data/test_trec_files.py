"""dataset=trec: any collection from files (topics, qrels, a TREC run as pool, optional passages), loaded,
validated and fingerprinted as dl19 is; a small collection built here runs a cell; on the shipped DL19 files
with pool_is=bm25 it is dl19 (same fingerprint, same human Table 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from cli_runner import ERROR_PREFIX, run, warm_store
from judgebench.data import fingerprint
from judgebench.data.corpus import available
from judgebench.data.trec_dl import SHIPPED, load_trec_dl
from judgebench.data.trec_files import load_trec
from judgebench.exceptions import DataError
from reference_impl import ndcg10_judged
from trec_collection import QRELS, RUN, TEXTS, TOPICS, collection  # noqa: F401


def test_a_small_collection_loads_with_tsv_or_jsonl_passages(tmp_path):
    for kind in ("tsv", "jsonl"):
        files = collection(tmp_path / kind, kind)
        ds = load_trec("mine", **{k: str(v) for k, v in files.items()}, pool_depth=3)
        assert set(ds.queries) == {"t1", "t2"} and ds.topic_ids == {"t1", "t2", "t3"}
        assert ds.pool[["query_id", "doc_id"]].values.tolist() == [
            ["t1", "a"],
            ["t1", "b"],
            ["t1", "c"],
            ["t2", "e"],
            ["t2", "f"],
            ["t2", "g"],
        ]
        assert dict(ds.corpus) == TEXTS and ds.pool_provenance == {
            "ranker": "unknown",
            "depth": 3,
            "source": "file:run.trec",
        }
    bm25 = load_trec(
        "mine", **{k: str(v) for k, v in collection(tmp_path / "n", None).items()}, pool_is="bm25", k1=1.2, b=0.75
    )
    assert not available(bm25.corpus) and bm25.pool_provenance["ranker"] == "bm25" and bm25.pool_provenance["k1"] == 1.2


def test_bad_input_names_file_and_line(tmp_path):
    files = {k: str(v) for k, v in collection(tmp_path / "c").items()}
    Path(files["passages"]).write_text("a\tone\nb two\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"passages.tsv:2: expected 'doc_id<TAB>text'"):
        load_trec("mine", **files)
    Path(files["passages"]).write_text("a\tone\n", encoding="utf-8")
    with pytest.raises(
        DataError, match=r"passages.tsv: 5 pool documents of .*run.trec have no passage text here, e.g. b, c, e, f, g"
    ):
        load_trec("mine", **files, pool_depth=3)
    with pytest.raises(DataError, match=r"dataset=trec needs dataset.qrels=FILE, dataset.pool=FILE"):
        load_trec("mine", topics=files["topics"])
    with pytest.raises(DataError, match=r"'lucene': expected one of bm25"):
        load_trec("mine", **files, pool_is="lucene")


def test_a_cell_runs_on_a_small_collection(tmp_path_factory, tmp_path):
    store = warm_store(tmp_path_factory)
    files = collection(tmp_path / "c")
    args = [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        "experiment_name=trecfiles",
        "dataset=trec",
        "dataset.name=mine",
        *(f"dataset.{k}={v}" for k, v in files.items()),
        "dataset.pool_depth=3",
        "dataset.pool_is=bm25",
        "ranker=bm25",
        "judge=human",
    ]
    res = run(args, cwd=tmp_path)
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    (job,) = client.search_runs(
        [client.get_experiment_by_name("trecfiles").experiment_id], filter_string="tags.`judgebench.kind` = 'job'"
    )
    # the pool's own order (pool_is=bm25: no re-scoring), cut to depth 3, scored here with an nDCG written apart
    ranked = [(q, d, r) for q in ("t1", "t2") for r, d in enumerate([d for qq, d, _ in RUN if qq == q][:3], start=1)]
    expected = ndcg10_judged(ranked, QRELS)
    assert job.data.tags["dataset"] == "mine" and job.data.metrics["ndcg10_human"] == pytest.approx(
        sum(expected.values()) / 2
    )
    res = run(
        [*args[:6], "dataset=trec", f"dataset.topics={files['topics']}", "ranker=oracle", "judge=human"], cwd=tmp_path
    )
    assert res.rc == 2 and res.error_lines == [
        f"{ERROR_PREFIX} dataset trec: dataset=trec needs dataset.qrels=FILE, dataset.pool=FILE "
        "(topics: 'query_id<TAB>text'; qrels: TREC qrels; pool: a TREC run, cut to "
        "dataset.pool_depth)"
    ], res


def test_the_shipped_dl19_files_are_dl19():
    files = {
        "topics": SHIPPED / "topics.dl19-passage.txt",
        "qrels": SHIPPED / "qrels.dl19-passage.txt",
        "pool": SHIPPED / "bm25.dl19.top100.trec",
    }
    mine = load_trec("trec", **{k: str(v) for k, v in files.items()}, pool_is="bm25")
    dl19 = load_trec_dl("dl19", 2019)
    assert fingerprint.fingerprint(mine).hash == fingerprint.fingerprint(dl19).hash
    assert mine.pool.equals(dl19.pool) and mine.qrels.equals(dl19.qrels) and mine.queries == dl19.queries


@pytest.mark.slow  # ~60 s: 14 cells (BM25 and the six oracles under the human judge on both datasets)
def test_dataset_trec_on_the_dl19_files_reproduces_dl19s_human_table1(tmp_path_factory, tmp_path):
    store = warm_store(tmp_path_factory)
    base = [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        "experiment_name=trecdl19",
        "judge=human",
        "+system=bm25,oracle_perfect,oracle_swap_3,oracle_swap_2,oracle_swap_1,oracle_swap_2_3,oracle_swap_1_2",
    ]
    trec = [
        "dataset=trec",
        "dataset.name=mydl19",
        f"dataset.topics={SHIPPED / 'topics.dl19-passage.txt'}",
        f"dataset.qrels={SHIPPED / 'qrels.dl19-passage.txt'}",
        f"dataset.pool={SHIPPED / 'bm25.dl19.top100.trec'}",
        "dataset.pool_is=bm25",
    ]
    for extra in (["dataset=dl19"], trec):
        res = run(["-m", *base, *extra], cwd=tmp_path)
        assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    runs = client.search_runs(
        [client.get_experiment_by_name("trecdl19").experiment_id], filter_string="tags.`judgebench.kind` = 'job'"
    )
    table = {(r.data.tags["dataset"], r.data.tags["system"]): r.data.metrics["ndcg10_human"] for r in runs}
    dl19 = {s: v for (d, s), v in table.items() if d == "dl19"}
    assert (
        len(dl19) == 7 and {s: v for (d, s), v in table.items() if d == "mydl19"} == dl19
    )  # exactly, not approximately
    assert round(dl19["Perfect"], 4) == 0.8922 and round(dl19["BM25"], 4) == 0.5058  # the paper's human Table 1
    hashes = {r.data.tags["dataset"]: r.data.tags["judgebench.dataset_hash"] for r in runs}
    assert hashes["dl19"] == hashes["mydl19"]
