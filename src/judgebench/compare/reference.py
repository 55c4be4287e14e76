"""The human values each judge is compared with: one place, so every statistic uses the same ones.

Three references (docs/protocol.md):

- ``human_judged`` (default): per judge, the human labels of the pairs *that judge* labelled, scored the
  way its labels are. A judge's failed calls leave pairs out of its qrels; the documents below them
  move up under judged-only scoring, and against any fixed human column that move would read as
  disagreement. Each judge cell logs this column (``ndcg10_human_judged``); a virtual judge gets it
  from the pairs it labelled. Without failures it equals ``human_labelset``.
- ``human_labelset``: the human labels of the whole label set, the same column for every judge.
- ``human``: all human qrels, the paper's Table 1 convention (another normaliser: see protocol.md).

In the per-query frame the human_judged values of judge J are rows of the pseudo-judge
``human_judged[J]``; Table 1 never shows them, the statistics read them through :class:`References`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from judgebench.evaluation import HUMAN, HUMAN_JUDGED, HUMAN_LABELSET, REFERENCES

CHOICES = (HUMAN_JUDGED, HUMAN_LABELSET, HUMAN)


def judged_name(judge: str) -> str:
    """The per-query pseudo-judge holding ``judge``'s human_judged values."""
    return f"{HUMAN_JUDGED}[{judge}]"


def is_pseudo(name: str) -> bool:
    return name.startswith(f"{HUMAN_JUDGED}[") and name.endswith("]")


@dataclass
class References:
    """The chosen ``reference`` of every judge: its per-query values and its Table 1 column."""

    per_query: pd.DataFrame  # dataset, system, judge, query_id, value (pseudo-judges included)
    reference: str = HUMAN_JUDGED
    _means: pd.DataFrame = field(init=False, repr=False)
    _positions: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.reference not in CHOICES:
            raise ValueError(f"reference={self.reference!r}: expected one of {', '.join(CHOICES)}")
        self._means = self.per_query.groupby(["dataset", "judge", "system"])["value"].mean()
        # the row positions of every (dataset, judge), once: a filter of the whole frame per judge made the
        # statistics quadratic in the judges (100 judges: seconds)
        self._positions = self.per_query.groupby(["dataset", "judge"], sort=False).indices

    def name(self, judge: str) -> str:
        """The per-query 'judge' whose values are ``judge``'s reference (a human column is its own)."""
        if judge in REFERENCES:
            return judge
        return judged_name(judge) if self.reference == HUMAN_JUDGED else self.reference

    def rows(self, dataset: str, judge: str) -> pd.DataFrame:
        """Per-query reference rows of ``judge`` on ``dataset`` (columns as ``per_query``)."""
        at = self._positions.get((dataset, self.name(judge)))
        return self.per_query.iloc[at] if at is not None else self.per_query.iloc[:0]

    def column(self, dataset: str, judge: str, systems: list[str] | pd.Index) -> pd.Series:
        """The reference means of ``judge``'s comparison, per system (nan: not scored)."""
        key = (dataset, self.name(judge))
        try:
            values = self._means.loc[key]
        except KeyError:
            values = pd.Series(dtype=float)
        return values.reindex(list(systems)).astype(float)


__all__ = ["CHOICES", "HUMAN", "HUMAN_JUDGED", "HUMAN_LABELSET", "References", "is_pseudo", "judged_name"]
