"""First-stage retrieval: BM25 through Pyserini's Lucene, usable offline after ``pip install``.

``java`` chooses the Java runtime (before any JVM starts), ``index`` builds Lucene indexes of a corpus,
``search`` opens searchers and returns BM25 runs. Datasets build their pools here and the BM25 ranker
scores with it, so neither data loading nor ranking depends on the other.
"""

from judgebench.retrieval.index import build_index, corpus_fingerprint
from judgebench.retrieval.java import anserini_jar, ensure_java
from judgebench.retrieval.search import bm25_search, lucene_searcher, prebuilt_searcher

__all__ = [
    "anserini_jar",
    "bm25_search",
    "build_index",
    "corpus_fingerprint",
    "ensure_java",
    "lucene_searcher",
    "prebuilt_searcher",
]
