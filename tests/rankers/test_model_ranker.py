"""ModelRanker.combine (the head re-ranked, the tail below it in pool order) against the per-query loop it
replaced, on random heads and tails: tied and missing head scores, a query whose head scores are all missing,
tail rows of a query without a head (dropped), queries in a shuffled order and shuffled indexes."""

import numpy as np
import pandas as pd
import pandas.testing as pdt
import pytest

from judgebench.rankers.base import ranking_from_scores
from judgebench.rankers.model_ranker import ModelRanker


def reference(head: pd.DataFrame, tail: pd.DataFrame) -> pd.DataFrame:
    """The loop of the earlier code: each head query's tail rows get min(head score) - 1 - 0, 1, 2, ..."""
    head = ranking_from_scores(head[["query_id", "doc_id", "score"]])
    if tail.empty:
        return head
    parts = []
    for qid, h in head.groupby("query_id", sort=False):
        t = tail[tail["query_id"] == qid]
        floor = h["score"].min() - 1.0
        parts += [
            h,
            pd.DataFrame({"query_id": qid, "doc_id": t["doc_id"], "score": floor - pd.RangeIndex(len(t)).to_numpy()}),
        ]
    return ranking_from_scores(pd.concat(parts, ignore_index=True)[["query_id", "doc_id", "score"]])


def frame(rng, n: int, queries: list[str], prefix: str, missing: float) -> pd.DataFrame:
    scores = rng.integers(0, 4, n).astype(float)  # few values: ties
    scores[rng.random(n) < missing] = np.nan
    return pd.DataFrame(
        {
            "query_id": rng.choice(queries, n),
            "doc_id": [f"{prefix}{i}" for i in range(n)],
            "score": scores,
            "rank": np.arange(n) + 1,
        },
        index=rng.permutation(n) + 3,
    )


@pytest.mark.parametrize("seed", range(40))
def test_matches_the_per_query_loop(seed):
    rng = np.random.default_rng(seed)
    queries = [f"q{i}" for i in range(int(rng.integers(1, 6)))]
    head = frame(rng, int(rng.integers(1, 40)), queries, "h", 0.3 if seed % 3 == 0 else 0.0)
    if seed % 5 == 0:  # one query whose every head score is missing: its tail keeps NaN scores
        head.loc[head["query_id"] == head["query_id"].iloc[0], "score"] = np.nan
    tail = frame(rng, int(rng.integers(0, 60)), queries + ["q-no-head"], "t", 0.0)
    pdt.assert_frame_equal(ModelRanker.combine(head, tail), reference(head, tail))


def test_tail_follows_the_head_in_pool_order():
    head = pd.DataFrame({"query_id": ["a", "a", "b"], "doc_id": ["x", "y", "z"], "score": [1.0, 5.0, 2.0]})
    tail = pd.DataFrame({"query_id": ["b", "a", "a", "c"], "doc_id": ["t1", "t2", "t3", "t4"], "score": 0.0})
    out = ModelRanker.combine(head, tail)
    assert list(out["doc_id"]) == ["y", "x", "t2", "t3", "z", "t1"]  # c has no head: dropped
    assert list(out["score"]) == [5.0, 1.0, 0.0, -1.0, 2.0, 1.0]
    assert list(out["rank"]) == [1, 2, 3, 4, 1, 2]
