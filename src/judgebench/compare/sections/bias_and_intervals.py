"""Table 5 (ranker bias: do LLM rankers rise above the oracles under the judge only) and Table 6 (Student's t intervals
over queries for every mean; Kendall's tau of the means with the per-query tau and its t interval)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.analyses import bias, bootstrap, ordering_agreement
from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding, known, number, percent
from judgebench.compare.base.section import LatexTable, Section
from judgebench.compare.renderers import render, views
from judgebench.compare.renderers.markdown import QUERY_TAU_NOTE, few_queries_warning

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report


def _query_tau(row) -> str:
    """The per-query tau of the oracles "value [lo, hi]" (compare/analyses/ordering_agreement.py), or why there is
    none."""
    if row is None or not known(getattr(row, "query_tau_oracles", math.nan)):
        return "no per-query τ"
    return (
        f"per-query τ = {row.query_tau_oracles:.2f} "
        f"[{number(row.query_tau_oracles_lo)}, {number(row.query_tau_oracles_hi)}]"
    )


def oracle_order(r: Report) -> Iterable[Finding]:
    """Can the judge order the oracle rankers (graded perturbations of the human ranking) as humans do: the section's
    own verdict (Table 6, ``oracles_verdict``: the per-query tau's t test, Holm-adjusted over the report's judges),
    with the per-query tau and its interval, and tau of the means as a point."""
    c = r.ci_tau
    rows = {(x.dataset, x.judge): x for x in c.itertuples(index=False)} if len(c) and "oracles_verdict" in c else {}
    for row in r.table2.itertuples(index=False):
        if "tau_oracles" not in r.table2.columns or not known(row.tau_oracles):
            continue
        tau = rows.get((row.dataset, row.judge))
        verdict = getattr(tau, "oracles_verdict", "") if tau is not None else ""
        head = (
            "orders the oracle rankers better than chance"
            if verdict == "better than chance"
            else "cannot be told from chance at ordering the oracle rankers"
            if verdict
            else "orders the oracle rankers"
        )
        p = f", Holm p = {tau.query_tau_oracles_p_holm:.3g}" if verdict else ""
        text = (
            f"{head}: {_query_tau(tau)} against {r.options.reference} "
            f"({r.options.level:.0%} t interval over queries{p}); "
            f"Kendall's τ of the mean orderings = {row.tau_oracles:.2f} over the oracles, "
            f"{number(row.tau_all)} over all systems."
        )
        brief = f"oracles {verdict or 'n/a'}, tau_oracles {row.tau_oracles:.2f}, tau_all {number(row.tau_all)}"
        yield Finding("oracle order", text, row.dataset, row.judge, brief=brief)


def system_order(r: Report) -> Iterable[Finding]:
    """Where there are no oracle rankers (a leaderboard, imported results): how the judge orders the systems, in what
    Table 2, Table 6 and Table 4 say and nothing more: tau of the means and among the human top k (points), the
    per-query tau with its t interval, and the pairwise significance decisions against the humans'."""
    if "tau_all" not in r.table2.columns:
        return
    c, counts = r.ci_tau, getattr(r, "agreement_counts", None)
    taus = {(x.dataset, x.judge): x for x in c.itertuples(index=False)} if len(c) and "query_tau_all" in c else {}
    decided = (
        {(x.dataset, x.judge): x for x in counts.itertuples(index=False)}
        if counts is not None and len(counts) and "agree" in counts
        else {}
    )
    for row in r.table2.itertuples(index=False):
        if known(getattr(row, "tau_oracles", math.nan)) or not known(row.tau_all):
            continue
        points = ", ".join(
            f"{name} {value:.2f}"
            for name, value in (
                ("τ_AP", getattr(row, "tau_ap", math.nan)),
                ("among the human top 5", getattr(row, "tau_top5", math.nan)),
                ("top 10", getattr(row, "tau_top10", math.nan)),
            )
            if known(value)
        )
        parts = [f"Kendall's τ of the mean orderings = {row.tau_all:.2f}" + (f" ({points})" if points else "")]
        tau = taus.get((row.dataset, row.judge))
        if tau is not None and known(tau.query_tau_all):
            parts.append(
                f"per-query τ = {tau.query_tau_all:.2f} "
                f"[{number(tau.query_tau_all_lo)}, {number(tau.query_tau_all_hi)}] "
                f"({r.options.level:.0%} t interval over queries: how often, query by query, it orders two systems as "
                f"{r.options.reference} does)"
            )
        d = decided.get((row.dataset, row.judge))
        if d is not None:
            total = int(d.agree + d.missed + d.spurious + d.reversed)
            parts.append(
                f"its significance decisions agree with the humans' on {int(d.agree)} of {total} system pairs "
                f"({int(d.missed)} missed, {int(d.spurious)} spurious, {int(d.reversed)} reversed)"
            )
        per_query = f", per-query τ {tau.query_tau_all:.2f}" if tau is not None and known(tau.query_tau_all) else ""
        yield Finding(
            "system order",
            "orders the systems: " + "; ".join(parts) + ".",
            row.dataset,
            row.judge,
            brief=f"tau_all {row.tau_all:.2f}{per_query}",
        )


