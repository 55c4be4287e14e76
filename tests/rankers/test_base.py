"""ranking_from_scores (one lexsort) against a plain pandas reference on random frames: many tied scores, missing
scores, several queries in a shuffled order and a shuffled index; the order, the ranks and the dtypes must match."""

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from judgebench.rankers.base import ranking_from_scores


def reference(frame: pd.DataFrame) -> pd.DataFrame:
    """Per query in order of first appearance: score descending (missing last), ties in input order; ranks 1..n."""
    rows = []
    for pos, (q, d, s) in enumerate(zip(frame["query_id"], frame["doc_id"], frame["score"])):
        rows.append((q, d, s, pos))
    queries = list(dict.fromkeys(frame["query_id"]))
    out = []
    for q in queries:
        mine = [r for r in rows if r[0] == q]
        scored = sorted((r for r in mine if not np.isnan(r[2])), key=lambda r: (-r[2], r[3]))
        missing = [r for r in mine if np.isnan(r[2])]
        out += [(r[0], r[1], r[2], i + 1) for i, r in enumerate(scored + missing)]
    return pd.DataFrame(out, columns=["query_id", "doc_id", "score", "rank"]).astype({"score": float, "rank": "int64"})


@pytest.mark.parametrize("seed", range(40))
def test_matches_the_reference(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    queries = rng.choice([f"q{i}" for i in range(int(rng.integers(1, 7)))], n)
    scores = rng.integers(0, 4, n).astype(float)  # few values: many ties
    if seed % 2:
        scores[rng.random(n) < 0.25] = np.nan
    frame = pd.DataFrame(
        {"query_id": queries, "doc_id": [f"d{i}" for i in range(n)], "score": scores}, index=rng.permutation(n) + 5
    )
    pdt.assert_frame_equal(ranking_from_scores(frame), reference(frame))


def test_empty_frame():
    empty = pd.DataFrame(
        {
            "query_id": pd.Series([], dtype=object),
            "doc_id": pd.Series([], dtype=object),
            "score": pd.Series([], dtype=float),
        }
    )
    out = ranking_from_scores(empty)
    assert list(out.columns) == ["query_id", "doc_id", "score", "rank"] and out.empty
