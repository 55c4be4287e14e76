"""One part of the compare report, whole: what it computes and how it reads in every output.

A report is an ordered list of ``Section`` objects (``compare/sections/__init__.py``, ``SECTIONS``). Each section says,
for one analysis, every place it appears: its Markdown blocks (report.md, and report.html, which is rendered from
report.md), its LaTeX tables, its CSV files, its figures, its terminal lines and its findings. Adding an analysis is one new module
under ``compare/sections/`` and one line in ``SECTIONS``; ``report.write`` walks the list once per format.

A section that needs numbers ``report.build`` does not already gather computes them in ``compute`` (called once, after
build, with the finished Report); its result is kept in ``Report.results[name]`` and handed to its renderers through
``result``. The sections moved from the former flat renderers read the Report's own fields and compute nothing.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    from judgebench.compare.findings import Finding
    from judgebench.compare.report_model import Report

LatexTable = tuple[str, pd.DataFrame, str, dict]  # (file stem, frame, caption, render.latex options)


class Section:
    """The protocol, with empty defaults: a section overrides only the outputs it has."""

    name: str = ""

    def compute(self, r: Report) -> Any:
        """The section's own numbers from the collected runs (the Report), or None when it reads the Report's fields."""
        return None

    def result(self, r: Report) -> Any:
        """What ``compute`` returned for this report (None when it computed nothing, or for a report built by hand)."""
        return getattr(r, "results", {}).get(self.name)

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
        """Sentences for the findings that open every output (compare/findings.py; a section that overrides this is
        appended to ``findings.PRODUCERS`` by ``compare/sections``, after the producers listed there)."""
        return []
