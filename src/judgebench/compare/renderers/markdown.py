"""Markdown pieces the report's sections share (compare/sections builds report.md from them): the title, the findings
block, names in running text, the reference's wording, the few-queries warning.

Every name in the prose (datasets, judges, systems, the experiment, problems that quote them) goes through
names.markdown; the tables through render.markdown, which escapes every cell.
"""

from __future__ import annotations

from judgebench.compare import findings, names
from judgebench.metrics.designs import MIN_QUERIES


REFERENCE_TEXT = {
    "human_judged": "per judge, the human labels of the pairs that judge labelled, normalised as its labels are: a failed call "
                    "leaves the same pair out of both sides",
    "human_labelset": "the human labels of the whole label set, normalised as a judge's labels are: what a perfect judge scores",
    "human": "all human qrels: the paper's convention; judges are normalised on the label set only",
}


def listed(items) -> str:
    """Names as a Markdown list in running text: "a, b, c"."""
    return ", ".join(names.markdown(i) for i in items)


def report_title(experiment: str, sweep: str | None, what: str = "") -> str:
    """The report's first line: ``# judgebench compare: experiment 'NAME'[, WHAT][, sweep 'ID']``."""
    return (f"# judgebench compare: experiment {names.markdown(repr(experiment))}{what}"
            + (f", sweep {names.markdown(repr(sweep))}" if sweep else ""))


FINDINGS_TITLE = "Findings"


def findings_section(found: list[findings.Finding]) -> list[str]:
    """The findings as Markdown: one bullet list per (dataset, judge), the selection-wide ones first; an alert in bold."""
    parts = [f"\n## {FINDINGS_TITLE}\n"]
    for subject, items in findings.grouped(found).items():
        parts.append(f"\n**{names.markdown(subject)}**\n")
        parts += [f"- {'**' + names.markdown(f.text) + '**' if f.alert else names.markdown(f.text)}" for f in items]
    return parts


# Under every tau table: what each column measures (docs/protocol.md, "Ordering agreement").
QUERY_TAU_NOTE = ("tau_all / tau_oracles: Kendall's tau-b of the mean orderings, a point estimate (no interval covers it: "
                  "docs/protocol.md#calibration). query_tau: the per-query pooled tau-b, how often query by query the judge "
                  "orders two systems as the humans do, with its delta-method t interval over queries (coverage shown in "
                  "benchmarks/calibration.py); oracles verdict: its t test of 0, Holm-adjusted over the report's judges")


def few_queries_warning(frame, dataset: str) -> str | None:
    """The warning beside an interval over fewer than designs.MIN_QUERIES queries: benchmarks/calibration.py
    measures some intervals below their 95 % there (PPI, the planner's designs, the per-query tau: flagged rows)."""
    rows = frame[frame["dataset"] == dataset] if "queries" in frame else frame.iloc[:0]
    n = int(rows["queries"].max()) if len(rows) else MIN_QUERIES
    if n < MIN_QUERIES:
        return (f"warning: {dataset} has {n} queries (fewer than {MIN_QUERIES}): intervals over so few queries "
                "can cover less than their nominal level in benchmarks/calibration.py (flagged rows there); read them as rough")
    return None
