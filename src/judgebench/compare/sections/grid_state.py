"""The content-bias section (original vs rewritten text views) and the state of the grid: cells without a finished
run (some still running) and the runs that could not be read."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding
from judgebench.compare.base.section import LatexTable, Section, latex_table
from judgebench.compare.renderers import figures, render
from judgebench.content_bias import statistics as content_bias

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report


class ContentBias(Section):
    name = "content_bias"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        """Every label of the judges that have a run on a rewritten view (their original labels too: the comparison)."""
        rewritten_labels = r.labels[r.labels["judge"].isin(set(r.rewritten["judge"]))]
        return {
            "content_distribution": content_bias.distribution(rewritten_labels),
            "content_summary": content_bias.summary(rewritten_labels),
        }

    def markdown(self, r: Report) -> list[str]:
        parts = ["\n## Content bias (original vs rewritten text)\n"]
        if r.rewritten_runs:
            parts.append(
                f"{r.rewritten_runs} run(s) on rewritten text views: used in this section only (Tables 1-6 compare "
                "systems on the original texts).\n"
            )
        if len(r.content_summary):
            parts.append(render.markdown(r.content_summary, index=False, integers=["human", "pairs"], digits=3))
        else:
            parts.append(
                "None found: no judge runs with a rewritten text view (tag text_view != 'original') in this selection; "
                "content-bias figures skipped."
            )
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        caption = "Judge labels on original vs rewritten text."
        return latex_table(
            "content_bias", r.content_summary, caption, index=False, integers=["human", "pairs"], digits=3
        )

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [
            (n, f, False)
            for n, f in (
                ("content_bias_distribution", r.content_distribution),
                ("content_bias_summary", r.content_summary),
            )
            if len(f)
        ]

    def figures(self, r: Report, out: Path) -> list[Path]:
        if not len(r.content_distribution):
            return []
        return [figures.content_bias(r.content_distribution, out / "figure_content_bias.png")]

    def console(self, r: Report) -> list[str]:
        return (
            [f"\n{r.rewritten_runs} run(s) on rewritten text views: used in the content-bias section only"]
            if r.rewritten_runs
            else []
        )


class GridState(Section):
    name = "grid_state"

    def markdown(self, r: Report) -> list[str]:
        md, parts = names.markdown, []
        if len(r.missing):
            running = set(r.running.itertuples(index=False, name=None)) if len(r.running) else set()
            parts.append(
                f"\n## Missing grid cells ({len(r.missing)}, no finished run; {len(running)} of them still running)\n"
            )
            show_rw = r.missing["rewriter"].nunique() > 1 or (r.missing["rewriter"] != "none").any()
            parts += [
                f"- {md(d)} / {md(s)} / judge={md(j)}"
                + (f" / rewriter={md(w)}" if show_rw else "")
                + (" (running)" if (d, s, j, w) in running else "")
                for d, s, j, w in r.missing.itertuples(index=False)
            ]
        else:
            parts.append(f"\nNo missing grid cells: all {len(r.jobs) + r.rewritten_runs} cells have a finished run.")
        if r.problems:
            parts.append("\n## Problems reading runs\n")
            parts += [f"- {md(p)}" for p in r.problems]
        return parts

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [("missing_cells", r.missing, False)]  # written even when empty: no missing cell is news too

    def console(self, r: Report) -> list[str]:
        parts = []
        if len(r.missing):
            shown = [
                f"{names.plain(d)} / {names.plain(s)} / judge={names.plain(j)}"
                for d, s, j, _ in r.missing.head(2).itertuples(index=False)
            ]
            running = f"; {len(r.running)} of them still running" if len(r.running) else ""
            parts.append(
                f"\nmissing grid cells: {len(r.missing)} (e.g. {'; '.join(shown)}; all in the report){running}"
            )
        return parts + problem_lines(r.problems)

    def findings(self, r: Report) -> Iterable[Finding]:
        """Whether the selection is complete: cells without a finished run, those still running counted."""
        missing, running = len(r.missing), len(r.running)
        total = len(r.jobs) + r.rewritten_runs + missing
        if missing:
            still = f"{running} still running, " if running else ""
            yield Finding(
                "grid",
                f"{missing} of {total} grid cells have no finished run yet ({still}{missing - running} not started "
                "or failed): the numbers below are of the finished cells only.",
                alert=True,
            )
        else:
            yield Finding("grid", f"all {total} grid cells have a finished run.")


PROBLEM_LINES = 3  # problems the terminal names: 39 unreadable artifacts were 39 lines of a 76-line summary


def problem_lines(problems: list[str]) -> list[str]:
    """The first PROBLEM_LINES problems, one line each, and how many more the report lists."""
    more = len(problems) - PROBLEM_LINES
    return [f"problem: {names.plain(p)}" for p in problems[:PROBLEM_LINES]] + (
        [f"(+ {more} more problems like these: every one in the report)"] if more > 0 else []
    )
