"""Any ir_datasets collection (``dataset=irds dataset.id=<ir_datasets id>``): queries, qrels and passage texts
through ir_datasets, the pool from a TREC run file (cut to ``pool_depth``) or a Pyserini prebuilt index (BM25).

ir_datasets downloads and caches its collections itself (``IR_DATASETS_HOME``); judgebench reads them through
its API only. Texts are read for the pool's documents only, through the collection's docs store, when the
dataset is loaded. A collection of local files registers with ir_datasets' own local-files API
(``ir_datasets.create_dataset`` + ``ir_datasets.registry.register``); ``local={docs, queries, qrels}`` does that
here under ``id`` (TSV docs ``doc_id<TAB>text``, TSV queries, TREC qrels), so it runs offline and its files
join the resume key like any input file.
"""

from __future__ import annotations

import hashlib
import logging
import os
import secrets
import shutil
from pathlib import Path

import pandas as pd

from judgebench.data.datasets import Dataset, cut_pool
from judgebench.data.trec import check_queries_known, read_qrels, read_run
from judgebench.data.trec_files import pool_provenance
from judgebench.exceptions import DataError
from judgebench.identity.files_read import opened

log = logging.getLogger("judgebench")
LOCAL_KEYS = {"docs": "docs_tsv", "queries": "queries_tsv", "qrels": "qrels_trec"}
MAX_LABEL = 3


def _ir_datasets(name: str):
    try:
        import ir_datasets
    except ImportError as e:
        raise DataError(f"dataset {name}", "dataset=irds needs ir_datasets: pip install 'judgebench[datasets]'") from e
    return ir_datasets


