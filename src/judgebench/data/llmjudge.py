"""The LLMJudge challenge collection (SIGIR 2024 LLM4Eval): queries and human labels, no passages, no systems.

25 TREC DL 2023 test queries and 4,423 human-labelled query-passage pairs (``split=test``; ``split=dev``
gives the 7,263 dev pairs of 25 other queries), with ids of its own (q0.., p0..) and files that map them
to TREC DL 2023 query ids and MS MARCO v2 passage ids. The passages are not distributed with the labels,
so it is a :class:`LabelsDataset`: judges whose labels already exist (the 33 submissions, any qrels file)
are compared with the humans in a labels-only experiment. The files are not bundled with judgebench (the
collection states no licence); ``data_dir`` (or ``JUDGEBENCH_LLMJUDGE_DIR``) points at them.
"""

from __future__ import annotations

import logging
from pathlib import Path

from judgebench.data.datasets import LabelsDataset
from judgebench.exceptions import DataError
from judgebench.data.trec import _lines, _read_text, check_queries_known, read_qrels, read_topics

log = logging.getLogger("judgebench")

ENV = "JUDGEBENCH_LLMJUDGE_DIR"
QRELS = {"test": "llmjudge_test_qrel_idx.txt", "dev": "llm4eval_dev_qrel_2024.txt"}
QUERIES = "llm4eval_query_2024.txt"
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
) -> LabelsDataset:
    """The human labels of one split, the queries that have labels, and the id maps (when present)."""
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
    ds = LabelsDataset(
        name,
        {q: t for q, t in topics.items() if q in judged},
        labels,
        pool_provenance={"source": "LLMJudge (SIGIR 2024 LLM4Eval)", "split": split, "passages": "not distributed"},
        topic_ids=frozenset(topics),
        id_aliases=aliases,
    )
    log.info("dataset %s: %s", name, ", ".join(f"{k}={v}" for k, v in ds.summary().items()))
    return ds
