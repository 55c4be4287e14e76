"""One part of the compare report, whole: what it computes and how it reads in every output.

A report is an ordered list of ``Section`` objects (``compare/sections/__init__.py``, ``SECTIONS``). Each section says,
for one analysis, every place it appears: its Markdown blocks (report.md, and report.html, which is rendered from
report.md), its LaTeX tables, its CSV files, its figures, its terminal lines, its findings and its compare-run
metrics. Adding an analysis is one new module under ``compare/sections/`` and one line in ``SECTIONS``;
``report.write`` walks the list once per format (the labels-only report walks compare/sections/labels_only.py's).

``report.build`` gathers only the shared inputs (the collected job runs, the per-query frame, the labels, Tables 1
and 2, the human references, the run files, the problems met); every analysis is computed by its section's
``compute``, called once per report by ``sections.compute`` in ``SECTIONS`` order. ``compute`` returns its results
by name (``{"bias": frame}``); they are kept in ``Report.results`` and read back as attributes of the Report
(``report.bias``, for the renderers and findings that read them) or with ``self.result(report)``. A new analysis
adds a section, not a field of the Report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from judgebench.compare.base.findings import Finding
    from judgebench.compare.base.report_model import Report

LatexTable = tuple[str, pd.DataFrame, str, dict]  # (file stem, frame, caption, render.latex options)


def latex_table(stem: str, frame: pd.DataFrame | None, caption: str, **options) -> list[LatexTable]:
    """A section's one .tex table of ``frame``, with these render.latex ``options``; none when ``frame`` is None or
    empty (a section writes no empty table)."""
    return [(stem, frame, caption, options)] if frame is not None and len(frame) else []


class Section:
    """The protocol, with empty defaults: a section overrides only the outputs it has."""

    name: str = ""

    def compute(self, r: Report) -> Mapping[str, Any]:
        """The section's own numbers from the shared inputs (the Report ``report.build`` made), by result name: each
        name becomes readable as ``r.<name>`` (names are unique across the report). Nothing, for a section that only
        presents the shared inputs."""
        return {}

    def result(self, r: Report, name: str | None = None) -> Any:
        """The result ``name`` (default: the section's own name) that ``compute`` gave for this report (None when it
        gave none, or for a report built by hand without it)."""
        return getattr(r, "results", {}).get(name or self.name)

    def nonempty_result(self, r: Report, name: str | None = None) -> pd.DataFrame | None:
        """The result ``name`` when it is a table with rows, else None: a section whose table is empty writes nothing
        in any output."""
        table = self.result(r, name)
        return table if table is not None and len(table) else None

    def markdown(self, r: Report) -> list[str]:
        """Markdown blocks, joined by newlines into report.md (and report.html)."""
        return []

    def latex(self, r: Report) -> list[LatexTable]:
        """The .tex tables: (file stem, frame, caption, render.latex options)."""
        return []

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        """The CSV files: (file stem, frame, whether the index is written). An empty frame is written only when it is
        listed here anyway (a section decides)."""
        return []

    def files(self, r: Report, out: Path) -> list[Path]:
        """Files of the section's own that are written whatever ``format=`` says (the planner's plan, templates and
        sheets); returns their paths."""
        return []

    def figures(self, r: Report, out: Path) -> list[Path]:
        """Draw the section's figures into ``out``; returns their paths (report.md links them in this order)."""
        return []

    def captions(self) -> dict[str, str]:
        """{figure file name: caption} for the report's Figures section."""
        return {}

    def console(self, r: Report) -> list[str]:
        """Lines for the terminal summary (names already through names.plain)."""
        return []

    def findings(self, r: Report) -> Iterable[Finding]:
        """Sentences for the findings that open every output (compare/base/findings.py): the one way a finding is
        made; ``compare/sections``' ``findings`` gathers every section's (FINDINGS_FIRST first, then in list order)."""
        return []

    def compare_run_metrics(self, r: Report) -> Mapping[str, float]:
        """The section's numbers as MLflow metrics of the compare run (``report.log_compare_run`` logs every section's),
        by metric key ``name.dataset.judge`` (names through names.file_part). None by default."""
        return {}
