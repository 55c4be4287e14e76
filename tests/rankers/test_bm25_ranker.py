"""The bm25 ranker on the toy dataset: its pool is reproduced from the bundled files by Lucene."""

from judgebench.data.datasets import load_toy, toy_pool_from_bm25
from judgebench.rankers.bm25 import BM25Ranker


def test_bundled_toy_pool_is_the_lucene_bm25_order(tmp_path):
    ds = load_toy()
    regenerated = toy_pool_from_bm25(tmp_path)
    assert list(zip(regenerated["query_id"], regenerated["doc_id"])) == list(
        zip(ds.pool["query_id"], ds.pool["doc_id"])
    )
    assert (regenerated["score"] - ds.pool["score"]).abs().max() < 1e-6


def test_bm25_ranker_returns_the_pool_or_rescores_it(tmp_path):
    ds = load_toy()
    as_pool = BM25Ranker(name="BM25", cache_dir=str(tmp_path), progress=False).rank(ds, ds.corpus)
    assert as_pool.equals(ds.pool[["query_id", "doc_id", "score", "rank"]])
    # a rewritten text view is re-scored by Lucene (here: the same texts in a copy, so the same order)
    rescored = BM25Ranker(name="BM25", cache_dir=str(tmp_path), progress=False).rank(ds, dict(ds.corpus))
    assert list(rescored["doc_id"]) == list(ds.pool["doc_id"])
    # other parameters give another order on at least one query
    other = BM25Ranker(name="BM25", k1=3.0, b=1.0, cache_dir=str(tmp_path), progress=False).rank(ds, ds.corpus)
    assert list(other["doc_id"]) != list(ds.pool["doc_id"])
    assert sorted(other["doc_id"]) == sorted(ds.pool["doc_id"])
