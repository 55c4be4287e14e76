"""TREC Deep Learning 2019 / 2020 passage ranking: shipped files, a data directory, or online.

The qrels, topics and BM25 top-100 runs ship with the package (``trec_dl_files/``, with their
provenance), so ``dataset=dl19|dl20`` runs offline with no setting. The MS MARCO passage texts do
not ship (non-commercial terms): they come from ``data_dir`` (or ``JUDGEBENCH_TREC_DL_DIR``, laid out
like the shipped files plus ``passages/``), from ``passages=FILE``, or online (``online=true``:
ir_datasets + Pyserini); without them the dataset's corpus is an UnavailableCorpus and only a
component that reads text fails, with a line saying how to get them.
"""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

from judgebench.data.datasets import Dataset, from_files
from judgebench.exceptions import DataError

log = logging.getLogger("judgebench")

IR_DATASETS_ID = {2019: "msmarco-passage/trec-dl-2019/judged", 2020: "msmarco-passage/trec-dl-2020/judged"}
# File names inside a data_dir (the layout of the shipped files, plus passages/).
DEFAULT_FILES = {
    2019: {
        "topics": "topics.dl19-passage.txt",
        "qrels": "qrels.dl19-passage.txt",
        "pool": "bm25.dl19.top100.trec",
        "passages": "passages/bm25.dl19.top100.passages.json",
    },
    2020: {
        "topics": "topics.dl20.txt",
        "qrels": "qrels.dl20-passage.txt",
        "pool": "bm25.dl20.top100.trec",
        "passages": "passages/bm25.dl20.top100.passages.json",
    },
}
SHIPPED = Path(str(resources.files("judgebench.data") / "trec_dl_files"))


def shipped_file(relative: str) -> str:
    """The path of a file shipped in trec_dl_files/ (the OmegaConf resolver ``trec_dl_file``)."""
    path = SHIPPED / relative
    if not path.is_file():
        raise DataError(path, "no such file among the TREC DL files shipped with judgebench")
    return str(path)


def _passages_hint(name: str, year: int) -> str:
    return (
        f"the MS MARCO passage texts of {name} are not shipped with judgebench (non-commercial terms); give a "
        "directory "
        f"holding {DEFAULT_FILES[year]['passages']} as dataset.data_dir=DIR or JUDGEBENCH_TREC_DL_DIR=DIR, a file as "
        f"dataset.passages=FILE, or load online through ir_datasets with dataset.online=true"
    )


def load_trec_dl(
    name: str,
    year: int,
    data_dir: str | None = None,
    topics: str | None = None,
    qrels: str | None = None,
    pool: str | None = None,
    passages: str | None = None,
    pool_depth: int = 100,
    k1: float = 0.9,
    b: float = 0.4,
    prebuilt_index: str = "msmarco-v1-passage",
    cache_dir: str | None = None,
    online: bool = False,
) -> Dataset:
    if year not in IR_DATASETS_ID:
        raise DataError(f"dataset {name}", f"year {year} is not a TREC DL passage year; expected 2019 or 2020")
    if online:
        ds = _load_online(name, year, pool_depth, k1, b, prebuilt_index, cache_dir)
    else:
        files = {"topics": topics, "qrels": qrels, "pool": pool, "passages": passages}
        if data_dir:
            root = Path(data_dir).expanduser()
            if not root.is_dir():
                raise DataError(root, f"dataset {name}: data_dir is not a directory")
            files = {k: v or str(root / DEFAULT_FILES[year][k]) for k, v in files.items()}
        files = {k: v or (str(SHIPPED / DEFAULT_FILES[year][k]) if k != "passages" else None) for k, v in files.items()}
        ds = from_files(
            name,
            **files,
            pool_provenance=file_pool_provenance(year, files["pool"], pool_depth),
            pool_depth=pool_depth,
            passages_hint=_passages_hint(name, year),
        )
    summary = ds.summary()
    log.info("dataset %s: %s", name, ", ".join(f"{k}={v}" for k, v in summary.items()))
    return ds


# The shipped pool files are Pyserini BM25 (k1=0.9, b=0.4) top-100 runs of msmarco-v1-passage.
FILE_POOL_BM25 = {"ranker": "bm25", "k1": 0.9, "b": 0.4, "index": "msmarco-v1-passage"}


def file_pool_provenance(year: int, pool: str, depth: int) -> dict:
    """What the pool file is, truthfully: the known BM25 run when it is the standard file (by name), else
    only where it came from. A user's pool is never labelled BM25, so the bm25 ranker re-scores it."""
    known = Path(pool).name == DEFAULT_FILES[year]["pool"]
    base = dict(FILE_POOL_BM25) if known else {"ranker": "unknown"}
    return {**base, "depth": depth, "source": f"file:{Path(pool).name}"}


def _load_online(name, year, depth, k1, b, prebuilt_index, cache_dir) -> Dataset:
    """ir_datasets for queries, qrels and passage texts; Pyserini's prebuilt index for the BM25 pool."""
    try:
        import ir_datasets
    except ImportError as e:
        raise DataError(
            f"dataset {name}",
            "online loading needs ir_datasets: pip install 'judgebench[datasets]' (or set data_dir=... for files)",
        ) from e
    import pandas as pd

    from judgebench.retrieval.search import prebuilt_pool

    source = ir_datasets.load(IR_DATASETS_ID[year])
    try:
        queries = {q.query_id: q.text for q in source.queries_iter()}
        qrels = pd.DataFrame(
            [(q.query_id, q.doc_id, int(q.relevance)) for q in source.qrels_iter()],
            columns=["query_id", "doc_id", "relevance"],
        )
    except Exception as e:  # ir_datasets raises plain RuntimeErrors for failed downloads
        raise DataError(
            f"dataset {name}",
            f"ir_datasets could not provide {IR_DATASETS_ID[year]} ({str(e)[:160]}...). Without network access, "
            "load the "
            f"TREC files instead: dataset.data_dir=DIR (or JUDGEBENCH_TREC_DL_DIR=DIR), see docs/datasets.md",
        ) from e
    judged = set(qrels["query_id"])
    queries = {q: t for q, t in queries.items() if q in judged}
    pool, provenance = prebuilt_pool(queries, prebuilt_index, k1, b, depth, cache_dir)
    store = source.docs_store()
    corpus = {d: store.get(d).text for d in pool["doc_id"].unique()}
    return Dataset(name, queries, qrels, corpus, pool, provenance)
