"""Tables 3 and 4: paired t-tests between the oracle rankers, and each judge's pairwise significance decisions
against its human reference (agree / missed / spurious / reversed, with the pairs)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.analyses import significance
from judgebench.compare.base import names
from judgebench.compare.base.section import LatexTable, Section, latex_table
from judgebench.compare.renderers import render

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report


def _everyone(r: Report) -> dict[str, list[str]]:
    """{dataset: every system of Table 1}: the family both tables test over."""
    return {d: list(t.index) for d, t in r.table1.items()}


class OracleTests(Section):
    """Table 3."""

    name = "oracle_tests"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        oracles = {d: list(t.index[t["type"] == "oracle"]) for d, t in r.table1.items()}
        return {
            "oracle_tests": significance.ttests(r.per_query, oracles, r.options.alpha),
            "all_tests": significance.ttests(r.per_query, _everyone(r), r.options.alpha),
        }

    def markdown(self, r: Report) -> list[str]:
        if not len(r.oracle_tests):
            return []
        alpha = r.options.alpha
        parts = [
            f"\n## Table 3: paired t-tests between oracle rankers (p raw / p Holm, * = significant at alpha {alpha})"
        ]
        for dataset, m in significance.oracle_matrix(r.oracle_tests, alpha, r.judges).items():
            parts += render.judge_table_under(names.markdown(dataset), m, "pair")
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        if not len(r.oracle_tests):
            return []
        return [
            (
                f"ttests_oracles_{names.file_part(d)}",
                m,
                f"Paired t-tests between oracle rankers on {d} (p raw / p Holm, * significant).",
                {},
            )
            for d, m in significance.oracle_matrix(r.oracle_tests, r.options.alpha, r.judges).items()
        ]

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in (("ttests_oracles", r.oracle_tests), ("ttests_all", r.all_tests)) if len(f)]


class DecisionAgreement(Section):
    """Table 4."""

    name = "decision_agreement"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        o = r.options
        counts, pairs = significance.decision_agreement(
            r.per_query, _everyone(r), r.refs, o.alpha, use_holm=o.correction == "holm"
        )
        return {"agreement_counts": counts, "agreement_pairs": pairs}

    def markdown(self, r: Report) -> list[str]:
        if not len(r.agreement_counts):
            return []
        o = r.options
        parts = [
            f"\n## Table 4: pairwise significance decisions, judge vs {o.reference} (alpha {o.alpha}, correction "
            f"{o.correction})\n",
            "The family of each judge is the pairs of the systems that it and its reference both scored (`family`); "
            "Holm corrects both sides over that family. Pairs of the dataset's other systems are `dropped` (counted, "
            "listed in significance_pairs.csv).\n",
            render.markdown(r.agreement_counts, index=False, integers=list(significance.COUNTS[3:])),
        ]
        lists = significance.pair_lists(r.agreement_pairs)
        lists = lists[lists["n"] > 0]
        parts.append("\nPairs that do not agree (all pairs with their class: significance_pairs.csv):\n")
        parts.append(
            render.markdown(lists, index=False, integers=["n"]) if len(lists) else "(none: every decision agrees)"
        )
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        caption = "Pairwise significance decisions, judge vs human."
        counts = list(significance.COUNTS[3:])
        return latex_table("significance_agreement", r.agreement_counts, caption, index=False, integers=counts)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [
            (n, f, False)
            for n, f in (("significance_agreement", r.agreement_counts), ("significance_pairs", r.agreement_pairs))
            if len(f)
        ]
