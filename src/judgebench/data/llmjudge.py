"""The LLMJudge challenge collection (SIGIR 2024 LLM4Eval): queries and human labels, no passages, no systems.

25 TREC DL 2023 test queries and 4,423 human-labelled query-passage pairs (``split=test``; ``split=dev``
gives the 7,263 dev pairs of 25 other queries), with ids of its own (q0.., p0..) and files that map them
to TREC DL 2023 query ids and MS MARCO v2 passage ids. The passages are not distributed with the labels,
so its corpus is an :class:`UnavailableCorpus`: judges whose labels already exist (the 33 submissions, any
qrels file, the humans) label it with no text, in a labels-only experiment or in grid cells.

Grid cells need a pool; each query's pool is its judged passages in the order of the unlabelled pairs
file the participants received (``llm4eval_test_qrel_2024.txt``; without it, the order of the qrels file,
which is the same for the test split). That order breaks the oracles' ties between equal human labels,
and no ranker that reads passages can run on it (nothing reads a passage). The files are not bundled with
judgebench (the collection states no licence); ``data_dir`` (or ``JUDGEBENCH_LLMJUDGE_DIR``) points at them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from judgebench.data.corpus import UnavailableCorpus
from judgebench.data.datasets import Dataset
from judgebench.data.reading import lines as _lines
from judgebench.data.reading import read_text as _read_text
from judgebench.data.trec import check_queries_known, read_qrels, read_topics
from judgebench.exceptions import DataError

log = logging.getLogger("judgebench")

ENV = "JUDGEBENCH_LLMJUDGE_DIR"
QRELS = {"test": "llmjudge_test_qrel_idx.txt", "dev": "llm4eval_dev_qrel_2024.txt"}
QUERIES = "llm4eval_query_2024.txt"
# The unlabelled pairs the participants were given (their order is the pool order); the dev split has none.
PAIRS = {"test": "llm4eval_test_qrel_2024.txt"}
NO_PASSAGES = (
    "the LLMJudge passages (MS MARCO v2, non-commercial terms) are not distributed with its labels, so only "
    "judges and rankers that read no passage run on it: file judges (judge=qrels), judge=human, oracle rankers"
)


@dataclass
class LLMJudgeDataset(Dataset):
    """The human labels with a pool of the judged passages and no texts; ``id_aliases`` maps the ids of the
    source collection to the dataset's ({"query": {...}, "doc": {...}}), so a judge file written with the
    original TREC ids reads the same as one written with the collection's."""

    id_aliases: dict = field(default_factory=dict)


QUERY_MAP = "qid_to_qidx.txt"
DOC_MAP = "docid_to_docidx.txt"


def read_id_map(path: str | Path) -> dict[str, str]:
    """``original_id dataset_id`` per line, as {original: dataset id}; each id once on either side."""
    out: dict[str, str] = {}
    seen: dict[str, int] = {}
    for n, line in _lines(_read_text(path)):
        fields = line.split()
        if len(fields) != 2:
            raise DataError(path, f"expected 2 fields 'original_id dataset_id', got {len(fields)}", n)
        original, mine = fields
        for key in (f"o:{original}", f"m:{mine}"):
            if key in seen:
                raise DataError(path, f"id {key[2:]} also on line {seen[key]}, expected each id once", n)
            seen[key] = n
        out[original] = mine
    return out


