"""The self-preference and PRP order-bias section of the compare report: words, tables, heatmap, metrics.

The numbers come from compare/analyses/self_preference.py and compare/analyses/order_bias.py; this module only
presents them
(report.md / report.html, LaTeX, the judge-family x ranker-family heatmap, the compare run's MLflow metrics).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.compare.analyses import order_bias  # noqa: E402
from judgebench.compare.analyses.self_preference import SELF, analyse, findings  # noqa: E402
from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding, known
from judgebench.compare.base.resampling import Resampling
from judgebench.compare.base.section import LatexTable, Section  # noqa: E402
from judgebench.compare.renderers import render
from judgebench.compare.renderers.figure_style import plain_text, plot_names, save  # noqa: E402
from judgebench.metrics.designs import MIN_QUERIES  # noqa: E402

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

FIGURE = "figure_family_gaps.png"
CAPTION = "mean nDCG@10 gap (judge minus its human reference) per judge family and ranker family"
# the analysis's columns but the reference (said in the heading), with the Holm p and the verdict it adds
SELF_SHOWN = [*(c for c in SELF if c != "reference"), "p_holm", "verdict"]


def markdown(r: Report) -> list[str]:
    """The section's Markdown blocks (always present: it says so when there is nothing to measure)."""
    o = r.options
    parts = [
        "\n## Self-preference: does a judge favour rankers of its own family? (reference: "
        f"{names.markdown(o.reference)})\n",
        "Gap = judge nDCG@10 minus the judge's human reference, per system and query. self_preference = mean gap on "
        "the judge's own family's systems minus mean gap on the other families' LLM systems; interaction (two "
        "judges A, "
        "B of families a, b) = (gap_A on a - gap_A on b) - (gap_B on a - gap_B on b). Intervals: "
        f"{o.level:.0%} symmetric paired bootstrap-t over queries ({o.bootstrap} resamples, seed {o.seed}); "
        "p: its two-sided test of 0 on the same resamples, p_holm: Holm-adjusted over the rows; verdict: a "
        "direction only "
        f"where the interval leaves out 0 and p_holm < {o.alpha:g} (docs/protocol.md).\n",
    ]
    parts += [f"- {names.markdown(line)}" for line in findings(r.self_preference, r.jobs)]
    sp, inter = r.self_preference["self_preference"], r.self_preference["interaction"]
    short = sp[sp["queries"].astype(float) < MIN_QUERIES] if len(sp) else sp
    parts += (
        [
            f"\n**warning: {names.markdown(d)} has {int(q)} queries (fewer than {MIN_QUERIES}): the bootstrap-t "
            "may cover less than "
            "its nominal level there in benchmarks/calibration.py (flagged rows); read it as rough**"
            for d, q in short.groupby("dataset")["queries"].max().items()
        ]
        if len(short)
        else []
    )
    if len(sp):
        parts += ["", render.markdown(sp[SELF_SHOWN], index=False, integers=["queries"], digits=4)]
    if len(inter):
        parts += [
            "\nInteraction of two judges of two families (positive: each judge favours its own family):\n",
            render.markdown(inter.drop(columns=["reference"]), index=False, integers=["queries"], digits=4),
        ]
    gaps = r.self_preference["gaps"]
    if len(gaps):
        parts.append("\nMean gap per judge family (rows) and ranker family (columns):\n")
        for dataset, matrix in gap_matrices(gaps).items():
            parts += [f"\n### {names.markdown(dataset)}\n", render.markdown(matrix, digits=4)]
    parts.append("\n## Order bias of the pairwise (PRP) rankers\n")
    if len(r.order_bias):
        parts.append(
            "order_consistency: share of pairs whose two answers (both orders) prefer the same passage; "
            "first_position: share of answers naming the passage shown first (0.5: no position bias).\n"
        )
        parts.append(render.markdown(r.order_bias.drop(columns=["reading"]), index=False, integers=["pairs"], digits=3))
        parts += [
            f"- {names.markdown(row.dataset)} / {names.markdown(row.system)}: {names.markdown(row.reading)}."
            for row in r.order_bias.itertuples(index=False)
        ]
    else:
        parts.append("No PRP ranking in this selection logged its order statistics (prp_order_consistency).")
    return parts


