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
    return (f"# judgebench compare: experiment {names.markdown(quoted(experiment))}{what}"
            + (f", sweep {names.markdown(quoted(sweep))}" if sweep else ""))


def quoted(name: str) -> str:
    """``'NAME'`` as written: ``repr`` would double each backslash (``a\\b`` shown as ``a\\\\b``); the renderers'
    escaping (``names``) already makes control characters visible."""
    return f"'{name}'"


FINDINGS_TITLE = "Findings"


def findings_section(found: list[findings.Finding]) -> list[str]:
    """The findings as Markdown: one bullet list per (dataset, judge), the selection-wide ones first; an alert in bold."""
    parts = [f"\n## {FINDINGS_TITLE}\n"]
    for subject, items in findings.grouped(found).items():
        parts.append(f"\n**{names.markdown(subject)}**\n")
        parts += [f"- {'**' + names.markdown(f.text) + '**' if f.alert else names.markdown(f.text)}" for f in items]
    return parts


# Under every tau interval: the percentile bootstrap of Kendall's tau over queries is not calibrated
# (benchmarks/calibration.py, ten systems: 0.98-1.00 at 43-54 queries for a nominal 95 %, 0.76 at 12 queries with
# noise that grows with the judge's error).
TAU_INTERVAL_NOTE = ("note: these tau intervals (percentile bootstrap over queries) are not calibrated: in "
                     "benchmarks/calibration.py a nominal 95 % interval covered 98-100 % at 43-54 queries (too wide) "
                     "and 76 % at 12 queries; read them as rough")


def few_queries_warning(frame, dataset: str) -> str | None:
    """The warning beside an interval over fewer than designs.MIN_QUERIES queries: benchmarks/calibration.py
    measures Table 6's percentile intervals and the bootstrap-t below their 95 % there (flagged rows)."""
    rows = frame[frame["dataset"] == dataset] if "queries" in frame else frame.iloc[:0]
    n = int(rows["queries"].max()) if len(rows) else MIN_QUERIES
    if n < MIN_QUERIES:
        return (f"warning: {dataset} has {n} queries (fewer than {MIN_QUERIES}): its intervals cover less than their "
                "nominal level in benchmarks/calibration.py (flagged rows there); read them as rough")
    return None
