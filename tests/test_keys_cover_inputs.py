"""Class 1 of round 5: a derived result is keyed by the content of every input it was computed from, and a
result whose key cannot be computed is never served from a store.

BM25 re-scoring reads every passage of the corpus (its term statistics), not only the pool's; a pool declared
BM25 is another ranking than the same pool undeclared; ir_datasets reads its own index beside a docs file, so
it must be given a copy whose content it cannot outlive; one ir_datasets id over two qrels files is two
datasets; a stored ranking edited together with its digest is not the ranking the experiment logged.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from judgebench import rankings
from judgebench.data.datasets import load_toy
from judgebench.data.trec_files import load_trec
from judgebench.exceptions import DataError
from judgebench.identity.run_tags import RunTags
from judgebench.rankers.bm25 import BM25Ranker
from judgebench.rankers.oracle import OracleRanker
from trec_collection import TEXTS, collection

BM25 = {"_target_": "judgebench.rankers.bm25.BM25Ranker", "name": "BM25", "k1": 0.9, "b": 0.4}


class NoPerturbation:
    def apply(self, run, judged):
        return run


def _rank(cache: Path, dataset, ranker, components=None, client=None, experiment_id=None):
    settings = rankings.RankSettings({"ranker": components or BM25}, str(cache))
    return rankings.rank_once(
        settings,
        dataset,
        ranker,
        NoPerturbation(),
        dataset.corpus,
        ranker.name,
        ranker.reads_texts(dataset),
        client,
        experiment_id,
    )


def test_key_bm25_hashes_every_passage_it_indexes_not_only_the_pool(tmp_path):
    files = {k: str(v) for k, v in collection(tmp_path / "c").items()}
    ranker = BM25Ranker(name="BM25", cache_dir=str(tmp_path / "lucene"), progress=False)
    before = load_trec("mine", **files, pool_depth=2)  # pool: a, b (t1), e, f (t2); c, d, g, h only indexed
    assert set(before.pool["doc_id"]) == {"a", "b", "e", "f"}
    key = rankings.ranking_key({"ranker": BM25}, before, True, None, ranker.key_inputs(before))
    texts = {**TEXTS, "d": "cheap cheap flights flights lisbon lisbon"}  # a document outside the pool
    Path(files["passages"]).write_text("".join(f"{d}\t{t}\n" for d, t in texts.items()), encoding="utf-8")
    after = load_trec("mine", **files, pool_depth=2)
    assert rankings.ranking_key({"ranker": BM25}, after, True, None, ranker.key_inputs(after)) != key
    # an edit of nothing keeps the key (the same content read again)
    again = load_trec("mine", **files, pool_depth=2)
    assert rankings.ranking_key({"ranker": BM25}, again, True, None, ranker.key_inputs(again)) == rankings.ranking_key(
        {"ranker": BM25}, after, True, None, ranker.key_inputs(after)
    )


def test_key_holds_the_declaration_that_the_pool_is_bm25_and_an_unkeyed_ranking_is_refused(tmp_path):
    files = {k: str(v) for k, v in collection(tmp_path / "c", passages=None).items()}
    ranker = BM25Ranker(name="BM25", cache_dir=str(tmp_path / "lucene"), progress=False)
    declared = load_trec("mine", **files, pool_depth=3, pool_is="bm25")
    first = _rank(tmp_path / "cache", declared, ranker)
    assert first.computed and first.run["doc_id"].tolist() == ["a", "b", "c", "e", "f", "g"]
    # the same files, not declared (or declared with another k1): BM25 must re-score from texts that are not here,
    # as with an empty store, whatever the store holds
    for extra in ({}, {"pool_is": "bm25", "k1": 1.2}):
        undeclared = load_trec("mine", **files, pool_depth=3, **extra)
        with pytest.raises(DataError, match="passage texts are needed here but not available"):
            _rank(tmp_path / "cache", undeclared, ranker)
    assert _rank(tmp_path / "cache", declared, ranker).computed is False  # the declared one is still read back


def test_key_a_ranking_edited_with_its_digest_is_not_the_one_the_rank_run_logged(tmp_path):
    toy = load_toy()
    oracle = {"_target_": "judgebench.rankers.oracle.OracleRanker", "name": "Perfect"}
    ranker = OracleRanker(name="Perfect")
    first = _rank(tmp_path / "cache", toy, ranker, oracle)
    logged = SimpleNamespace(
        info=SimpleNamespace(run_id="r1"), data=SimpleNamespace(tags=RunTags(ranking_sha256=first.sha256).to_tags())
    )
    client = SimpleNamespace(search_runs=lambda *a, **k: [logged])
    assert _rank(tmp_path / "cache", toy, ranker, oracle, client, "0").text == first.text  # the logged one: read back
    lines = first.text.splitlines(keepends=True)
    edited = "".join(lines[1:2] + lines[:1] + lines[2:])  # two documents swapped, and the digest file rewritten
    store = rankings.RankingStore(tmp_path / "cache")
    store.write(first.key, edited, {})
    with pytest.raises(rankings.StoredRankingError, match="is not the ranking MLflow run r1"):
        _rank(tmp_path / "cache", toy, ranker, oracle, client, "0")


irds = pytest.importorskip("ir_datasets")


def _local(root: Path) -> dict[str, Path]:
    files = collection(root, "tsv")
    (root / "queries.tsv").write_text(files["topics"].read_text(encoding="utf-8"), encoding="utf-8")
    return {"docs": files["passages"], "queries": root / "queries.tsv", "qrels": files["qrels"], "pool": files["pool"]}


def test_key_irds_reads_the_docs_file_as_it_is_now_not_its_old_index(tmp_path):
    from judgebench.data.irds import load_irds

    files = _local(tmp_path / "c")
    local = {k: str(files[k]) for k in ("docs", "queries", "qrels")}
    dataset_id = f"judgebench-test/{uuid.uuid4().hex[:8]}"
    first = load_irds(
        "mine", id=dataset_id, pool=str(files["pool"]), pool_depth=3, local=local, cache_dir=str(tmp_path / "cache")
    )
    assert first.corpus["a"] == TEXTS["a"]
    files["docs"].write_text("".join(f"{d}\t{t} edited\n" for d, t in TEXTS.items()), encoding="utf-8")  # in place
    second = load_irds(
        "mine", id=dataset_id, pool=str(files["pool"]), pool_depth=3, local=local, cache_dir=str(tmp_path / "cache")
    )
    assert second.corpus["a"] == TEXTS["a"] + " edited"
    assert not list(files["docs"].parent.glob("*.pklz4"))  # ir_datasets' index is never written beside the user's file


def test_key_one_irds_id_over_two_qrels_files_is_two_datasets(tmp_path):
    from judgebench.data.irds import load_irds

    files = _local(tmp_path / "c")
    other = tmp_path / "qB.txt"
    other.write_text("t1 0 a 0\nt1 0 c 1\nt2 0 e 3\n", encoding="utf-8")
    dataset_id = f"judgebench-test/{uuid.uuid4().hex[:8]}"
    loads = [
        load_irds(
            "mine",
            id=dataset_id,
            pool=str(files["pool"]),
            pool_depth=3,
            cache_dir=str(tmp_path / "cache"),
            local={"docs": str(files["docs"]), "queries": str(files["queries"]), "qrels": str(q)},
        )
        for q in (files["qrels"], other)
    ]
    assert sorted(map(tuple, loads[1].qrels.values.tolist())) == [("t1", "a", 0), ("t1", "c", 1), ("t2", "e", 3)]
    assert len(loads[0].qrels) == 6


def test_key_irds_refuses_local_files_under_one_of_its_own_ids(tmp_path):
    from judgebench.data.irds import load_irds

    files = _local(tmp_path / "c")
    with pytest.raises(DataError, match="antique/test is one of ir_datasets' own collections"):
        load_irds(
            "mine",
            id="antique/test",
            pool=str(files["pool"]),
            cache_dir=str(tmp_path / "cache"),
            local={k: str(files[k]) for k in ("docs", "queries", "qrels")},
        )