def load_llmjudge(
    name: str = "llmjudge",
    data_dir: str | None = None,
    split: str = "test",
    qrels: str | None = None,
    queries: str | None = None,
    pairs: str | None = None,
) -> LLMJudgeDataset:
    """The human labels of one split, the queries that have labels, the pool of judged passages (in the order
    of ``pairs``, by default the split's unlabelled pairs file when present) and the id maps (when present)."""
    if split not in QRELS:
        raise DataError(f"dataset {name}", f"split={split!r}: expected one of {', '.join(QRELS)}")
    if not data_dir and not (qrels and queries):
        raise DataError(
            f"dataset {name}",
            f"the LLMJudge files are not bundled with judgebench: set dataset.data_dir=DIR or {ENV}=DIR "
            f"(the directory with {QRELS['test']} and {QUERIES}), or dataset.qrels=FILE dataset.queries=FILE",
        )
    root = Path(data_dir).expanduser() if data_dir else None
    if root is not None and not root.is_dir():
        raise DataError(root, f"dataset {name}: data_dir is not a directory (expected the LLMJudge files)")
    qrels_path = Path(qrels) if qrels else root / QRELS[split]
    topics_path = Path(queries) if queries else root / QUERIES
    topics = read_topics(topics_path)
    labels = read_qrels(qrels_path)
    check_queries_known(labels, topics, qrels_path)
    judged = set(labels["query_id"])
    aliases = {}
    if root is not None and (root / QUERY_MAP).exists() and (root / DOC_MAP).exists():
        aliases = {"query": read_id_map(root / QUERY_MAP), "doc": read_id_map(root / DOC_MAP)}
    pairs_path = Path(pairs) if pairs else (root / PAIRS[split] if root is not None and split in PAIRS else None)
    if pairs_path is not None and not pairs and not pairs_path.exists():
        pairs_path = None
    pool = judged_pool(labels, pairs_path, qrels_path)
    ds = LLMJudgeDataset(
        name,
        {q: t for q, t in topics.items() if q in judged},
        labels,
        UnavailableCorpus(f"dataset {name}", NO_PASSAGES),
        pool,
        pool_provenance={
            "ranker": "unknown",
            "source": "LLMJudge (SIGIR 2024 LLM4Eval)",
            "split": split,
            "order": f"file:{(pairs_path or qrels_path).name}",
            "passages": "not distributed",
        },
        topic_ids=frozenset(topics),
        id_aliases=aliases,
    )
    log.info("dataset %s: %s", name, ", ".join(f"{k}={v}" for k, v in ds.summary().items()))
    return ds


def read_pairs(path: str | Path) -> pd.DataFrame:
    """``query_id 0 doc_id`` per line (the unlabelled pairs file), as (query_id, doc_id) in file order."""
    rows = []
    for n, line in _lines(_read_text(path)):
        fields = line.split()
        if len(fields) != 3:
            raise DataError(path, f"expected 3 fields 'query_id 0 doc_id', got {len(fields)}", n)
        rows.append((fields[0], fields[2], n))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "line"])


def judged_pool(labels: pd.DataFrame, pairs_path: Path | None, qrels_path: Path) -> pd.DataFrame:
    """Each query's judged passages in the order of the pairs file (else of the qrels file), ranked 1..n with
    descending scores. The pairs file must list exactly the labelled pairs: another set is an error."""
    order = labels[["query_id", "doc_id"]] if pairs_path is None else read_pairs(pairs_path)
    if pairs_path is not None:
        dup = order[order.duplicated(["query_id", "doc_id"])]
        if len(dup):
            raise DataError(
                pairs_path,
                f"query {dup.iloc[0]['query_id']} doc {dup.iloc[0]['doc_id']} is listed twice",
                int(dup.iloc[0]["line"]),
            )
        listed = set(zip(order["query_id"].tolist(), order["doc_id"].tolist()))
        labelled = set(zip(labels["query_id"].tolist(), labels["doc_id"].tolist()))
        extra = order[[p not in labelled for p in zip(order["query_id"].tolist(), order["doc_id"].tolist())]]
        if len(extra):
            row = extra.iloc[0]
            raise DataError(
                pairs_path,
                f"query {row['query_id']} doc {row['doc_id']} has no human label in {qrels_path} "
                f"({len(extra)} such pairs); expected the pairs of the qrels file",
                int(row["line"]),
            )
        if len(labelled - listed):
            q, d = sorted(labelled - listed)[0]
            raise DataError(
                pairs_path, f"lacks {len(labelled - listed)} labelled pairs of {qrels_path}, e.g. query {q} doc {d}"
            )
    pool = order[["query_id", "doc_id"]].reset_index(drop=True)
    pool["rank"] = pool.groupby("query_id", sort=False).cumcount() + 1
    pool["score"] = -pool["rank"].astype(float)
    return pool[["query_id", "doc_id", "score", "rank"]]
