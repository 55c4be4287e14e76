"""Table 2: each judge's agreement with the human qrels (labels and orderings), with the figures drawn per judge:
human vs judge nDCG (scatter), kappa against tau, and a confusion matrix per judge."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import columns, names
from judgebench.compare.base.artifacts import REFERENCES
from judgebench.compare.base.findings import Finding, known, number
from judgebench.compare.base.section import LatexTable, Section
from judgebench.compare.renderers import label_figures, render, scatter_figures, views
from judgebench.metrics.correlation import TOP_K_RULE

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

FIGURE_JUDGES = 12
SCALE_NOTE = (
    "\nEach judge is read on its own label scale (docs/protocol.md): a judge whose scale does not reach every human "
    "level (binary) has kappa_relevant, Cohen's κ of relevant or not (its 1 against human labels at or above the "
    "collection's relevance threshold), and no graded κ/α (those cells read missing: not comparable, not data lost).\n"
)
HEADLINE = [
    "kappa_graded",
    "kappa_ge2",
    "kappa_relevant",
    "tau_all",
    "tau_oracles",
    "tau_ap",
]  # the columns the terminal shows


def figure_judges(r: Report) -> tuple[list[str], int]:
    """(the judges that get figures of their own, how many judges there are). Per-judge figures cost ~0.1-0.2 s a
    judge to draw; a grid of 100 judges spent most of compare's time on 100 confusion files and a 100-panel scatter
    (400 inches wide) nobody reads: beyond FIGURE_JUDGES the first ones are drawn, and the report says so."""
    judges = [j for j in r.judges if j not in REFERENCES]
    return judges[:FIGURE_JUDGES], len(judges)


# Landis and Koch's words for kappa (1977), the ones the LLM-judge papers use.
KAPPA_WORDS = ((0.8, "almost perfect"), (0.6, "substantial"), (0.4, "moderate"), (0.2, "fair"), (0.0, "slight"))


def kappa_word(kappa: float) -> str:
    return next((w for cut, w in KAPPA_WORDS if kappa > cut), "poor")


class Table2(Section):
    name = "table2"

    def markdown(self, r: Report) -> list[str]:
        parts = [
            f"\n## Table 2: agreement with the human qrels per judge (labels: on the label set; orderings: against "
            f"{r.options.reference})\n"
        ]
        if len(r.table2):
            for suffix, title, frame, integers in views.table2_blocks(r.table2):
                parts += [
                    f"\n### {title}\n",
                    render.markdown(frame, index=False, integers=[c for c in integers if c != "reference"]),
                ]
                if suffix == "" and r.table2["kappa_graded"].isna().any() and "kappa_relevant" in r.table2:
                    parts.append(SCALE_NOTE)
                if suffix == "_orderings":
                    parts.append(f"\n{TOP_K_RULE}.\n")
        else:
            parts.append("(no judge other than human)")
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        out = []
        for suffix, title, frame, integers in views.table2_blocks(r.table2) if len(r.table2) else ():
            against = f" (human reference: {r.options.reference})" if "reference" in integers else ""
            out.append(
                (
                    f"table2{suffix}",
                    frame,
                    f"Per judge: {title}{against}.",
                    {"index": False, "integers": [c for c in integers if c != "reference"]},
                )
            )
        return out

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [("table2", r.table2, False)]  # written even when empty: the file says "no judge"

    def figures(self, r: Report, out: Path) -> list[Path]:
        files = []
        drawn, _ = figure_judges(r)
        if len(r.judges) > 1:
            shown = {
                d: t[[c for c in t.columns if c == "type" or c in REFERENCES or c in drawn]]
                for d, t in r.table1.items()
            }
            files.append(scatter_figures.scatter(shown, out / "figure_scatter.png", r.refs, r.table2))
            files.append(scatter_figures.kappa_tau(r.table2, out / "figure_kappa_tau.png"))
        original = r.original_labels
        for judge in drawn:
            lab = original[original["judge"] == judge]
            if len(lab):
                files.append(
                    label_figures.confusion(lab, judge, out / f"figure_confusion_{names.file_part(judge)}.png")
                )
        return files

    def console(self, r: Report) -> list[str]:
        if not len(r.table2):
            return []
        cols = [c for c in HEADLINE if c in r.table2.columns]
        return [
            "\nTable 2: agreement with the humans (headline columns)",
            render.plain(r.table2[["dataset", "judge", *cols]], index=False, rows=render.TERMINAL_ROWS),
        ]

    def findings(self, r: Report) -> Iterable[Finding]:
        """Label agreement with the humans on the label set: graded kappa (and >= 2 binary), pairs labelled."""
        for row in r.table2.itertuples(index=False):
            k = getattr(row, "kappa_graded", math.nan)
            pairs = getattr(row, "labelled_pairs", math.nan)
            on = f" over {int(pairs):,} labelled pairs" if known(pairs) else ""
            relevant = getattr(row, "kappa_relevant", math.nan)
            if not known(k) and known(relevant):  # a judge on a scale that does not reach every human level (binary)
                yield Finding(
                    "label agreement",
                    f"label agreement with the humans is {kappa_word(relevant)}: Cohen's κ = "
                    f"{relevant:.2f} on relevant or not{on}; its scale has no 0–3 grades, so no graded κ (no interval "
                    "computed).",
                    row.dataset,
                    row.judge,
                    brief=f"binary kappa {relevant:.2f} ({kappa_word(relevant)})",
                )
                continue
            if not known(k):
                continue
            text = (
                f"label agreement with the humans is {kappa_word(k)}: Cohen's κ = {k:.2f} on the 0–3 scale, "
                f"{number(getattr(row, 'kappa_ge2', math.nan))} on relevant (≥ 2) or not{on} (no interval computed)."
            )
            yield Finding("label agreement", text, row.dataset, row.judge, brief=f"kappa {k:.2f} ({kappa_word(k)})")

    def compare_run_metrics(self, r: Report) -> dict[str, float]:
        """Every Table 2 statistic per (dataset, judge) that has a value."""
        out: dict[str, float] = {}
        for row in r.table2.itertuples(index=False):
            for name in columns.STATISTICS:
                value = getattr(row, name)
                if value == value:
                    out[f"{name}.{names.file_part(row.dataset)}.{names.file_part(row.judge)}"] = value
        return out
