"""The printed report (also report.md): every table in reading order, then what is missing.

Every name in the prose (datasets, judges, systems, the experiment, problems that quote them) goes through
names.markdown; the tables through render.markdown, which escapes every cell.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgebench.compare import (budget_plan_report, discrimination_report, findings, human_budget_report, names, render,
                                self_preference_report, significance, views)
from judgebench.compare.artifacts import REFERENCES
from judgebench.metrics.designs import MIN_QUERIES

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report


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


def document(r: Report) -> str:
    """The whole report as one Markdown text (report.md, and report.html's source)."""
    return "\n".join(sections(r)) + "\n"


FINDINGS_TITLE = "Findings"


def findings_section(found: list[findings.Finding]) -> list[str]:
    """The findings as Markdown: one bullet list per (dataset, judge), the selection-wide ones first; an alert in bold."""
    parts = [f"\n## {FINDINGS_TITLE}\n"]
    for subject, items in findings.grouped(found).items():
        parts.append(f"\n**{names.markdown(subject)}**\n")
        parts += [f"- {'**' + names.markdown(f.text) + '**' if f.alert else names.markdown(f.text)}" for f in items]
    return parts


def sections(r: Report) -> list[str]:
    """The report as Markdown blocks, in reading order."""
    o = r.options
    real = [j for j in r.judges if j not in REFERENCES and j not in {v.name for v in r.virtual}]
    ref = o.reference
    versions = names.markdown("; ".join(f"{k} {', '.join(v)}" for k, v in r.versions.items()))
    md = names.markdown
    head = [
        report_title(r.experiment, r.sweep),
        *findings_section(findings.findings(r)),  # what the report found opens it (report.html: the panel)
        "",
        f"{len(r.jobs)} job runs; datasets: {listed(r.table1)}; judges: {listed(real) or 'none'}"
        f"{'; virtual judges: ' + listed(v.name for v in r.virtual) if r.virtual else ''}. "
        f"alpha={o.alpha}, correction={o.correction}, bootstrap={o.bootstrap} resamples (seed {o.seed}, {o.level:.0%} percentile).",
        "",
        f"Reference for every judge-vs-human statistic: **{ref}** ({REFERENCE_TEXT[ref]}). Runs read: {versions}.",
    ]
    parts = head + ["\n## Table 1: mean nDCG@10 on judged documents (system x judge; best per column in bold)",
                    "\n`human`: all human qrels (the paper's column); `human_labelset`: the human labels of the label set "
                    "(pool ∩ qrels), the qrels a judge is scored against."]
    for dataset, t in r.table1.items():
        parts += [f"\n### {md(dataset)}\n", render.markdown(t, best=[c for c in t.columns if c != "type"])]
    if r.virtual:
        parts += ["\nVirtual judges (built from the judges' labels, no new calls; nDCG recomputed from each system's run file):"]
        parts += [f"- {md(v.describe())}" for v in r.virtual]
        for alias, same in r.aliases.items():
            parts.append(f"- {md(alias)} = {md(same)} here (same members, same rule): reported once, as {md(same)}"
                         + (" (the default panel takes one judge per non-human, non-simulated family when there are 2 or more "
                            "such families; here there are not)" if alias == "panel" and not o.panel else ""))
    else:
        parts.append(f"\nNo ensembles or panel: they need at least 2 non-human judges, found {len(real)}.")

    parts += [f"\n## Table 2: agreement with the human qrels per judge (labels: on the label set; orderings: against {ref})\n"]
    if len(r.table2):
        for _, title, frame, integers in views.table2_blocks(r.table2):
            parts += [f"\n### {title}\n", render.markdown(frame, index=False, integers=[c for c in integers if c != "reference"])]
    else:
        parts.append("(no judge other than human)")

    if len(r.oracle_tests):
        parts.append(f"\n## Table 3: paired t-tests between oracle rankers (p raw / p Holm, * = significant at alpha {o.alpha})")
        for dataset, m in significance.oracle_matrix(r.oracle_tests, o.alpha, r.judges).items():
            parts += [f"\n### {md(dataset)}\n", render.markdown(m)]

    if len(r.agreement_counts):
        parts.append(f"\n## Table 4: pairwise significance decisions, judge vs {ref} "
                     f"(alpha {o.alpha}, correction {o.correction})\n")
        parts.append("The family of each judge is the pairs of the systems that it and its reference both scored (`family`); "
                     "Holm corrects both sides over that family. Pairs of the dataset's other systems are `dropped` (counted, "
                     "listed in significance_pairs.csv).\n")
        parts.append(render.markdown(r.agreement_counts, index=False, integers=list(significance.COUNTS[3:])))
        lists = significance.pair_lists(r.agreement_pairs)
        lists = lists[lists["n"] > 0]
        parts.append("\nPairs that do not agree (all pairs with their class: significance_pairs.csv):\n")
        parts.append(render.markdown(lists, index=False, integers=["n"]) if len(lists) else "(none: every decision agrees)")

    parts += discrimination_report.markdown(r)

    if len(r.bias):
        parts.append(f"\n## Table 5: ranker bias (human columns: {ref})\n")
        parts.append("Mean rank of the LLM and oracle groups (1 = best) under the judge and under humans; inverted = the "
                     "order of the two groups flips, or an LLM system rises above every oracle under the judge only. llm_wins = share of (LLM, oracle) pairs the LLM system wins; "
                     "llm_above_oracles = LLM systems above every oracle; gap = judge minus human nDCG@10, mean per system type.\n")
        parts.append(render.markdown(views.bias_view(r, yes="INVERTED"), index=False, digits=3, strong={"inverted": "INVERTED"}))
    parts += self_preference_report.markdown(r)

    parts.append("\n## Table 6: bootstrap confidence intervals over queries")
    if len(r.ci_means):
        for dataset, c in views.confidence_tables(r).items():
            parts += [f"\n### {md(dataset)}: mean nDCG@10 [{o.level:.0%} interval]\n", render.markdown(c)]
            parts += [f"\n**{md(w)}**" for w in [few_queries_warning(r.ci_means, dataset)] if w]
        if len(r.ci_tau):
            parts += [f"\n### Kendall's tau against {ref} [interval]\n", render.markdown(views.tau_intervals(r), index=False)]
    else:
        parts.append("\nbootstrap=0: no intervals computed.")

    if len(r.calibration):
        parts += human_budget_report.markdown(r.calibration, r.calibration_summary, o)
    parts += budget_plan_report.markdown(r.budget_plan, o.level)

    parts.append("\n## Content bias (original vs rewritten text)\n")
    if r.rewritten_runs:
        parts.append(f"{r.rewritten_runs} run(s) on rewritten text views: used in this section only (Tables 1-6 compare systems "
                     "on the original texts).\n")
    if len(r.content_summary):
        parts.append(render.markdown(r.content_summary, index=False, integers=["human", "pairs"], digits=3))
    else:
        parts.append("None found: no judge runs with a rewritten text view (tag text_view != 'original') in this selection; "
                     "content-bias figures skipped.")

    if len(r.missing):
        running = set(r.running.itertuples(index=False, name=None)) if len(r.running) else set()
        parts.append(f"\n## Missing grid cells ({len(r.missing)}, no finished run; {len(running)} of them still running)\n")
        show_rw = r.missing["rewriter"].nunique() > 1 or (r.missing["rewriter"] != "none").any()
        parts += [f"- {md(d)} / {md(s)} / judge={md(j)}" + (f" / rewriter={md(w)}" if show_rw else "")
                  + (" (running)" if (d, s, j, w) in running else "") for d, s, j, w in r.missing.itertuples(index=False)]
    else:
        parts.append(f"\nNo missing grid cells: all {len(r.jobs) + r.rewritten_runs} cells have a finished run.")
    if r.problems:
        parts.append("\n## Problems reading runs\n")
        parts += [f"- {md(p)}" for p in r.problems]
    return parts


def few_queries_warning(frame, dataset: str) -> str | None:
    """The warning beside an interval over fewer than designs.MIN_QUERIES queries: benchmarks/calibration.py
    measures Table 6's percentile intervals and the bootstrap-t below their 95 % there (flagged rows)."""
    rows = frame[frame["dataset"] == dataset] if "queries" in frame else frame.iloc[:0]
    n = int(rows["queries"].max()) if len(rows) else MIN_QUERIES
    if n < MIN_QUERIES:
        return (f"warning: {dataset} has {n} queries (fewer than {MIN_QUERIES}): its intervals cover less than their "
                "nominal level in benchmarks/calibration.py (flagged rows there); read them as rough")
    return None
