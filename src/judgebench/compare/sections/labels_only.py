"""The labels-only report (``judgebench.kind=labels``: judge labels and human labels, no systems) as sections of its own
kind: the opening, Table 2's label statistics with their figures, the line saying what needs systems, and the runs
missing or unreadable. ``compare/labels_report.py`` reads the runs into a ``LabelsReport`` and writes it by walking
``SECTIONS`` here, as ``compare/report.py`` walks the grid report's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import columns, names
from judgebench.compare.base.section import LatexTable, Section
from judgebench.compare.renderers import label_figures, markdown, render, views
from judgebench.compare.sections.grid_state import problem_lines
from judgebench.compare.sections.header import plain_title

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import LabelsReport

NEEDS_SYSTEMS = (
    "nDCG@10 (Table 1), the system-ordering statistics (tau, tau_AP, rho, tau_top5) and Tables 3-6 need systems: "
    "these runs are labels-only (job=labels_only: the dataset has no pool of passages or no rankers were run), "
    "so those tables are not reported."
)
HEADLINE = ("kappa_graded", "kappa_ge2", "alpha_ordinal", "labelled_pairs", "failed_pairs")  # the terminal's columns


class Opening(Section):
    name = "labels_opening"

    def markdown(self, r: LabelsReport) -> list[str]:
        judges = list(dict.fromkeys(r.table["judge"]))
        return [
            markdown.report_title(r.experiment, r.sweep, ", labels-only runs"),
            "",
            f"{len(r.runs)} labels-only runs; datasets: {markdown.listed(dict.fromkeys(r.table['dataset']))}; "
            f"{len(judges)} judges: {markdown.listed(judges)}.",
        ]

    def console(self, r: LabelsReport) -> list[str]:
        return [
            plain_title(r.experiment, None)
            + ", labels-only runs"
            + (f", sweep {names.plain(repr(r.sweep))}" if r.sweep else "")
            + f": {len(r.runs)} runs, {len(set(r.table['judge']))} judges"
        ]


class Agreement(Section):
    """Table 2's label statistics, one row per judge, and their figures."""

    name = "labels_agreement"

    def markdown(self, r: LabelsReport) -> list[str]:
        parts = ["\n## Table 2: agreement with the human labels per judge"]
        for _, title, frame, integers in views.table2_blocks(r.table):
            parts += [f"\n### {title}\n", render.markdown(frame, index=False, integers=integers)]
        return parts

    def csv(self, r: LabelsReport) -> list[tuple[str, pd.DataFrame, bool]]:
        return [("table2", r.table, False)]

    def latex(self, r: LabelsReport) -> list[LatexTable]:
        return [
            (
                f"table2{suffix}",
                frame,
                f"Per judge: {title} (labels-only runs).",
                {"index": False, "integers": integers},
            )
            for suffix, title, frame, integers in views.table2_blocks(r.table)
        ]

    def figures(self, r: LabelsReport, out: Path) -> list[Path]:
        drawn = [
            label_figures.agreement_dots(r.table, out / "figure_agreement.png"),
            label_figures.label_shares(r.table, out / "figure_label_distribution.png"),
        ]
        return drawn + ([label_figures.confusion_grid(r.labels, out / "figure_confusion.png")] if len(r.labels) else [])

    def console(self, r: LabelsReport) -> list[str]:
        cols = [c for c in HEADLINE if c in r.table.columns]
        return [
            "\nTable 2: agreement with the human labels (headline columns)",
            render.plain(
                r.table[["dataset", "judge", *cols]], index=False, integers=["labelled_pairs", "failed_pairs"]
            ),
        ]

    def compare_run_metrics(self, r: LabelsReport) -> dict[str, float]:
        """Every statistic per (dataset, judge) that has a value."""
        return {
            f"{c}.{names.file_part(row['dataset'])}.{names.file_part(row['judge'])}": row[c]
            for _, row in r.table.iterrows()
            for c in [*columns.AGREEMENT, *columns.SHARES]
            if row[c] == row[c]
        }


class NeedsSystems(Section):
    name = "labels_need_systems"

    def markdown(self, r: LabelsReport) -> list[str]:
        return [f"\n{NEEDS_SYSTEMS}"]

    def console(self, r: LabelsReport) -> list[str]:
        return ["\nlabels-only runs: nDCG, tau and Tables 3-6 need systems, so they are not reported"]


class MissingRuns(Section):
    """The (dataset, judge) runs asked for without a finished run, and the runs that could not be read."""

    name = "labels_missing"

    def markdown(self, r: LabelsReport) -> list[str]:
        parts: list[str] = []
        if len(r.missing):
            parts.append(f"\n## Missing (dataset, judge) runs ({len(r.missing)}, no finished run)\n")
            parts += [
                f"- {names.markdown(d)} / judge={names.markdown(j)}" for d, j in r.missing.itertuples(index=False)
            ]
        if r.problems:
            parts += ["\n## Problems reading runs\n", *(f"- {names.markdown(p)}" for p in r.problems)]
        return parts

    def console(self, r: LabelsReport) -> list[str]:
        return ([f"missing (dataset, judge) runs: {len(r.missing)}"] if len(r.missing) else []) + problem_lines(
            r.problems
        )


SECTIONS: list[Section] = [Opening(), Agreement(), NeedsSystems(), MissingRuns()]
