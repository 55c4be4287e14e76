"""Any collection from TREC files (``dataset=trec``): topics, qrels, a TREC run as the pool, optional passages.

TREC DL 2021-2023, TREC RAG, a BEIR set exported to TREC files, an in-house collection: whatever has topics,
qrels and a first-stage run is a dataset, read by the same loaders, validated the same way and fingerprinted
the same way as ``dl19`` (``data.datasets.from_files``). The pool is the run cut to ``pool_depth``. A pool is
never assumed to be BM25: ``pool_is=bm25`` declares it (with the run's ``k1`` and ``b``), so that
``ranker=bm25`` reads its order, as ``dl19`` does with its shipped run, instead of re-scoring from passages.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from judgebench.data.datasets import Dataset, from_files
from judgebench.data.reading import lines, read_text
from judgebench.data.trec import read_passages
from judgebench.exceptions import DataError

log = logging.getLogger("judgebench")
POOL_KINDS = ("bm25",)


def pool_provenance(pool: str, depth: int, pool_is: str | None, k1: float, b: float) -> dict:
    """What the pool is: a declared BM25 run (its parameters), else only where it came from."""
    source = {"depth": depth, "source": f"file:{Path(pool).name}"}
    if pool_is is None:
        return {"ranker": "unknown", **source}
    if pool_is not in POOL_KINDS:
        raise DataError(
            "dataset.pool_is",
            f"{pool_is!r}: expected one of {', '.join(POOL_KINDS)} or null (a pool of unknown origin)",
        )
    return {"ranker": "bm25", "k1": k1, "b": b, **source}


def load_trec(
    name: str = "trec",
    topics: str | None = None,
    qrels: str | None = None,
    pool: str | None = None,
    passages: str | None = None,
    pool_depth: int = 100,
    pool_is: str | None = None,
    k1: float = 0.9,
    b: float = 0.4,
    judged_only: bool = True,
) -> Dataset:
    """topics (TSV or TREC XML-ish topics), qrels, pool (a TREC run) and optional passages (JSONL or TSV)."""
    missing = [k for k, v in (("topics", topics), ("qrels", qrels), ("pool", pool)) if not v]
    if missing:
        raise DataError(
            f"dataset {name}",
            f"dataset=trec needs {', '.join(f'dataset.{k}=FILE' for k in missing)} "
            "(topics: 'query_id<TAB>text'; qrels: TREC qrels; pool: a TREC run, cut to dataset.pool_depth)",
        )
    files = {k: str(Path(v).expanduser()) for k, v in (("topics", topics), ("qrels", qrels), ("pool", pool))}
    ds = from_files(
        name,
        **files,
        passages=None,
        pool_provenance=pool_provenance(files["pool"], pool_depth, pool_is, k1, b),
        pool_depth=pool_depth,
        passages_hint=f"dataset {name} was given no passage texts: set dataset.passages=FILE (JSONL "
        '{"docid", "text"} or TSV \'doc_id<TAB>text\')',
        judged_only=judged_only,
    )
    if passages:
        path = Path(passages).expanduser()
        corpus = read_any_passages(path)
        absent = [d for d in dict.fromkeys(ds.pool["doc_id"].tolist()) if d not in corpus]
        if absent:
            raise DataError(
                path,
                f"{len(absent)} pool documents of {files['pool']} have no passage text here, e.g. "
                f"{', '.join(absent[:5])}; expected a text for every document of the pool",
            )
        ds = dataclasses.replace(ds, corpus=corpus)
    log.info("dataset %s: %s", name, ", ".join(f"{k}={v}" for k, v in ds.summary().items()))
    return ds


def read_any_passages(path: Path) -> dict[str, str]:
    """JSONL or rank_llm JSON (data/trec.py's reader, told by the first character), else TSV 'doc_id<TAB>text'."""
    head = read_text(path).lstrip()[:1]
    if head in ("{", "["):
        return read_passages(path)
    out: dict[str, str] = {}
    for n, line in lines(read_text(path)):
        doc, tab, text = line.partition("\t")
        if not tab or not doc.strip():
            raise DataError(path, 'expected \'doc_id<TAB>text\' (TSV passages) or JSONL {"docid", "text"}', n)
        if not text.strip():
            raise DataError(path, f"doc {doc}: empty text, expected a non-empty passage text", n)
        if doc in out and out[doc] != text:
            raise DataError(path, f"doc {doc} has two different texts", n)
        out[doc] = text
    if not out:
        raise DataError(path, "empty file, expected passages (JSONL or TSV 'doc_id<TAB>text')")
    return out
