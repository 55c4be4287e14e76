"""LaTeX versions of the report tables (booktabs, best values bold), ready for \\input in a paper."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare import human_budget_report, names, render, self_preference_report, significance, views

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report


def tables(r: Report) -> list[tuple[str, pd.DataFrame, str, dict]]:
    """(file stem, frame, caption, render options) for every table the report has; file stems hold names only as
    names.file_part, captions hold them raw (render.latex escapes the caption)."""
    out: list[tuple[str, pd.DataFrame, str, dict]] = []
    for d, t in r.table1.items():
        out.append((f"table1_{names.file_part(d)}", t, f"Mean nDCG@10 (judged only) on {d}; best per column in bold.",
                    {"best": [c for c in t.columns if c != "type"]}))
    if len(r.table2):
        for suffix, title, frame, integers in views.table2_blocks(r.table2):
            against = f" (human reference: {r.options.reference})" if "reference" in integers else ""
            out.append((f"table2{suffix}", frame, f"Per judge: {title}{against}.",
                        {"index": False, "integers": [c for c in integers if c != "reference"]}))
    for d, m in significance.oracle_matrix(r.oracle_tests, r.options.alpha, r.judges).items() if len(r.oracle_tests) else ():
        out.append((f"ttests_oracles_{names.file_part(d)}", m, f"Paired t-tests between oracle rankers on {d} (p raw / p Holm, * significant).", {}))
    if len(r.agreement_counts):
        out.append(("significance_agreement", r.agreement_counts, "Pairwise significance decisions, judge vs human.",
                    {"index": False, "integers": list(significance.COUNTS[3:])}))
    if len(r.bias):
        out.append(("ranker_bias", views.bias_view(r), "Ranker bias per judge.", {"index": False, "digits": 3}))
    out += self_preference_report.latex_tables(r)
    if len(r.ci_means):
        for d, c in views.confidence_tables(r).items():
            out.append((f"confidence_{names.file_part(d)}", c, f"Mean nDCG@10 with {r.options.level:.0%} bootstrap intervals on {d}.", {}))
        if len(r.ci_tau):
            out.append(("tau_intervals", views.tau_intervals(r), "Kendall's tau with bootstrap intervals.", {"index": False}))
    if len(r.content_summary):
        out.append(("content_bias", r.content_summary, "Judge labels on original vs rewritten text.",
                    {"index": False, "integers": ["human", "pairs"], "digits": 3}))
    if len(r.calibration):
        out += human_budget_report.latex_tables(r.calibration)
    return out


def write(r: Report, out: Path) -> list[Path]:
    files = []
    for stem, frame, caption, kw in tables(r):
        path = out / f"{stem}.tex"
        path.write_text(render.latex(frame, caption, f"tab:{stem.replace('_', '-')}", **kw), encoding="utf-8")
        files.append(path)
    return files
