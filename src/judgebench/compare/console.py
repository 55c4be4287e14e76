"""What compare prints: a short summary that fits a terminal (lines <= 120 characters) and where the report is.

The full Markdown (every table, the pair lists, the missing cells) is report.md and report.html; the
terminal gets Table 1 and Table 2's headline columns, the headline findings per judge (inversion, tau,
kappa) and what needs attention (missing cells, runs that could not be read). Names are printed through
names.plain: one line each, no terminal escape sequences.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from judgebench.compare import sections
from judgebench.compare.base import findings, names
from judgebench.compare.renderers import findings_panel, render
from judgebench.compare.sections import labels_only

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

WIDTH = render.WIDTH
KIND_ROWS = 2  # judges named per ranked kind in the terminal: the best and the worst


def _fit(text: str, width: int = WIDTH) -> str:
    return "\n".join(line if len(line) <= width else line[: width - 3] + "..." for line in text.splitlines())


def findings_lines(r: Report) -> list[str]:
    """The findings (findings.py) in their brief form (the report has the sentences): one line per subject in a small
    report; by kind where a kind holds many judges (findings_panel.py), each kind at most two lines."""
    found = sections.findings(r)
    kinds = findings_panel.kinds(found, getattr(r, "table2", None), rows=KIND_ROWS)
    if not any(k.condensed for k in kinds):
        return [
            line
            for subject, items in findings.grouped(found).items()
            for line in textwrap.wrap(
                f"{names.plain(subject)}: " + "; ".join(names.plain(f.brief or f.text) for f in items),
                WIDTH,
                initial_indent="  ",
                subsequent_indent="      ",
                break_on_hyphens=False,
            )
        ]
    lines = []
    for k in kinds:
        said = [(f"{f.subject}: " if f.judge else "") + (f.brief or f.text) for f in k.sentences]
        if k.common:
            said.append(f"all {k.count} judges: {k.common.brief or k.common.text}")
        said += [f"{brief}: {findings_panel.subjects(items)}" for brief, items in k.verdicts.items()]
        if k.rows:
            head = (
                f"{'best and worst by ' + k.ranked_by if k.ranked_by else 'e.g.'} ({k.hidden} more in the report)"
                if k.hidden
                else ""
            )
            said.append(" ".join(filter(None, [head, ", ".join(f"{f.subject} {f.brief or f.text}" for f in k.rows)])))
        lines += textwrap.wrap(
            names.plain(f"{k.topic}: " + "; ".join(said)),
            WIDTH,
            initial_indent="  ",
            subsequent_indent="      ",
            break_on_hyphens=False,
            max_lines=2,
            placeholder=" ...",
        )
    return lines


def summary(r: Report, out: Path, seconds: float) -> str:
    parts = sections.console(r, findings_lines(r))  # each section's lines in report order, the findings after Table 2
    return _fit("\n".join(parts)) + "\n\n" + where(r.files, out, seconds)  # a path is never cut


def logged(run_id: str, experiment: str, superseded: list[str]) -> str:
    """The line saying where the compare run went (and which earlier runs of the selection it replaced)."""
    again = (
        f" (replaces {len(superseded)} earlier compare run(s) of this selection: {', '.join(superseded)})"
        if superseded
        else ""
    )
    return _fit(f"logged as MLflow run {run_id} in experiment {names.plain(repr(experiment))}{again}")


def where(files: list[Path], out: Path, seconds: float) -> str:
    """Where the report is: report.html first, then how many other files beside it."""
    html = next((f for f in files if f.name == "report.html"), None)
    if html:
        return f"full report: {html} ({len(files) - 1} more files beside it, {seconds:.1f}s)"
    return f"{len(files)} files written to {out} ({seconds:.1f}s)"


def labels_summary(r, out: Path, seconds: float) -> str:
    """The labels-only report: its sections' lines (compare/sections/labels_only.py), one row per judge with the
    headline agreement columns."""
    parts = sections.console_lines(r, labels_only.SECTIONS)
    return _fit("\n".join(parts)) + "\n\n" + where(r.files, out, seconds)
