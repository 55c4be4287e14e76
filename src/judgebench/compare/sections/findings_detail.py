"""Every finding in full, judge by judge, lower down the report: the panel at its top (compare/renderers/findings_panel.py)
condenses a kind held by many judges into a sentence, a line per verdict or a ranked table, and links here."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.compare.base import findings
from judgebench.compare.renderers.markdown import findings_detail
from judgebench.compare.base.section import Section

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report


class FindingsDetail(Section):
    name = "findings_detail"

    def markdown(self, r: Report) -> list[str]:
        return findings_detail(findings.findings(r), r.table2)