def _private_copy(path: Path, role: str, root: Path) -> tuple[Path, str]:
    """(a copy of ``path`` under ``root``, in a folder named by its content's SHA-256, the digest). ir_datasets
    writes its index of a TSV docs file beside it (``docs.tsv.pklz4``) and reads that index, not the file, ever
    after: on the user's own file an edit in place would keep the old texts. Beside a content-keyed copy, an
    index belongs to one content only."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    digest = h.hexdigest()
    target = root / digest[:24] / f"{role}-{path.name}"
    if not target.is_file():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        shutil.copyfile(path, tmp)
        os.replace(tmp, target)  # atomic: a concurrent job sees the whole copy or none
    return target, digest


def register_local(name: str, dataset_id: str, local: dict, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """Register local files with ir_datasets' own API and return the id to load them by: ``dataset_id@<digest of
    their contents>``, so that two sets of files under one id (a sweep over two qrels files) are two datasets,
    and registering again in a process is needed only for new contents. ir_datasets reads private copies of the
    files (:func:`_private_copy`) under ``<cache_dir>/irds_local``."""
    irds = _ir_datasets(name)
    unknown = set(local) - set(LOCAL_KEYS)
    if unknown:
        raise DataError(
            f"dataset {name}", f"dataset.local has {', '.join(sorted(unknown))}; expected keys {', '.join(LOCAL_KEYS)}"
        )
    if dataset_id in irds.registry:
        raise DataError(
            f"dataset {name}",
            f"dataset.id={dataset_id} is one of ir_datasets' own collections, so dataset.local "
            "would not be read; expected a new id for local files (e.g. dataset.id=local/NAME)",
        )
    files = {LOCAL_KEYS[k]: Path(str(v)).expanduser() for k, v in local.items() if v}
    root = Path(cache_dir or ".cache/judgebench").expanduser() / "irds_local"
    copies, digests = {}, []
    for key, path in sorted(files.items()):
        if not path.is_file():
            raise DataError(path, f"dataset {name}: file not found (dataset.local)")
        opened(path)  # their contents join the resume key
        copies[key], digest = _private_copy(path, key, root)
        digests.append(f"{key}={digest}")
    private_id = f"{dataset_id}@{hashlib.sha256(chr(10).join(digests).encode()).hexdigest()[:16]}"
    if private_id not in irds.registry:
        irds.registry.register(private_id, irds.create_dataset(**{k: str(v) for k, v in copies.items()}))
    return private_id


def _text(item) -> str:
    method = getattr(item, "default_text", None)
    return method() if callable(method) else item.text


def load_irds(
    name: str = "irds",
    id: str | None = None,  # noqa: A002 - the config key users write: dataset.id=...
    pool: str | None = None,
    pool_depth: int = 100,
    pool_is: str | None = None,
    k1: float = 0.9,
    b: float = 0.4,
    prebuilt_index: str | None = None,
    cache_dir: str | None = None,
    local: dict | None = None,
) -> Dataset:
    """The judged queries of ``id``, its qrels, the pool (a run file, else a BM25 search of ``prebuilt_index``) and the
    texts of the pool's documents."""
    if not id:
        raise DataError(
            f"dataset {name}",
            "dataset=irds needs dataset.id=<ir_datasets id> (e.g. msmarco-passage/trec-dl-2019/judged)",
        )
    source_id = register_local(name, id, dict(local), cache_dir) if local else id
    irds = _ir_datasets(name)
    try:
        source = irds.load(source_id)
    except KeyError as e:
        raise DataError(
            f"dataset {name}",
            f"{id!r} is not an ir_datasets id (see ir_datasets.registry), and no dataset.local "
            "files were given to register it",
        ) from e
    for part in ("queries", "qrels"):
        if not getattr(source, f"has_{part}")():
            raise DataError(
                f"dataset {name}", f"ir_datasets {id} has no {part}; expected a collection with queries and qrels"
            )
    try:
        queries = {q.query_id: _text(q) for q in source.queries_iter()}
        qrels = pd.DataFrame(
            [(q.query_id, q.doc_id, int(q.relevance)) for q in source.qrels_iter()],
            columns=["query_id", "doc_id", "relevance"],
        )
    except Exception as e:  # ir_datasets raises plain errors for failed downloads
        raise DataError(f"dataset {name}", f"ir_datasets could not provide {id} ({str(e)[:160]})") from e
    if local and local.get(
        "qrels"
    ):  # the reader of every qrels file: the file's own line for a duplicate or a bad label
        qrels = read_qrels(Path(str(local["qrels"])).expanduser(), MAX_LABEL)
    twice = qrels[qrels.duplicated(["query_id", "doc_id"], keep=False)]
    if len(twice):
        row, labels = (
            twice.iloc[0],
            twice[(twice["query_id"] == twice.iloc[0]["query_id"]) & (twice["doc_id"] == twice.iloc[0]["doc_id"])],
        )
        raise DataError(
            f"dataset {name}",
            f"ir_datasets {id}: duplicate judgment for query {row['query_id']} doc {row['doc_id']} "
            f"(labels {', '.join(map(str, labels['relevance'].tolist()))}), expected one judgment per (query, doc)",
        )
    outside = qrels[(qrels["relevance"] < 0) | (qrels["relevance"] > MAX_LABEL)]
    if len(outside):
        row = outside.iloc[0]
        raise DataError(
            f"dataset {name}",
            f"ir_datasets {id}: query {row['query_id']} doc {row['doc_id']} has label {row['relevance']} "
            f"({len(outside)} such qrels); expected graded labels 0..{MAX_LABEL}",
        )
    judged = set(qrels["query_id"].tolist())
    all_topics = frozenset(queries)
    queries = {q: t for q, t in queries.items() if q in judged}
    if pool:
        pool_df = read_run(pool, order_by="rank")
        check_queries_known(pool_df, all_topics, pool)
        provenance = pool_provenance(pool, pool_depth, pool_is, k1, b)
    elif prebuilt_index:
        from judgebench.retrieval.search import prebuilt_pool

        pool_df, provenance = prebuilt_pool(queries, prebuilt_index, k1, b, pool_depth, cache_dir)
    else:
        raise DataError(
            f"dataset {name}",
            "dataset=irds needs a pool: dataset.pool=RUN (a TREC run) or dataset.prebuilt_index=NAME "
            "(a Pyserini prebuilt index, BM25; needs network)",
        )
    pool_df = cut_pool(pool_df[pool_df["query_id"].isin(judged)], pool_depth)
    if pool_df.empty:
        raise DataError(pool or f"dataset {name}", "the pool has no entry for any judged query")
    docs = list(dict.fromkeys(pool_df["doc_id"].tolist()))
    found = source.docs_store().get_many(docs) if source.has_docs() else {}
    missing = [d for d in docs if d not in found]
    if missing:
        raise DataError(
            pool or f"dataset {name}",
            f"{len(missing)} pool documents are not in ir_datasets {id}'s documents, e.g. {', '.join(missing[:5])}",
        )
    corpus = {d: _text(found[d]) for d in docs}
    ds = Dataset(name, queries, qrels, corpus, pool_df, {**provenance, "ir_datasets": id}, all_topics)
    log.info("dataset %s: %s", name, ", ".join(f"{k}={v}" for k, v in ds.summary().items()))
    return ds
