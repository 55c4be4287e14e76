"""Build a Lucene index of a corpus with Anserini, atomically, named by the corpus' content.

A killed build must never leave a half index where a later run would trust it, and a corpus must be
indexed once however many runs search it; hence the temp dir, the marker and the fingerprint.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections import deque
from collections.abc import Mapping
from pathlib import Path

from tqdm.auto import tqdm  # index building is one-off: a bar on a terminal, none in a log file

from judgebench.exceptions import ConfigError
from judgebench.retrieval.java import anserini_jar, ensure_java

log = logging.getLogger(__name__)

MARKER = "judgebench-index.json"  # written last, inside the temp dir, before the atomic rename
STALE_TMP_AGE_S = 24 * 3600  # temp dirs of other hosts (shared filesystems) are only removed this old


def corpus_fingerprint(corpus: Mapping[str, str]) -> str:
    """sha256 over the (id, text) pairs in id order: a content name for index directories."""
    digest = hashlib.sha256()
    for doc_id in sorted(corpus):
        digest.update(json.dumps([doc_id, corpus[doc_id]]).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def _tmp_prefix(index_dir: Path) -> str:
    return f".{index_dir.name}.tmp-"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_tmp(index_dir: Path) -> None:
    """Delete temp dirs left by killed builds (same host and dead pid, or older than a day)."""
    host = socket.gethostname()
    for tmp in index_dir.parent.glob(_tmp_prefix(index_dir) + "*"):
        match = re.fullmatch(r"(.+)-(\d+)-[0-9a-f]+", tmp.name[len(_tmp_prefix(index_dir)) :])
        try:
            old = time.time() - tmp.stat().st_mtime > STALE_TMP_AGE_S
        except OSError:
            continue
        dead = match is not None and match.group(1) == host and not _pid_alive(int(match.group(2)))
        if dead or old:
            log.info("removing stale temp dir %s of an interrupted index build", tmp)
            shutil.rmtree(tmp, ignore_errors=True)


def _check_existing(index_dir: Path, fingerprint: str) -> None:
    marker = index_dir / MARKER
    if not marker.is_file():
        raise FileExistsError(
            f"{index_dir} exists but was not written by judgebench's build_index (no {MARKER}); delete it or "
            "choose another index_dir"
        )
    recorded = json.loads(marker.read_text()).get("fingerprint")
    if recorded != fingerprint:
        raise FileExistsError(
            f"{index_dir} holds a different corpus (fingerprint {recorded}, wanted {fingerprint}); name index "
            "dirs by corpus_fingerprint()"
        )


def _write_collection(corpus: Mapping[str, str], directory: Path, shards: int, show_progress: bool) -> None:
    """JsonCollection: jsonl files of {"id", "contents"}; Anserini indexes one file per thread."""
    directory.mkdir()
    shards = max(1, min(shards, len(corpus)))
    files = [open(directory / f"docs{i:03d}.jsonl", "w", encoding="utf-8") for i in range(shards)]
    try:
        items = tqdm(
            corpus.items(),
            total=len(corpus),
            desc="bm25: write corpus",
            unit="doc",
            disable=not show_progress or not sys.stderr.isatty(),
        )
        for n, (doc_id, text) in enumerate(items):
            files[n * shards // len(corpus)].write(json.dumps({"id": str(doc_id), "contents": text}) + "\n")
    finally:
        for f in files:
            f.close()


def _run_indexer(collection: Path, index: Path, threads: int, n_docs: int, show_progress: bool) -> dict[str, int]:
    """Anserini's IndexCollection in a child JVM; returns its final counters."""
    home = ensure_java()
    cmd = [
        str(home / "bin" / "java"), "-cp", str(anserini_jar()), "io.anserini.index.IndexCollection",
        "-collection", "JsonCollection", "-generator", "DefaultLuceneDocumentGenerator",
        "-input", str(collection), "-index", str(index), "-threads", str(threads),
        "-storePositions", "-storeDocvectors", "-storeRaw",
    ]  # fmt: skip
    env = {**os.environ, "JAVA_HOME": str(home)}
    tail: deque[str] = deque(maxlen=40)
    counters: dict[str, int] = {}
    bar = tqdm(total=n_docs, desc="bm25: index", unit="doc", disable=not show_progress or not sys.stderr.isatty())
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            tail.append(line.rstrip())
            log.debug("anserini: %s", line.rstrip())
            if m := re.search(r"([\d,]+) documents indexed", line):
                bar.update(int(m.group(1).replace(",", "")) - bar.n)
            if m := re.search(r" - (indexed|unindexable|empty|skipped|errors):\s+([\d,]+)\s*$", line):
                counters[m.group(1)] = int(m.group(2).replace(",", ""))
        rc = proc.wait()
    finally:
        if proc.poll() is None:  # interrupted: do not leave a JVM writing into the temp dir
            proc.kill()
            proc.wait()
        bar.close()
    output = "\n".join(tail)
    if rc != 0 or "indexed" not in counters or not any(index.glob("segments_*")):
        raise RuntimeError(f"Anserini indexing failed (exit {rc}):\n{output}")
    bad = {k: counters.get(k, 0) for k in ("unindexable", "skipped", "errors")}
    if any(bad.values()) or counters["indexed"] + counters.get("empty", 0) != n_docs:
        raise RuntimeError(f"Anserini indexed {counters} of {n_docs} documents:\n{output}")
    if counters.get("empty"):
        log.warning("%d passages have no text and cannot be retrieved", counters["empty"])
    return counters


def build_index(
    corpus: Mapping[str, str],
    index_dir: str | Path,
    threads: int = 1,
    show_progress: bool = True,
    *,
    fingerprint: str | None = None,
) -> Path:
    """Index ``corpus`` (id -> text) with Anserini into ``index_dir``; reuse it if already built.

    The index is built in a temp dir beside ``index_dir`` and renamed into place only when complete,
    so a killed run never leaves a half index at ``index_dir``. The child is a plain ``java`` process
    on the Anserini jar (what ``python -m pyserini.index.lucene`` runs): no second torch import, no
    JVM-options patch, errors surface as an exit code and a log, and an interrupt can kill it.
    """
    index_dir = Path(index_dir)
    fingerprint = fingerprint or corpus_fingerprint(corpus)
    if index_dir.exists():
        _check_existing(index_dir, fingerprint)
        return index_dir
    if not corpus:
        raise ConfigError("cannot index an empty corpus")
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp(index_dir)
    tmp = index_dir.parent / f"{_tmp_prefix(index_dir)}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        _write_collection(corpus, tmp / "collection", threads, show_progress)
        counters = _run_indexer(tmp / "collection", tmp / "index", threads, len(corpus), show_progress)
        meta = {"fingerprint": fingerprint, "documents": len(corpus), "counters": counters, "jar": anserini_jar().name}
        (tmp / "index" / MARKER).write_text(json.dumps(meta, indent=1))
        try:
            os.rename(tmp / "index", index_dir)
        except OSError:
            if not (index_dir / MARKER).is_file():
                raise
            _check_existing(index_dir, fingerprint)  # a concurrent build of the same corpus won the race
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return index_dir
