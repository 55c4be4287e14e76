"""Every finding in full, judge by judge, lower down the report: the panel at its top
(compare/renderers/findings_panel.py) condenses a kind held by many judges into a sentence, a line per verdict or a
ranked table, and links here."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from judgebench.compare.base.section import Section
from judgebench.compare.renderers.markdown import findings_detail

if TYPE_CHECKING:
    from judgebench.compare.base.findings import Finding
    from judgebench.compare.base.report_model import Report


class FindingsDetail(Section):
    name = "findings_detail"

    def __init__(self, found: Callable[[Report], list[Finding]]):
        """``found``: the report's findings, from every section (compare/sections/__init__.py's ``findings``)."""
        self.found = found

    def markdown(self, r: Report) -> list[str]:
        return findings_detail(self.found(r), r.table2)
