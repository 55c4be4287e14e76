"""Markdown pieces the report's sections share (compare/sections builds report.md from them): the title, the findings
block, names in running text, the reference's wording, the few-queries warning.

Every name in the prose (datasets, judges, systems, the experiment, problems that quote them) goes through
names.markdown; the tables through render.markdown, which escapes every cell.
"""

from __future__ import annotations

from judgebench.compare.base import findings, names
from judgebench.metrics.designs import MIN_QUERIES

REFERENCE_TEXT = {
    "human_judged": "per judge, the human labels of the pairs that judge labelled, normalised as its labels are: "
    "a failed call leaves the same pair out of both sides",
    "human_labelset": "the human labels of the whole label set, normalised as a judge's labels are: "
    "what a perfect judge scores",
    "human": "all human qrels: the paper's convention; judges are normalised on the label set only",
}


def listed(items) -> str:
    """Names as a Markdown list in running text: "a, b, c"."""
    return ", ".join(names.markdown(i) for i in items)


def report_title(experiment: str, sweep: str | None, what: str = "") -> str:
    """The report's first line: ``# judgebench compare: experiment 'NAME'[, WHAT][, sweep 'ID']``."""
    return f"# judgebench compare: experiment {names.markdown(quoted(experiment))}{what}" + (
        f", sweep {names.markdown(quoted(sweep))}" if sweep else ""
    )


def quoted(name: str) -> str:
    """``'NAME'`` as written: ``repr`` would double each backslash (``a\\b`` shown as ``a\\\\b``); the renderers'
    escaping (``names``) already makes control characters visible."""
    return f"'{name}'"


FINDINGS_TITLE = "Findings"


DETAIL_TITLE = "Findings per judge"
PANEL_END = "Every finding in full, judge by judge:"  # the panel's last paragraph (html.py ends the panel after it)


def _said(f: findings.Finding, text: str | None = None) -> str:
    text = names.markdown(text if text is not None else f.text)
    return f"**{text}**" if f.alert else text


def findings_by_subject(found: list[findings.Finding]) -> list[str]:
    """One bullet list per (dataset, judge), the selection-wide ones first; an alert in bold."""
    parts = []
    for subject, items in findings.grouped(found).items():
        parts.append(f"\n**{names.markdown(subject)}**\n")
        parts += [f"- {_said(f)}" for f in items]
    return parts


def findings_section(found: list[findings.Finding], table2=None) -> list[str]:
    """The findings as Markdown: by subject where the report is small; by kind (findings_panel.py) where a kind holds
    more subjects than read one by one, each kind a sentence, a line per verdict or a compact ranked table, and a
    link to every finding in full (the section "Findings per judge", :func:`findings_detail`)."""
    from judgebench.compare.renderers import findings_panel

    parts = [f"\n## {FINDINGS_TITLE}\n"]
    kinds = findings_panel.kinds(found, table2)
    if not any(k.condensed for k in kinds):
        return parts + findings_by_subject(found)
    for k in kinds:
        parts.append(f"\n**{names.markdown(k.topic)}**\n")
        parts += [f"- {names.markdown(f.subject)}: {_said(f)}" if f.judge else f"- {_said(f)}" for f in k.sentences]
        if k.common:
            parts.append(f"- all {k.count} judges: {_said(k.common)}")
        parts += [
            f"- {_said(items[0], brief)}: {names.markdown(findings_panel.subjects(items))}"
            for brief, items in k.verdicts.items()
        ]
        if k.rows:
            order = f"ranked by {names.markdown(k.ranked_by)}, best first" if k.ranked_by else "alerts first"
            shown = (
                (
                    f"the top {len(k.rows) - len(k.rows) // 2} and the bottom {len(k.rows) // 2} of "
                    f"{len(k.rows) + k.hidden} judges, "
                )
                if k.hidden
                else ""
            )
            parts += [
                f"\n{shown}{order}:\n",
                "| judge | finding |",
                "|---|---|",
                *(f"| {names.markdown(f.subject)} | {_said(f, f.brief or f.text)} |" for f in k.rows),
            ]
    parts.append(f"\n{PANEL_END} [{DETAIL_TITLE}](#{DETAIL_TITLE.lower().replace(' ', '-')}).\n")
    return parts


def findings_detail(found: list[findings.Finding], table2=None) -> list[str]:
    """Every finding in full, by subject, lower down the report: only where the panel condensed some."""
    from judgebench.compare.renderers import findings_panel

    if not any(k.condensed for k in findings_panel.kinds(found, table2)):
        return []
    return [f"\n## {DETAIL_TITLE}\n", *findings_by_subject(found)]


# Under every tau table: what each column measures (docs/protocol.md, "Ordering agreement").
QUERY_TAU_NOTE = (
    "tau_all / tau_oracles: Kendall's tau-b of the mean orderings, a point estimate (no interval covers it: "
    "docs/protocol.md#calibration). query_tau: the per-query pooled tau-b, how often query by query the judge "
    "orders two systems as the humans do, with its delta-method t interval over queries (coverage shown in "
    "benchmarks/calibration.py); oracles verdict: its t test of 0, Holm-adjusted over the report's judges"
)


def few_queries_warning(frame, dataset: str) -> str | None:
    """The warning beside an interval over fewer than designs.MIN_QUERIES queries: benchmarks/calibration.py
    measures some intervals below their 95 % there (PPI, the planner's designs, the per-query tau: flagged rows)."""
    rows = frame[frame["dataset"] == dataset] if "queries" in frame else frame.iloc[:0]
    n = int(rows["queries"].max()) if len(rows) else MIN_QUERIES
    if n < MIN_QUERIES:
        return (
            f"warning: {dataset} has {n} queries (fewer than {MIN_QUERIES}): intervals over so few queries "
            "can cover less than their nominal level in benchmarks/calibration.py (flagged rows there); read "
            "them as rough"
        )
    return None
