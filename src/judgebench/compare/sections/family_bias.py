"""The run-type bias section: each judge's gap on its own family's systems against every other system's
(compare/analyses/family_bias.py), a table, terminal lines and one finding per judge. One module and one line in
SECTIONS."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.analyses import family_bias
from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding
from judgebench.compare.base.resampling import Resampling
from judgebench.compare.base.section import LatexTable, Section, latex_table
from judgebench.compare.renderers import render

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

# the analysis's columns but the reference (said in the heading) and the lists of systems (said above the table)
SHOWN = [c for c in family_bias.COLUMNS if c not in ("reference", "own_systems", "other_systems")]


class FamilyBias(Section):
    name = "family_bias"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        o = r.options
        return {self.name: family_bias.analyse(r.per_query, r.table1, r.jobs, r.refs, Resampling.from_options(o))}

    def markdown(self, r: Report) -> list[str]:
        table = self.nonempty_result(r)
        if table is None:
            return []
        groups = [
            f"- {names.markdown(x.dataset)} / {names.markdown(x.judge)}: own family {names.markdown(x.judge_family)}: "
            f"{names.markdown(x.own_systems)}; every other system: {names.markdown(x.other_systems)}"
            for x in table.itertuples()
        ]
        return [
            "\n## Run-type bias: each judge on its own family's systems vs every other system (reference: "
            f"{r.refs.reference})\n",
            "Gap = judge nDCG@10 minus the judge's human reference, per system and query; family_bias = per "
            "query, mean gap "
            "on the systems of the judge's family minus mean gap on every other system (oracle rankers aside), "
            "averaged over "
            "queries. Interval: "
            f"{100 * r.options.level:g}% guarded bootstrap-t over queries, as self-preference's "
            f"({r.options.bootstrap} resamples, seed "
            f"{r.options.seed}); p: its test of 0, Holm-adjusted over the rows (docs/protocol.md). Families come "
            "from the runs' "
            "ranker_family tags (imported runs: the runs table's type, mapped by results.runs.families).\n",
            *[
                f"- {names.markdown(x.dataset)} / {names.markdown(x.judge)}: {family_bias.sentence(x, len(table))}"
                for x in table.itertuples()
            ],
            "",
            render.markdown(table[SHOWN], index=False, integers=["n_own", "n_other", "queries"], digits=4),
            "",
            "Systems per group:\n",
            *groups,
        ]

    def latex(self, r: Report) -> list[LatexTable]:
        table = self.result(r)
        caption = (
            "Run-type bias: gap on the judge's own family's systems minus gap on every other "
            f"system, with a {100 * r.options.level:g}\\% guarded bootstrap-t interval and its p over queries."
        )
        shown = None if table is None else table[SHOWN]
        return latex_table(
            "family_bias", shown, caption, index=False, integers=["n_own", "n_other", "queries"], digits=4
        )

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        table = self.nonempty_result(r)
        return [("family_bias", table, False)] if table is not None else []

    def console(self, r: Report) -> list[str]:
        table = self.nonempty_result(r)
        if table is None:
            return []
        return [
            f"  run-type bias, {names.plain(x.dataset)} / {names.plain(x.judge)} ({names.plain(x.judge_family)} "
            "vs the rest): "
            f"{x.family_bias:+.3f} [{x.lo:+.3f}, {x.hi:+.3f}], p = {x.p_value:.3g}"
            for x in table.itertuples()
        ]

    def findings(self, r: Report) -> Iterable[Finding]:
        table = self.nonempty_result(r)
        for x in table.itertuples() if table is not None else ():
            yield Finding(
                "run-type bias",
                family_bias.sentence(x, len(table)),
                x.dataset,
                x.judge,
                brief=f"own family vs the rest {x.family_bias:+.3f} [{x.lo:+.3f}, {x.hi:+.3f}]",
            )
