"""retrieval.search.prebuilt_pool, the pool of the datasets without a run of their own (TREC DL online, ir_datasets):
the search it asks for and the provenance it records, without a JVM or the network (the search itself is
tests/retrieval/test_bm25.py's)."""

from __future__ import annotations

from pathlib import Path

from judgebench.retrieval import search


def test_the_prebuilt_pool_searches_the_index_and_says_so(monkeypatch):
    asked = []
    monkeypatch.setattr(search, "bm25_search", lambda *a, **kw: asked.append((a, kw)) or "the run")
    pool, provenance = search.prebuilt_pool({"q1": "volcano"}, "msmarco-v1-passage", 0.9, 0.4, 100, None)
    assert pool == "the run"
    assert asked == [
        (
            ({"q1": "volcano"}, None),
            {
                "prebuilt": "msmarco-v1-passage",
                "k1": 0.9,
                "b": 0.4,
                "depth": 100,
                "cache_dir": Path(".cache/judgebench"),
            },
        )
    ]
    assert provenance == {
        "ranker": "bm25",
        "k1": 0.9,
        "b": 0.4,
        "depth": 100,
        "index": "msmarco-v1-passage",
        "source": "pyserini-prebuilt",
    }
    assert list(provenance) == ["ranker", "k1", "b", "depth", "index", "source"]  # the order the datasets recorded