def gap_matrices(gaps: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per dataset: judge families x ranker families, mean gaps."""
    out = {}
    for dataset, g in gaps.groupby("dataset", sort=False):
        m = g.pivot(index="judge_family", columns="ranker_family", values="mean_gap")
        m = m.reindex(index=list(dict.fromkeys(g["judge_family"])), columns=list(dict.fromkeys(g["ranker_family"])))
        m.index.name, m.columns.name = "judge family", None
        out[dataset] = m
    return out


def latex_tables(r: Report) -> list[tuple[str, pd.DataFrame, str, dict]]:
    out = []
    if len(r.self_preference["self_preference"]):
        out.append(
            (
                "self_preference",
                r.self_preference["self_preference"][SELF_SHOWN],
                f"Self-preference per judge ({r.options.level:.0%} symmetric bootstrap-t interval and p).",
                {"index": False, "integers": ["queries"], "digits": 3},
            )
        )
    if len(r.self_preference["interaction"]):
        out.append(
            (
                "family_interaction",
                r.self_preference["interaction"].drop(columns=["reference"]),
                "Judge family x ranker family interaction.",
                {"index": False, "integers": ["queries"], "digits": 3},
            )
        )
    if len(r.order_bias):
        out.append(
            (
                "prp_order_bias",
                r.order_bias.drop(columns=["reading"]),
                "Order bias of the PRP rankers.",
                {"index": False, "integers": ["pairs"], "digits": 3},
            )
        )
    return out


def csv_frames(r: Report) -> list[tuple[str, pd.DataFrame]]:
    return [
        ("self_preference", r.self_preference["self_preference"]),
        ("family_interaction", r.self_preference["interaction"]),
        ("family_gaps", r.self_preference["gaps"]),
        ("prp_order_bias", r.order_bias),
    ]


@plain_text
def heatmap(gaps: pd.DataFrame, path: Path) -> Path:
    """Judge family x ranker family mean gaps, one panel per dataset, each cell annotated (red: overrated)."""
    matrices = gap_matrices(gaps)
    width = max(5.0, 1.3 * max(m.shape[1] for m in matrices.values()) + 2.5)
    fig, axes = plt.subplots(
        1,
        len(matrices),
        figsize=(width * len(matrices), 0.7 * max(m.shape[0] for m in matrices.values()) + 2.4),
        squeeze=False,
    )
    for ax, (dataset, m) in zip(axes[0], matrices.items()):
        values = m.to_numpy(dtype=float)
        bound = max(1e-6, float(np.nanmax(np.abs(values)))) if np.isfinite(values).any() else 1.0
        im = ax.imshow(values, cmap="RdBu_r", vmin=-bound, vmax=bound, aspect="auto")
        ax.set_xticks(range(m.shape[1]), plot_names(m.columns), rotation=30, ha="right", fontsize="small")
        ax.set_yticks(range(m.shape[0]), plot_names(m.index), fontsize="small")
        ax.set_xlabel("ranker family")
        ax.set_ylabel("judge family")
        ax.set_title(f"{names.plot(dataset)}: mean gap (judge - reference)", fontsize="medium")
        for (i, j), v in np.ndenumerate(values):
            if v == v:
                ax.text(
                    j,
                    i,
                    f"{v:+.3f}",
                    ha="center",
                    va="center",
                    fontsize="x-small",
                    color="white" if abs(v) > 0.6 * bound else "black",
                )
        fig.colorbar(im, ax=ax, shrink=0.8)
    return save(fig, path)


def figures(r: Report, out: Path) -> list[Path]:
    return [heatmap(r.self_preference["gaps"], out / FIGURE)] if len(r.self_preference["gaps"]) else []


def metrics(r: Report) -> dict[str, float]:
    """The compare run's metrics: self-preference, interaction and order bias, by dataset and judge or system."""
    out: dict[str, float] = {}
    for row in r.self_preference["self_preference"].itertuples(index=False):
        out |= _with_interval("self_preference", row.self_preference, row, names.file_part(row.judge))
    for row in r.self_preference["interaction"].itertuples(index=False):
        pair = f"{names.file_part(row.judge_a)}_x_{names.file_part(row.judge_b)}"
        out |= _with_interval("family_interaction", row.interaction, row, pair)
    for row in r.order_bias.itertuples(index=False):
        out[f"prp_order_consistency.{names.file_part(row.dataset)}.{names.file_part(row.system)}"] = (
            row.order_consistency
        )
        out[f"prp_first_position.{names.file_part(row.dataset)}.{names.file_part(row.system)}"] = row.first_position
    return {k: float(v) for k, v in out.items() if v == v}


def _with_interval(name: str, value: float, row, who: str) -> dict[str, float]:
    """A statistic of one row and its interval and p as metrics: ``<name>``, ``<name>_lo``, ``<name>_hi`` and
    ``<name>_p``, each ``.<dataset>.<who>``."""
    where = f"{names.file_part(row.dataset)}.{who}"
    bounds = (("", value), ("_lo", row.lo), ("_hi", row.hi), ("_p", row.p_value))
    return {f"{name}{suffix}.{where}": v for suffix, v in bounds}


class SelfPreference(Section):
    """Does a judge favour its own family's rankers; with the PRP rankers' order bias (one table, terminal lines)."""

    name = "self_preference"

    def compute(self, r: Report) -> dict:
        o = r.options
        return {
            "self_preference": analyse(r.per_query, r.table1, r.jobs, r.refs, Resampling.from_options(o)),
            "order_bias": order_bias.order_table(r.jobs),
        }

    def markdown(self, r: Report) -> list[str]:
        return markdown(r)

    def latex(self, r: Report) -> list[LatexTable]:
        return latex_tables(r)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in csv_frames(r) if len(f)]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return figures(r, out)

    def captions(self) -> dict[str, str]:
        return {FIGURE: CAPTION}

    def compare_run_metrics(self, r: Report) -> dict[str, float]:
        return metrics(r)

    def console(self, r: Report) -> list[str]:
        return [
            f"  {names.plain(x.dataset)} / {names.plain(x.system)}: PRP order consistency "
            f"{x.order_consistency:.2f}, first position {x.first_position:.2f}"
            for x in r.order_bias.itertuples(index=False)
        ]

    def findings(self, r: Report) -> Iterable[Finding]:
        """Where a judge shares a family with rankers: the section's own verdict (the ``verdict`` column of
        compare/analyses/self_preference.py: a direction only with the interval off 0 and the Holm-adjusted p below
        alpha), with its interval and Holm p; nothing is decided here."""
        for row in r.self_preference["self_preference"].itertuples(index=False):
            value, lo, hi = row.self_preference, row.lo, row.hi
            interval = (
                f"{value:+.3f} [{lo:+.3f}, {hi:+.3f}] nDCG@10"
                if known(lo, hi)
                else f"{value:+.3f} nDCG@10 (no interval)"
            )
            p_holm = getattr(row, "p_holm", math.nan)
            p = f", Holm p = {p_holm:.3g}" if known(p_holm) else ""
            said = getattr(row, "verdict", "")
            if said == "favours":
                text, alert = f"favours its own family's ({row.judge_family}) rankers by {interval}{p}.", True
            elif said == "disfavours":
                text, alert = (
                    f"rates its own family's ({row.judge_family}) rankers below the other LLM rankers, by "
                    f"{interval}{p}.",
                    False,
                )
            else:
                text, alert = (
                    f"no evidence of self-preference for its family {row.judge_family} ({interval}{p}).",
                    False,
                )
            yield Finding("self-preference", text, row.dataset, row.judge, alert, brief=f"self-preference {interval}")
