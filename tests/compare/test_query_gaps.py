"""The query-gaps section (compare/sections/query_gaps.py): per judge and query, the judge's mean nDCG@10 minus its
human reference's over the systems both scored, checked against sums written out by hand."""

from __future__ import annotations

import pandas as pd
import pytest

from judgebench.compare.base.reference import References
from judgebench.compare.sections.query_gaps import query_gaps


def _rows(judge, role, values):
    return [("dl", system, judge, role, query, value) for (system, query), value in values.items()]


@pytest.fixture
def per_query():
    own = {("A", "q1"): 0.9, ("B", "q1"): 0.7, ("A", "q2"): 0.2, ("B", "q2"): 0.4, ("C", "q1"): 1.0}
    ref = {("A", "q1"): 0.5, ("B", "q1"): 0.5, ("A", "q2"): 0.3, ("B", "q2"): 0.3}  # C has no reference values
    labelset = {("A", "q1"): 0.8, ("B", "q1"): 0.8, ("A", "q2"): 0.3, ("B", "q2"): 0.3, ("C", "q1"): 0.8}
    rows = (
        _rows("J", "judge", own) + _rows("J", "human_judged", ref) + _rows("human_labelset", "human_labelset", labelset)
    )
    return pd.DataFrame(rows, columns=["dataset", "system", "judge", "role", "query_id", "value"])


def test_gaps_by_hand_largest_first_over_the_systems_both_scored(per_query):
    got = query_gaps(per_query, References(per_query)).set_index("query_id")
    assert list(got.index) == ["q1", "q2"]  # |0.8 - 0.5| = 0.3 before |0.3 - 0.3| = 0
    assert got.loc["q1", "systems"] == 2  # C: no human_judged value, left out
    assert got.loc["q1", "judge_mean"] == pytest.approx((0.9 + 0.7) / 2)
    assert got.loc["q1", "gap"] == pytest.approx((0.9 + 0.7) / 2 - 0.5)
    assert got.loc["q2", "gap"] == pytest.approx((0.2 + 0.4) / 2 - 0.3)
    assert set(got["judge"]) == {"J"}  # the human reference is no judge of its own here


def test_the_chosen_reference_is_the_one_subtracted(per_query):
    got = query_gaps(per_query, References(per_query, reference="human_labelset")).set_index("query_id")
    assert got.loc["q1", "systems"] == 3  # the shared label-set column scores C too
    assert got.loc["q1", "gap"] == pytest.approx((0.9 + 0.7 + 1.0) / 3 - 0.8)
    assert got.loc["q2", "gap"] == pytest.approx((0.2 + 0.4) / 2 - 0.3)


def test_no_judge_no_rows():
    empty = pd.DataFrame(columns=["dataset", "system", "judge", "role", "query_id", "value"])
    assert query_gaps(empty, References(empty)).empty
