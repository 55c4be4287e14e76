"""What makes two datasets the same: the content of their queries, qrels and pool, and of the passage texts
a cell read.

A dataset's name is for people: ``dataset=dl19 dataset.pool_depth=50``, another qrels file or other
passages keep the name ``dl19`` and change every number. Every job run is tagged with this fingerprint,
and compare refuses to put two fingerprints of one dataset name in one table (``compare/store/collect.py``).

The fingerprint is taken from the loaded frames, not from the config: the same files reached through
another path (a laptop and a cluster) are the same dataset, and an edit that changes nothing leaves it
alone. The passage texts count only for a cell that reads them (an LLM judge or ranker, a rewriter): a
human-judged oracle cell scores the same with or without them, so it carries no texts hash and fits any.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import pandas as pd

from judgebench.data.corpus import available

LENGTH = 10  # hex digits shown in tags and messages (``dl19@3fa2c1d0e9``)


def _digest(lines) -> str:
    h = hashlib.sha256()
    for line in lines:
        h.update(line.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    return h.hexdigest()[:LENGTH]


def frame_digest(frame: pd.DataFrame, columns: list[str]) -> str:
    """Digest of the rows of ``columns``, in sorted order (row order does not change what a dataset is)."""
    if not len(frame):
        return _digest([])
    text = frame[columns].astype(str)
    rows = text[columns[0]].astype(object)
    for column in columns[1:]:  # column-wise concatenation: a row-wise join builds a Series per row (14 s on DL19)
        rows = rows + "\t" + text[column].astype(object)
    return _digest(sorted(rows.tolist()))


@dataclass(frozen=True)
class Fingerprint:
    """``parts``: digest per part (queries, qrels, pool); ``texts``: digest of the pool's passage texts, or
    None where they are not available."""

    name: str
    parts: tuple[tuple[str, str], ...]
    texts: str | None

    @property
    def hash(self) -> str:
        return _digest(f"{k}={v}" for k, v in self.parts)

    def describe(self) -> str:
        """The parts as one tag value: ``queries=…,qrels=…,pool=…``."""
        return ",".join(f"{k}={v}" for k, v in self.parts)


def fingerprint(dataset) -> Fingerprint:
    """The dataset's fingerprint, computed once per loaded dataset (a multirun shares the object)."""
    cached = getattr(dataset, "_fingerprint", None)
    if cached is not None:
        return cached
    queries = pd.DataFrame({"query_id": list(dataset.queries), "text": list(dataset.queries.values())})
    parts = (
        ("queries", frame_digest(queries, ["query_id", "text"])),
        ("qrels", frame_digest(dataset.qrels, ["query_id", "doc_id", "relevance"])),
        ("pool", frame_digest(dataset.pool, ["query_id", "doc_id", "rank"])),
    )
    texts = None
    if available(dataset.corpus) and len(dataset.pool):
        docs = sorted(set(dataset.pool["doc_id"].astype(str)))
        texts = _digest(f"{d}\t{dataset.corpus[d]}" for d in docs)
    out = Fingerprint(dataset.name, parts, texts)
    object.__setattr__(dataset, "_fingerprint", out)
    return out


def corpus_digest(dataset) -> str | None:
    """Digest of every passage of the corpus (not only the pool's), or None where the texts are not available:
    what a ranker that indexes the whole corpus (BM25's term statistics) depends on. Computed once per dataset."""
    cached = getattr(dataset, "_corpus_digest", None)
    if cached is not None or not available(dataset.corpus):
        return cached
    out = _digest(f"{d}\t{dataset.corpus[d]}" for d in sorted(map(str, dataset.corpus)))
    object.__setattr__(dataset, "_corpus_digest", out)
    return out


def tags(dataset, reads_texts: bool, prefix: str) -> dict[str, str]:
    """The dataset's identity tags of one job run: its hash, its parts and, when the job reads passages, their hash."""
    fp = fingerprint(dataset)
    out = {f"{prefix}dataset_hash": fp.hash, f"{prefix}dataset_parts": fp.describe()}
    if reads_texts and fp.texts is not None:
        out[f"{prefix}texts_hash"] = fp.texts
    return out
