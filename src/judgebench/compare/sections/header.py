"""The report's opening: its title, the findings (what the report found comes first; report.html makes it a panel),
the selection in one sentence and the human reference every statistic is measured against."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.compare import findings, names
from judgebench.compare.artifacts import REFERENCES
from judgebench.compare.renderers.markdown import REFERENCE_TEXT, findings_section, listed, report_title
from judgebench.compare.section import Section

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report


class Header(Section):
    name = "header"

    def markdown(self, r: Report) -> list[str]:
        o = r.options
        real = [j for j in r.judges if j not in REFERENCES and j not in {v.name for v in r.virtual}]
        versions = names.markdown("; ".join(f"{k} {', '.join(v)}" for k, v in r.versions.items()))
        return [
            report_title(r.experiment, r.sweep),
            *findings_section(findings.findings(r)),
            "",
            f"{len(r.jobs)} job runs; datasets: {listed(r.table1)}; judges: {listed(real) or 'none'}"
            f"{'; virtual judges: ' + listed(v.name for v in r.virtual) if r.virtual else ''}. "
            f"alpha={o.alpha}, correction={o.correction}, bootstrap={o.bootstrap} resamples (seed {o.seed}, {o.level:.0%} percentile).",
            "",
            f"Reference for every judge-vs-human statistic: **{o.reference}** ({REFERENCE_TEXT[o.reference]}). Runs read: {versions}.",
        ]
