"""What a compare report found, as sentences: the first thing report.html, report.md and the terminal show.

One list of ``Finding`` records, given by the sections (each section's ``findings``, gathered by
``compare/sections/__init__.py``'s ``findings`` in its ``FINDINGS_FIRST`` order) and rendered by every output:
``console.summary`` (plain lines), the report's header section (compare/sections/header.py: "## Findings") and
``html`` (the panel above the contents). An analysis that wants its result up front overrides its section's
``findings`` (docs/architecture.md, "Add a finding"). A record's text is plain: names in it are raw and each renderer
escapes the whole sentence. This module holds the record, the number formats the sentences share and their order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

GRID = ""  # dataset and judge of a finding about the whole selection (missing or running cells)


@dataclass(frozen=True)
class Finding:
    """One sentence about one (dataset, judge), or about the whole selection (both ``GRID``).

    ``topic`` names what it is about (inversion, oracle order, label agreement, self-preference, calibration,
    grid); ``alert`` marks what a reader must not miss (an inversion, cells without a finished run); ``brief`` is
    the few words the terminal prints (the text when empty)."""

    topic: str
    text: str
    dataset: str = GRID
    judge: str = GRID
    alert: bool = False
    brief: str = ""

    @property
    def subject(self) -> str:
        return f"{self.dataset} / {self.judge}" if self.judge else (self.dataset or "this selection")


def known(*values) -> bool:
    return all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values)


def number(v: float, digits: int = 2) -> str:
    return f"{v:.{digits}f}" if known(v) else "missing"


def percent(v: float) -> str:
    return f"{v:.0%}" if known(v) else "missing"


def ordered(found: list[Finding], table2) -> list[Finding]:
    """The findings the sections gave, the selection-wide ones first, then per (dataset, judge) in report order
    (Table 2's rows); each subject's sentences keep the order the sections gave them in."""
    order = {
        (d, j): n for n, (d, j) in enumerate(dict.fromkeys(zip(table2.get("dataset", []), table2.get("judge", []))))
    }
    return sorted(found, key=lambda f: (f.judge != GRID, order.get((f.dataset, f.judge), len(order))))


def grouped(found: list[Finding]) -> dict[str, list[Finding]]:
    """{subject: its findings} in order: what each renderer shows under one heading per (dataset, judge)."""
    out: dict[str, list[Finding]] = {}
    for f in found:
        out.setdefault(f.subject, []).append(f)
    return out
