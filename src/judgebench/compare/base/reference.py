"""The human values each judge is compared with: one place, so every statistic uses the same ones.

Three references (docs/protocol.md):

- ``human_judged`` (default): per judge, the human labels of the pairs *that judge* labelled, scored the
  way its labels are. A judge's failed calls leave pairs out of its qrels; the documents below them
  move up under judged-only scoring, and against any fixed human column that move would read as
  disagreement. Each judge cell logs this column (``ndcg10_human_judged``); a virtual judge gets it
  from the pairs it labelled. Without failures it equals ``human_labelset``.
- ``human_labelset``: the human labels of the whole label set, the same column for every judge.
- ``human``: all human qrels, the paper's Table 1 convention (another normaliser: see protocol.md).

What a per-query row is, its ``role`` column says (``ROLE``), not its judge's name:

- ``role == "judge"`` (``OWN``): the values of ``judge`` under its own labels;
- ``role == "human_judged"``: the human_judged values of ``judge`` (the judge they belong to);
- ``role == "human"`` / ``"human_labelset"``: a human reference shared by every judge; its ``judge`` is the
  reference's name too, the Table 1 column it fills.

So judge J's reference rows are ``judge == J, role == "human_judged"``; Table 1 never shows them (it reads
:func:`own_rows`), the statistics read them through :class:`References`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from judgebench.evaluation import HUMAN, HUMAN_JUDGED, HUMAN_LABELSET, REFERENCES

CHOICES = (HUMAN_JUDGED, HUMAN_LABELSET, HUMAN)
ROLE = "role"  # the per-query column saying what a row is
OWN = "judge"  # the role of a judge's own values
ROLES = (OWN, *CHOICES)


def own_rows(per_query: pd.DataFrame) -> pd.DataFrame:
    """The rows that fill Table 1's columns, each under its column's name: every judge's own values and the two
    shared human references; the per-judge human_judged rows are left out (they are read through References)."""
    return per_query[per_query[ROLE] != HUMAN_JUDGED]


@dataclass
class References:
    """The chosen ``reference`` of every judge: its per-query values and its Table 1 column."""

    per_query: pd.DataFrame  # dataset, system, judge, role, query_id, value (every role)
    reference: str = HUMAN_JUDGED
    _means: pd.DataFrame = field(init=False, repr=False)
    _positions: dict = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.reference not in CHOICES:
            raise ValueError(f"reference={self.reference!r}: expected one of {', '.join(CHOICES)}")
        if ROLE not in self.per_query.columns:
            raise ValueError(
                f"per-query frame without a {ROLE!r} column (columns: {', '.join(map(str, self.per_query.columns))})"
            )
        self._means = self.per_query.groupby(["dataset", "judge", ROLE, "system"])["value"].mean()
        # the row positions of every (dataset, judge, role), once: a filter of the whole frame per judge made the
        # statistics quadratic in the judges (100 judges: seconds)
        self._positions = self.per_query.groupby(["dataset", "judge", ROLE], sort=False).indices

    def key(self, judge: str) -> tuple[str, str]:
        """(judge, role) of the rows holding ``judge``'s reference: a human column is its own reference."""
        if judge in REFERENCES:
            return judge, judge
        return (judge, HUMAN_JUDGED) if self.reference == HUMAN_JUDGED else (self.reference, self.reference)

    def rows(self, dataset: str, judge: str) -> pd.DataFrame:
        """Per-query reference rows of ``judge`` on ``dataset`` (columns as ``per_query``)."""
        at = self._positions.get((dataset, *self.key(judge)))
        return self.per_query.iloc[at] if at is not None else self.per_query.iloc[:0]

    def column(self, dataset: str, judge: str, systems: list[str] | pd.Index) -> pd.Series:
        """The reference means of ``judge``'s comparison, per system (nan: not scored)."""
        try:
            values = self._means.loc[(dataset, *self.key(judge))]
        except KeyError:
            values = pd.Series(dtype=float)
        return values.reindex(list(systems)).astype(float)


__all__ = ["CHOICES", "HUMAN", "HUMAN_JUDGED", "HUMAN_LABELSET", "OWN", "ROLE", "ROLES", "References", "own_rows"]
