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

import pandas as pd

from judgebench.compare import findings, names, sections
from judgebench.compare.renderers import render
from judgebench.compare.artifacts import REFERENCES

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report

WIDTH = 120
HEADLINE = ["kappa_graded", "kappa_ge2", "tau_all", "tau_oracles", "tau_ap"]


def _fit(text: str, width: int = WIDTH) -> str:
    return "\n".join(line if len(line) <= width else line[: width - 3] + "..." for line in text.splitlines())


def _table(frame: pd.DataFrame, index: bool = True, **kw) -> str:
    """A plain text table; columns that would pass WIDTH are left out and named. The cells are rendered once and the
    widest prefix of the columns that fits is found by bisection (a line only grows with each column): dropping one
    column at a time re-rendered the table a hundred times for a hundred judges."""
    cols = list(frame.columns)
    if not cols:
        return ""
    texts, align = render.cells(frame, "plain", digits=3, **kw), render._align(frame, index)

    def table(k: int) -> str:
        return texts.iloc[:, :k].to_markdown(index=index, tablefmt="simple", disable_numparse=True,
                                             colalign=align[:k + 1] if index else align[:k])

    def fits(k: int) -> bool:
        return max(len(line) for line in table(k).splitlines()) <= WIDTH

    k = len(cols)
    if not fits(k):  # the largest k that fits, or 1
        lo, hi = 1, k - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        k = lo
    dropped = cols[k:]
    return table(k) + (f"\n(+ {len(dropped)} columns in the report: {', '.join(dropped)})" if dropped else "")


def findings_lines(r: Report) -> list[str]:
    """The findings (findings.py), one line per subject: each finding's brief form (the report has the sentences)."""
    return [line for subject, items in findings.grouped(findings.findings(r)).items()
            for line in textwrap.wrap(f"{names.plain(subject)}: " + "; ".join(names.plain(f.brief or f.text) for f in items), WIDTH,
                                      initial_indent="  ", subsequent_indent="      ", break_on_hyphens=False)]


def _listed(items) -> str:
    return ", ".join(names.plain(i) for i in items)


def _title(experiment: str, sweep: str | None) -> str:
    return f"judgebench compare: experiment {names.plain(repr(experiment))}" + (f", sweep {names.plain(repr(sweep))}" if sweep else "")


def summary(r: Report, out: Path, seconds: float) -> str:
    real = [j for j in r.judges if j not in REFERENCES and j not in {v.name for v in r.virtual}]
    virtual = [v.name for v in r.virtual] + [f"{a} = {b} here" for a, b in r.aliases.items()]
    parts = [
        _title(r.experiment, r.sweep) + f": {len(r.jobs)} job runs, datasets {_listed(r.table1)}",
        f"judges: {_listed(real) or 'none'}" + (f"; virtual: {_listed(virtual)}" if virtual
                                                   else "; No ensembles or panel (fewer than 2 non-human judges)"),
        f"reference: {r.options.reference}; bootstrap={r.options.bootstrap}; alpha={r.options.alpha}, correction={r.options.correction}",
    ]
    for dataset, t in r.table1.items():
        parts += [f"\nTable 1 ({names.plain(dataset)}): mean nDCG@10, judged only", _table(t)]
    if len(r.table2):
        cols = [c for c in HEADLINE if c in r.table2.columns]
        parts += ["\nTable 2: agreement with the humans (headline columns)", _table(r.table2[["dataset", "judge", *cols]], index=False)]
    parts += ["\nFindings:", *findings_lines(r)]
    parts += sections.console(r)  # each section's lines, in report order
    return _fit("\n".join(parts)) + "\n\n" + where(r.files, out, seconds)  # a path is never cut


def logged(run_id: str, experiment: str, superseded: list[str]) -> str:
    """The line saying where the compare run went (and which earlier runs of the selection it replaced)."""
    again = f" (replaces {len(superseded)} earlier compare run(s) of this selection: {', '.join(superseded)})" if superseded else ""
    return _fit(f"logged as MLflow run {run_id} in experiment {names.plain(repr(experiment))}{again}")


def where(files: list[Path], out: Path, seconds: float) -> str:
    """Where the report is: report.html first, then how many other files beside it."""
    html = next((f for f in files if f.name == "report.html"), None)
    if html:
        return f"full report: {html} ({len(files) - 1} more files beside it, {seconds:.1f}s)"
    return f"{len(files)} files written to {out} ({seconds:.1f}s)"


def labels_summary(r, out: Path, seconds: float) -> str:
    """The labels-only report: one row per judge with the headline agreement columns."""
    judges = list(dict.fromkeys(r.table["judge"]))
    cols = [c for c in ("kappa_graded", "kappa_ge2", "alpha_ordinal", "labelled_pairs", "failed_pairs") if c in r.table.columns]
    parts = [_title(r.experiment, None) + ", labels-only runs" + (f", sweep {names.plain(repr(r.sweep))}" if r.sweep else "")
             + f": {len(r.runs)} runs, {len(judges)} judges",
             "\nTable 2: agreement with the human labels (headline columns)",
             _table(r.table[["dataset", "judge", *cols]], index=False, integers=["labelled_pairs", "failed_pairs"])]
    parts.append("\nlabels-only runs: nDCG, tau and Tables 3-6 need systems, so they are not reported")
    if len(r.missing):
        parts.append(f"missing (dataset, judge) runs: {len(r.missing)}")
    parts += [f"problem: {names.plain(p)}" for p in r.problems]
    return _fit("\n".join(parts)) + "\n\n" + where(r.files, out, seconds)
