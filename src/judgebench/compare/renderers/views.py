"""Presentation frames shared by the Markdown and LaTeX outputs (intervals as text, the bias flag spelled out)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import columns
from judgebench.compare.renderers import render

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report


def _interval(mean: float, lo: float, hi: float) -> str:
    if any(isinstance(v, float) and math.isnan(v) for v in (mean, lo, hi)):
        return render.MISSING
    return f"{mean:.3f} [{lo:.3f}, {hi:.3f}]"


def confidence_tables(report: Report) -> dict[str, pd.DataFrame]:
    """Per dataset, system x judge cells "mean [lo, hi]"."""
    out = {}
    for dataset, table in report.table1.items():
        ci = report.ci_means[report.ci_means["dataset"] == dataset]
        grid = ci.assign(cell=[_interval(m, lo, hi) for m, lo, hi in zip(ci["mean"], ci["lo"], ci["hi"])])
        wide = grid.pivot(index="system", columns="judge", values="cell").reindex(
            index=table.index, columns=report.judges
        )
        wide.columns.name = None
        out[dataset] = wide.fillna(render.MISSING)
    return out


def _point(v: float) -> str:
    return render.MISSING if isinstance(v, float) and math.isnan(v) else f"{v:.3f}"


def tau_intervals(report: Report) -> pd.DataFrame:
    """Per dataset and judge: tau of the means (points) over all systems and over oracles, and the per-query tau
    "value [lo, hi]" of each, with the oracles verdict."""
    c = report.ci_tau
    return pd.DataFrame(
        {
            "dataset": c["dataset"],
            "judge": c["judge"],
            "tau_all (means)": [_point(v) for v in c["tau_all"]],
            "query_tau_all [CI]": [
                _interval(*v) for v in zip(c["query_tau_all"], c["query_tau_all_lo"], c["query_tau_all_hi"])
            ],
            "tau_oracles (means)": [_point(v) for v in c["tau_oracles"]],
            "query_tau_oracles [CI]": [
                _interval(*v) for v in zip(c["query_tau_oracles"], c["query_tau_oracles_lo"], c["query_tau_oracles_hi"])
            ],
            "oracles verdict (Holm p)": [
                f"{v} ({p:.3g})" if v else render.MISSING
                for v, p in zip(c["oracles_verdict"], c["query_tau_oracles_p_holm"])
            ],
        }
    )


def bias_view(report: Report, yes: str = "yes") -> pd.DataFrame:
    """The bias table with the inversion spelled out (n/a when there are no LLM or no oracle systems)."""
    b = report.bias.copy()
    b["inverted"] = b["inverted"].map(lambda v: "n/a" if v is None or v != v else (yes if v else "no"))
    return b


def table2_blocks(t2: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame, list[str]]]:
    """Table 2 in reading-sized parts: (file suffix, title, frame, integer columns) per block of
    columns.BLOCKS that the frame has (a labels-only report has no ordering columns)."""
    out = []
    for suffix, title, stats, counts in columns.BLOCKS:
        if set(stats) <= set(t2.columns):
            extra = [c for c in counts if c in t2.columns]
            out.append((suffix, title, t2[["dataset", "judge", *stats, *extra]], extra))
    return out
