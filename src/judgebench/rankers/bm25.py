"""BM25 as a ranker: the retrieval package's Lucene BM25, applied to each query's pool."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from judgebench.data import fingerprint
from judgebench.rankers.base import Ranker, ranking_from_scores
from judgebench.retrieval.search import bm25_search


@dataclass
class BM25Ranker(Ranker):
    """BM25 as a system. A pool that already is this BM25 (same k1, b) is returned as it is (the
    paper's "BM25" row); otherwise each query's pool is re-scored from a Lucene index of the corpus."""

    kind: str = "lexical"
    k1: float = 0.9
    b: float = 0.4
    cache_dir: str = ".cache/judgebench"
    progress: bool = True

    def is_the_pool(self, dataset) -> bool:
        """Whether the dataset's pool already is this BM25 (same k1, b): then no text is read."""
        prov = dataset.pool_provenance
        return prov.get("ranker") == "bm25" and prov.get("k1") == self.k1 and prov.get("b") == self.b

    def reads_texts(self, dataset) -> bool:
        return not self.is_the_pool(dataset)

    def key_inputs(self, dataset) -> dict:
        """Its ranking depends on whether the pool is declared to be this BM25 (then it is returned as it is) and, when
        it re-scores, on every passage of the corpus (the index's term statistics), not only the pool's."""
        return {"bm25_pool": self.is_the_pool(dataset), "corpus": fingerprint.corpus_digest(dataset)}

    def rank(self, dataset, texts) -> pd.DataFrame:
        pool = dataset.pool[dataset.pool["query_id"].isin(dataset.judged_queries())]
        if self.is_the_pool(dataset) and texts is dataset.corpus:
            return pool[["query_id", "doc_id", "score", "rank"]].reset_index(drop=True)
        depth = int(pool.groupby("query_id").size().max())
        corpus = {d: texts[d] for d in dataset.corpus}
        queries = {q: dataset.queries[q] for q in dataset.judged_queries()}
        hits = bm25_search(
            queries,
            corpus,
            k1=self.k1,
            b=self.b,
            depth=max(depth, len(corpus)),
            cache_dir=self.cache_dir,
            progress=self.progress,
        )
        scored = pool[["query_id", "doc_id"]].merge(
            hits[["query_id", "doc_id", "score"]], on=["query_id", "doc_id"], how="left"
        )
        scored["score"] = scored["score"].fillna(0.0)  # no query term in the passage
        return ranking_from_scores(scored)
