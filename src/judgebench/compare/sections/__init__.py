"""The compare report as an ordered list of sections (compare/base/section.py): ``SECTIONS`` is the reading order of
report.md and report.html, of the Figures section and of the terminal lines after the findings.

Adding an analysis: one module in this package with a ``Section`` subclass, and one line in ``SECTIONS``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import findings as found_order
from judgebench.compare.base.findings import Finding
from judgebench.compare.base.section import LatexTable, Section
from judgebench.compare.renderers import figures as figure_files
from judgebench.compare.sections.bias_and_intervals import ConfidenceIntervals, RankerBias
from judgebench.compare.sections.budget_plan import BudgetPlan
from judgebench.compare.sections.calibration import Calibration
from judgebench.compare.sections.discrimination import Discrimination
from judgebench.compare.sections.family_bias import FamilyBias
from judgebench.compare.sections.findings_detail import FindingsDetail
from judgebench.compare.sections.grid_state import ContentBias, GridState
from judgebench.compare.sections.header import Header
from judgebench.compare.sections.label_entropy import LabelEntropy
from judgebench.compare.sections.query_gaps import QueryGaps
from judgebench.compare.sections.self_preference import SelfPreference
from judgebench.compare.sections.significance_tests import DecisionAgreement, OracleTests
from judgebench.compare.sections.table1 import Table1
from judgebench.compare.sections.table2 import Table2

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

# The sections whose findings open the report, in this order (the grid's state, then per judge: inversion, ordering,
# agreement, self-preference, calibration; the discrimination answer per dataset); the other sections' findings follow
# in SECTIONS order.
FINDINGS_FIRST = (
    "grid_state",
    "ranker_bias",
    "confidence_intervals",
    "table2",
    "self_preference",
    "calibration",
    "discrimination",
)


def findings(r: Report) -> list[Finding]:
    """Every section's findings (``Section.findings``: the one way a finding is made), the sections in FINDINGS_FIRST
    first, in its order, then the others in SECTIONS order; the selection-wide ones lead, then per (dataset, judge) in
    report order (base/findings.ordered)."""
    rank = {name: n for n, name in enumerate(FINDINGS_FIRST)}
    producing = sorted(SECTIONS, key=lambda s: rank.get(s.name, len(rank)))
    return found_order.ordered([f for s in producing for f in s.findings(r)], r.table2)


SECTIONS: list[Section] = [
    Header(findings),
    Table1(),
    Table2(),
    LabelEntropy(),
    QueryGaps(),
    OracleTests(),
    DecisionAgreement(),
    Discrimination(),
    RankerBias(),
    SelfPreference(),
    FamilyBias(),
    ConfidenceIntervals(),
    Calibration(),
    BudgetPlan(),
    ContentBias(),
    GridState(),
    FindingsDetail(findings),
]


def compute(r: Report, sections: list[Section] | None = None) -> None:
    """Each section's own numbers into ``r.results``, in list order (after report.build gathered the shared inputs).
    Two sections giving one name is a programming error: the second would hide the first's result."""
    for s in sections or SECTIONS:
        for name, value in s.compute(r).items():
            if name in r.results:
                raise ValueError(f"section {s.name!r} gives the result {name!r} that another section gave")
            r.results[name] = value


# Each walk below goes over ``parts``: the grid report's SECTIONS by default, or another report's list (the labels-only
# report's, compare/sections/labels_only.py).


def markdown(r: Report, parts: list[Section] | None = None) -> str:
    """The whole report as one Markdown text (report.md, and report.html's source), the figures' links aside."""
    return "\n".join(block for s in parts or SECTIONS for block in s.markdown(r)) + "\n"


def latex(r: Report, parts: list[Section] | None = None) -> list[LatexTable]:
    return [t for s in parts or SECTIONS for t in s.latex(r)]


def csv(r: Report, parts: list[Section] | None = None) -> list[tuple[str, pd.DataFrame, bool]]:
    return [f for s in parts or SECTIONS for f in s.csv(r)]


def files(r: Report, out: Path, parts: list[Section] | None = None) -> list[Path]:
    return [p for s in parts or SECTIONS for p in s.files(r, out)]


def figures(r: Report, out: Path, parts: list[Section] | None = None) -> list[Path]:
    return [p for s in parts or SECTIONS for p in s.figures(r, out)]


def captions(parts: list[Section] | None = None) -> dict[str, str]:
    return {**figure_files.CAPTIONS, **{k: v for s in parts or SECTIONS for k, v in s.captions().items()}}


def compare_run_metrics(r: Report, parts: list[Section] | None = None) -> dict[str, float]:
    """The compare run's MLflow metrics: every section's own (``Section.compare_run_metrics``), in list order."""
    return {k: v for s in parts or SECTIONS for k, v in s.compare_run_metrics(r).items()}


def console_lines(r: Report, parts: list[Section]) -> list[str]:
    """The terminal lines of a report without findings (the labels-only one): each section's, in list order."""
    return [line for s in parts for line in s.console(r)]


FINDINGS_AFTER = "table2"  # the terminal shows the headline tables first, then what they found, then the other sections


def console(r: Report, findings_lines: list[str]) -> list[str]:
    """The terminal summary's lines: each section's in list order, with ``findings_lines`` (console.findings_lines: the
    findings in their brief form) after the section named FINDINGS_AFTER."""
    lines: list[str] = []
    for s in SECTIONS:
        lines += s.console(r)
        if s.name == FINDINGS_AFTER:
            lines += ["\nFindings:", *findings_lines]
    return lines
