"""Where a judge disagrees with the humans, query by query: per (dataset, judge), the judge's nDCG@10 minus its human
reference's on each query, averaged over the systems both scored, and the queries where that gap is largest. A judge
whose system-level agreement looks fine can still be far off on a handful of queries (a topic it misreads, a pool it
labels leniently); those are the queries to read first. (Added as one module and one line in SECTIONS.)"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import names
from judgebench.compare.base.reference import OWN, ROLE, References
from judgebench.compare.base.section import Section
from judgebench.compare.renderers import render
from judgebench.evaluation import REFERENCES

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

SHOWN = 3  # queries shown per judge in report.md (query_gaps.csv holds every query)
COLUMNS = ["dataset", "judge", "query_id", "systems", "judge_mean", "human_mean", "gap"]


def query_gaps(per_query: pd.DataFrame, refs: References) -> pd.DataFrame:
    """Per (dataset, judge, query): the systems scored by both, the judge's and the reference's mean nDCG@10 over
    them, and judge minus reference; ordered by |gap|, largest first, within each (dataset, judge)."""
    own = per_query[(per_query[ROLE] == OWN) & ~per_query["judge"].isin(REFERENCES)]
    frames = []
    for (dataset, judge), g in own.groupby(["dataset", "judge"], sort=False):
        ref = refs.rows(dataset, judge)[["system", "query_id", "value"]]
        both = g[["system", "query_id", "value"]].merge(ref, on=["system", "query_id"], suffixes=("_judge", "_human"))
        if not len(both):
            continue
        by_query = both.groupby("query_id", sort=False).agg(
            systems=("system", "nunique"), judge_mean=("value_judge", "mean"), human_mean=("value_human", "mean")
        )
        by_query["gap"] = by_query["judge_mean"] - by_query["human_mean"]
        by_query = by_query.reindex(by_query["gap"].abs().sort_values(ascending=False, kind="stable").index)
        frames.append(by_query.reset_index().assign(dataset=dataset, judge=judge))
    return pd.concat(frames, ignore_index=True)[COLUMNS] if frames else pd.DataFrame(columns=COLUMNS)


class QueryGaps(Section):
    name = "query_gaps"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        return {self.name: query_gaps(r.per_query, r.refs)}

    def markdown(self, r: Report) -> list[str]:
        table = self.nonempty_result(r)
        if table is None:
            return []
        top = table.groupby(["dataset", "judge"], sort=False).head(SHOWN)
        return [
            f"\n## Queries where each judge departs most from {r.refs.reference}\n",
            f"Per judge, the {SHOWN} queries whose nDCG@10 differs most, either way, from {r.refs.reference}'s, "
            f"averaged over the systems both scored; gap = judge minus {r.refs.reference} (every query in "
            "query_gaps.csv).\n",
            render.markdown(
                top.assign(judge=top["judge"].map(names.plain)), index=False, integers=["systems"], digits=3
            ),
        ]

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        table = self.result(r)
        return [("query_gaps", table, False)] if table is not None and len(table) else []