class RankerBias(Section):
    """Table 5."""

    name = "ranker_bias"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        return {"bias": bias.ranker_bias(r.table1, r.refs)}

    def markdown(self, r: Report) -> list[str]:
        if not len(r.bias):
            return []
        return [
            f"\n## Table 5: ranker bias (human columns: {r.options.reference})\n",
            "Mean rank of the LLM and oracle groups (1 = best) under the judge and under humans; inverted = the "
            "order of the two groups flips, or an LLM system rises above every oracle under the judge only. "
            "llm_wins = share of (LLM, oracle) pairs the LLM system wins; "
            "llm_above_oracles = LLM systems above every oracle; gap = judge minus human nDCG@10, mean per "
            "system type.\n",
            render.markdown(views.bias_view(r, yes="INVERTED"), index=False, digits=3, strong={"inverted": "INVERTED"}),
        ]

    def latex(self, r: Report) -> list[LatexTable]:
        return (
            [("ranker_bias", views.bias_view(r), "Ranker bias per judge.", {"index": False, "digits": 3})]
            if len(r.bias)
            else []
        )

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [("ranker_bias", r.bias, False)] if len(r.bias) else []

    def findings(self, r: Report) -> Iterable[Finding]:
        """Does the judge put the LLM rankers above the oracles that humans put above them (Table 5)."""
        for row in r.bias.itertuples(index=False):
            v = row.inverted
            ranks = (
                f"mean rank of the LLM systems {number(row.llm_rank_judge, 1)} "
                f"vs the oracles {number(row.oracle_rank_judge, 1)} "
                f"under the judge, {number(row.llm_rank_human, 1)} vs {number(row.oracle_rank_human, 1)} under humans; "
                f"LLM systems win {percent(row.llm_wins_judge)} of (LLM, oracle) pairs under the judge, "
                f"{percent(row.llm_wins_human)} under humans"
            )
            flips = getattr(row, "flipped_pairs", math.nan)
            if known(flips, getattr(row, "oracle_first_pairs", math.nan)) and row.oracle_first_pairs > 0:  # by how much
                margin = f", by {row.flip_margin:.3f} nDCG@10 on average" if known(row.flip_margin) else ""
                ranks += (
                    f"; of the {int(row.oracle_first_pairs)} (LLM, oracle) pairs humans order oracle first, "
                    f"the judge puts "
                    f"the LLM system above in {int(flips)}{margin}"
                )
            if not known(v):
                yield Finding(
                    "inversion",
                    "inversion not measured: it needs both LLM and oracle systems.",
                    row.dataset,
                    row.judge,
                    brief="inversion n/a",
                )
            elif v:
                yield Finding(
                    "inversion",
                    f"INVERTS the LLM and oracle rankers ({ranks}).",
                    row.dataset,
                    row.judge,
                    alert=True,
                    brief="INVERTED (LLM above oracles)",
                )
            else:
                yield Finding(
                    "inversion",
                    f"does not invert the LLM and oracle rankers ({ranks}).",
                    row.dataset,
                    row.judge,
                    brief="not inverted",
                )


class ConfidenceIntervals(Section):
    """Table 6."""

    name = "confidence_intervals"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        """Read by Table 1's bars and the findings too (``r.ci_means``, ``r.ci_tau``)."""
        o = r.options
        ci_means = (
            bootstrap.mean_intervals(r.per_query, r.table1, o.level)
            if o.bootstrap > 0
            else pd.DataFrame(columns=bootstrap.MEANS)
        )
        ci_tau = ordering_agreement.ordering_agreement(r.per_query, r.table1, r.refs, o.level, o.alpha)
        return {"ci_means": ci_means, "ci_tau": ci_tau}

    def markdown(self, r: Report) -> list[str]:
        o, md = r.options, names.markdown
        parts = ["\n## Table 6: confidence intervals over queries"]
        if not len(r.ci_means):
            parts.append("\nbootstrap=0: no intervals of the means computed.")
        for dataset, c in views.confidence_tables(r).items() if len(r.ci_means) else ():
            parts += render.judge_table_under(f"{md(dataset)}: mean nDCG@10 [{o.level:.0%} interval]", c, "system")
            parts += [f"\n**{md(w)}**" for w in [few_queries_warning(r.ci_means, dataset)] if w]
        if len(r.ci_tau):
            parts += [
                f"\n### Kendall's tau against {o.reference}: of the means, and per query [{o.level:.0%} interval]\n",
                render.markdown(views.tau_intervals(r), index=False),
                f"\n*{QUERY_TAU_NOTE}*",
            ]
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        out: list[LatexTable] = (
            [
                (
                    f"confidence_{names.file_part(d)}",
                    c,
                    f"Mean nDCG@10 with {r.options.level:.0%} t intervals on {d}.",
                    {},
                )
                for d, c in views.confidence_tables(r).items()
            ]
            if len(r.ci_means)
            else []
        )
        if len(r.ci_tau):
            out.append(
                (
                    "tau_intervals",
                    views.tau_intervals(r),
                    "Kendall's tau of the means; per-query tau with its t interval.",
                    {"index": False},
                )
            )
        return out

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in (("bootstrap_means", r.ci_means), ("ordering_agreement", r.ci_tau)) if len(f)]

    def findings(self, r: Report) -> Iterable[Finding]:
        """Can each judge order the oracle rankers, or, where there are none, the systems (Tables 2, 4 and 6)."""
        yield from oracle_order(r)
        yield from system_order(r)
