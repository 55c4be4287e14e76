"""A corpus whose passage texts are not here: any read of a text fails with how to get them.

The TREC DL qrels, topics and runs ship with judgebench; the MS MARCO passage texts may not (their
terms are non-commercial). A dataset without its texts still runs everything that reads none (human
and file judges, oracle and run-file rankers, the BM25 pool as a system); the first component that
reads a text (an LLM judge, an LLM ranker, a rewriter, BM25 re-indexing) gets one clear error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from judgebench.exceptions import DataError


class UnavailableCorpus(Mapping[str, str]):
    """Stands where the passage texts would be; ``where`` and ``hint`` make the error message."""

    def __init__(self, where: str, hint: str) -> None:
        self.where, self.hint = where, hint

    def _fail(self):
        raise DataError(self.where, f"passage texts are needed here but not available: {self.hint}")

    def __getitem__(self, doc_id: str) -> str:
        self._fail()

    def __iter__(self) -> Iterator[str]:
        self._fail()

    def __len__(self) -> int:
        self._fail()

    def __repr__(self) -> str:
        return f"UnavailableCorpus({self.where!r})"


def available(corpus: Mapping[str, str]) -> bool:
    """Whether the texts can be read (without reading them)."""
    return not isinstance(corpus, UnavailableCorpus)


def require_texts(dataset) -> None:
    """The corpus's own error (where, how to get the texts) when ``dataset``'s passage texts are not available."""
    if not available(dataset.corpus):
        dataset.corpus._fail()
