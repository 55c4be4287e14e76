"""Datasets: queries, human qrels, passage texts and a candidate pool, as plain frames.

Every stage downstream reads the same four things, whatever the source (bundled files,
TREC files, ir_datasets + Pyserini), so loaders only have to fill this one dataclass.
A collection with human labels but no passages and no pool (LLMJudge) is a ``LabelsDataset``:
it can compare labels (a labels-only experiment), not rank systems.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import ClassVar

import pandas as pd

from judgebench.data.corpus import UnavailableCorpus, available
from judgebench.data.reading import lines, read_text
from judgebench.data.trec import check_queries_known, read_passages, read_qrels, read_run, read_topics
from judgebench.evaluation import cut, positions
from judgebench.exceptions import DataError


@dataclass
class Dataset:
    name: str
    queries: dict[str, str]
    qrels: pd.DataFrame  # query_id, doc_id, relevance
    corpus: Mapping[str, str]  # doc_id -> text (at least every pool document), or an UnavailableCorpus
    pool: pd.DataFrame  # query_id, doc_id, score, rank: the candidates every ranker reorders
    # How the pool was made, e.g. {"ranker": "bm25", "k1": 0.9, "b": 0.4, "depth": 100}.
    pool_provenance: dict = field(default_factory=dict)
    # Every topic id of the source (queries keeps the judged ones): runs may cover unjudged topics.
    topic_ids: frozenset = frozenset()
    # The input files its loader opened (identity/files_read.py): hashed into every job's resume key.
    input_files: tuple = ()
    # Whether rankers can run on it (a pool of candidates with passage texts).
    has_pool: ClassVar[bool] = True
    # The lowest human level that counts as relevant (dataset.relevant_from; TREC DL: 2): the binary kappa's cut and a
    # binary judge's gain (label_scale.py). A class default, set per dataset by the job that loads it.
    relevant_from: ClassVar[int] = 2

    def __post_init__(self) -> None:
        if not available(self.corpus):
            return
        missing = sorted(set(self.pool["doc_id"]) - set(self.corpus))
        if missing:
            raise DataError(
                f"dataset {self.name}", f"{len(missing)} pool documents have no passage text, e.g. {missing[:5]}"
            )

    def label_set(self) -> pd.DataFrame:
        """Pool ∩ human-judged pairs: what every judge labels (once, whatever the ranker)."""
        keys = self.pool[["query_id", "doc_id"]]
        return keys.merge(self.qrels, on=["query_id", "doc_id"], how="inner")[["query_id", "doc_id", "relevance"]]

    def judged_queries(self) -> list[str]:
        judged = set(self.qrels["query_id"].tolist())  # tolist: iterating an Arrow-backed column is ~20x slower
        return [q for q in self.queries if q in judged]

    def label_counts(self) -> dict:
        per_level = self.qrels["relevance"].value_counts().sort_index()
        return {
            "queries": len(self.queries),
            "judged_queries": len(self.judged_queries()),
            "qrels": len(self.qrels),
            **{f"qrels_level_{int(k)}": int(v) for k, v in per_level.items()},
        }

    def summary(self) -> dict:
        labels = self.label_set()
        return {
            **self.label_counts(),
            "pool_size": len(self.pool),
            "pool_depth_max": int(self.pool.groupby("query_id").size().max()),
            "pool_judged": len(labels),
            "corpus": len(self.corpus) if available(self.corpus) else "not available (no passage texts)",
            "pool_provenance": dict(self.pool_provenance),
        }


def _empty_pool() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": pd.Series(dtype=str),
            "doc_id": pd.Series(dtype=str),
            "score": pd.Series(dtype=float),
            "rank": pd.Series(dtype="int64"),
        }
    )


@dataclass
class LabelsDataset(Dataset):
    """Queries and human labels only: no passage texts, no pool, so no systems to rank. The label set
    is every human-labelled pair; judges that read no passage (file judges, human) can label it."""

    corpus: dict[str, str] = field(default_factory=dict)
    pool: pd.DataFrame = field(default_factory=_empty_pool)
    # Ids of the source collection -> the dataset's ids, {"query": {...}, "doc": {...}}: a judge file
    # written with the original ids reads the same as one written with the dataset's.
    id_aliases: dict = field(default_factory=dict)
    has_pool: ClassVar[bool] = False

    def label_set(self) -> pd.DataFrame:
        return self.qrels[["query_id", "doc_id", "relevance"]].reset_index(drop=True)

    def summary(self) -> dict:
        return {
            **self.label_counts(),
            "label_set": len(self.qrels),
            "pool_size": 0,
            "corpus": 0,
        }


def from_files(
    name: str,
    *,
    topics: str | Path,
    qrels: str | Path,
    pool: str | Path,
    passages: str | Path | None,
    pool_provenance: dict | None = None,
    passages_hint: str = "give the passages file",
    pool_depth: int | None = None,
    judged_only: bool = True,
) -> Dataset:
    """A dataset from TREC files; queries without judgments are dropped when judged_only. Without a
    passages file the texts are an UnavailableCorpus: reading one fails with ``passages_hint``."""
    queries = read_topics(topics)
    qrels_df = read_qrels(qrels)
    if not set(qrels_df["query_id"].tolist()) & set(queries):
        raise DataError(qrels, f"no query of these qrels is in the topics {topics} (qrels of another dataset?)")
    check_queries_known(qrels_df, queries, qrels)
    pool_df = read_run(pool, order_by="rank")
    check_queries_known(pool_df, queries, pool)
    if judged_only:
        judged = set(qrels_df["query_id"].tolist())
        queries = {q: t for q, t in queries.items() if q in judged}
        pool_df = pool_df[pool_df["query_id"].isin(judged)]
    pool_df = cut_pool(pool_df, pool_depth)
    if pool_df.empty:
        raise DataError(pool, "the pool has no entry for any judged query")
    if passages:
        corpus = read_passages(passages)
        _check_passages(pool, pool_df, corpus, passages)
    else:
        corpus = UnavailableCorpus(f"dataset {name}", passages_hint)
    all_topics = frozenset(read_topics(topics))
    return Dataset(name, queries, qrels_df, corpus, pool_df, dict(pool_provenance or {}), all_topics)


def cut_pool(pool: pd.DataFrame, depth: int | None) -> pd.DataFrame:
    """A run as a pool: each query's first ``depth`` documents (None: all) by position in rank order, ranked 1..n.
    A run ranked 10, 20, ... or from 0 keeps ``depth`` documents a query, and every reader of the pool's ranks
    (a re-ranked head, a rewriter's depth) counts positions."""
    kept = cut(pool, depth)
    if kept.empty:
        return kept
    return kept.assign(rank=positions(kept)).reset_index(drop=True)


def _check_passages(pool: str | Path, pool_df: pd.DataFrame, corpus: dict[str, str], passages: str | Path) -> None:
    """A pool document without a passage text: name the passages file and the document's line in the pool."""
    missing = [d for d in pool_df["doc_id"].unique() if d not in corpus]
    if not missing:
        return
    line = next(
        (n for n, text in lines(read_text(pool)) if len(text.split()) >= 3 and text.split()[2] == missing[0]), None
    )
    more = f" ({len(missing)} pool documents lack one, e.g. {', '.join(missing[:5])})" if len(missing) > 1 else ""
    raise DataError(pool, f"doc {missing[0]} has no passage text in {passages}{more}", line)


TOY_DIR = resources.files("judgebench.data") / "toy"


def load_toy(name: str = "toy") -> Dataset:
    """The embedded default: written by us, so it ships with the package and runs offline."""
    d = Path(str(TOY_DIR))
    return from_files(
        name,
        topics=d / "topics.tsv",
        qrels=d / "qrels.txt",
        pool=d / "pool.trec",
        passages=d / "corpus.jsonl",
        pool_provenance={"ranker": "bm25", "k1": 0.9, "b": 0.4, "depth": 25, "source": "bundled toy pool.trec"},
    )


def toy_pool_from_bm25(cache_dir: str | Path, progress: bool = False) -> pd.DataFrame:
    """How the bundled toy pool.trec was made: each query's 25 written candidates, in the order of a
    Lucene BM25 search (k1=0.9, b=0.4) of the whole toy corpus. A test regenerates it and compares."""
    from judgebench.retrieval.search import bm25_search

    d = Path(str(TOY_DIR))
    queries = read_topics(d / "topics.tsv")
    corpus = read_passages(d / "corpus.jsonl")
    candidates = pd.read_csv(d / "candidates.tsv", sep="\t", names=["query_id", "doc_id"], dtype=str)
    hits = bm25_search(queries, corpus, k1=0.9, b=0.4, depth=len(corpus), cache_dir=cache_dir, progress=progress)
    pool = candidates.merge(hits, on=["query_id", "doc_id"], how="left")
    if pool["score"].isna().any():
        missing = pool[pool["score"].isna()][["query_id", "doc_id"]].values.tolist()
        raise DataError(d / "candidates.tsv", f"candidates BM25 does not retrieve for their query: {missing[:5]}")
    pool["_q"] = pd.Categorical(pool["query_id"], list(queries))
    pool = pool.sort_values(["_q", "rank"]).drop(columns="_q").reset_index(drop=True)
    pool["rank"] = pool.groupby("query_id", sort=False).cumcount() + 1
    return pool[["query_id", "doc_id", "score", "rank"]]
