"""Table 5 (ranker bias: do LLM rankers rise above the oracles under the judge only) and Table 6 (Student's t intervals
over queries for every mean; Kendall's tau of the means with the per-query tau and its t interval)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import names
from judgebench.compare.analyses import bias, bootstrap, ordering_agreement
from judgebench.compare.renderers import render
from judgebench.compare.renderers import views
from judgebench.compare.renderers.markdown import QUERY_TAU_NOTE, few_queries_warning
from judgebench.compare.base.section import LatexTable, Section

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report


class RankerBias(Section):
    """Table 5."""

    name = "ranker_bias"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        return {"bias": bias.ranker_bias(r.table1, r.refs)}

    def markdown(self, r: Report) -> list[str]:
        if not len(r.bias):
            return []
        return [f"\n## Table 5: ranker bias (human columns: {r.options.reference})\n",
                "Mean rank of the LLM and oracle groups (1 = best) under the judge and under humans; inverted = the "
                "order of the two groups flips, or an LLM system rises above every oracle under the judge only. "
                "llm_wins = share of (LLM, oracle) pairs the LLM system wins; "
                "llm_above_oracles = LLM systems above every oracle; gap = judge minus human nDCG@10, mean per "
                "system type.\n",
                render.markdown(views.bias_view(r, yes="INVERTED"), index=False, digits=3, strong={"inverted": "INVERTED"})]

    def latex(self, r: Report) -> list[LatexTable]:
        return [("ranker_bias", views.bias_view(r), "Ranker bias per judge.", {"index": False, "digits": 3})] if len(r.bias) else []

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [("ranker_bias", r.bias, False)] if len(r.bias) else []


class ConfidenceIntervals(Section):
    """Table 6."""

    name = "confidence_intervals"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        """Read by Table 1's bars and the findings too (``r.ci_means``, ``r.ci_tau``)."""
        o = r.options
        ci_means = (bootstrap.mean_intervals(r.per_query, r.table1, o.level) if o.bootstrap > 0
                    else pd.DataFrame(columns=bootstrap.MEANS))
        ci_tau = ordering_agreement.ordering_agreement(r.per_query, r.table1, r.refs, o.level, o.alpha)
        return {"ci_means": ci_means, "ci_tau": ci_tau}

    def markdown(self, r: Report) -> list[str]:
        o, md = r.options, names.markdown
        parts = ["\n## Table 6: confidence intervals over queries"]
        if not len(r.ci_means):
            parts.append("\nbootstrap=0: no intervals of the means computed.")
        for dataset, c in views.confidence_tables(r).items() if len(r.ci_means) else ():
            table, turned = render.judge_table(c, list(c.columns))
            parts += [f"\n### {md(dataset)}: mean nDCG@10 [{o.level:.0%} interval]"
                      + (" (one row per judge, one column per system)" if turned else "") + "\n", table]
            parts += [f"\n**{md(w)}**" for w in [few_queries_warning(r.ci_means, dataset)] if w]
        if len(r.ci_tau):
            parts += [f"\n### Kendall's tau against {o.reference}: of the means, and per query [{o.level:.0%} interval]\n",
                      render.markdown(views.tau_intervals(r), index=False), f"\n*{QUERY_TAU_NOTE}*"]
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        out: list[LatexTable] = [(f"confidence_{names.file_part(d)}", c, f"Mean nDCG@10 with {r.options.level:.0%} t "
                                  f"intervals on {d}.", {}) for d, c in views.confidence_tables(r).items()] if len(r.ci_means) else []
        if len(r.ci_tau):
            out.append(("tau_intervals", views.tau_intervals(r), "Kendall's tau of the means; per-query tau with its t interval.",
                        {"index": False}))
        return out

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in (("bootstrap_means", r.ci_means), ("ordering_agreement", r.ci_tau)) if len(f)]
