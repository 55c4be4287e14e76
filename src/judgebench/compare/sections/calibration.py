"""The human-budget experiment's section: its computation's call (compare/budget/experiment.py holds the numbers) and
what it says, in words, tables and a figure.

Definitions the notes use: a k "has no inversion" for an estimator when at most ``INVERSION_OK`` (5 %)
of its samples are inverted; an interval "holds its coverage" when at least ``COVERAGE_OK`` (90 %) of
the systems x samples for a nominal 95 % interval contain the human mean; the judge "adds" over
human-only labels at a budget when the best estimator that uses the judge beats human only on tau by
more than ``TAU_MARGIN`` at the same k.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding, known, number
from judgebench.compare.base.section import LatexTable, Section
from judgebench.compare.budget import experiment as budget
from judgebench.compare.renderers import render
from judgebench.compare.renderers.figure_style import plain_text, save  # noqa: E402

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

INVERSION_OK = 0.05
COVERAGE_OK = 0.90
TAU_MARGIN = 0.02
USES_JUDGE = ("ppi", "ppi++", "ppi++_insample", "linear", "label")
SUMMARY = [
    "dataset",
    "judge",
    "judge_only_inverted",
    "k_no_inversion",
    "estimators_at_k",
    "tau_best_at_k",
    "tau_human_only_at_k",
    "inversion_human_only_at_k",
    "judge_adds",
    *[f"k_no_inversion_{e}" for e in ("human_only", *USES_JUDGE)],
]


def _k_text(k: float, n: int) -> str:
    return "never" if k != k else (f"all ({n})" if int(k) >= n else str(int(k)))


def summary(table: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, judge): the smallest k without inversion per estimator and overall (among the
    estimators that use the judge), and whether the judge beats human only there."""
    rows = []
    for (dataset, judge), g in table.groupby(["dataset", "judge"], sort=False):
        ok = g[g["inversion_rate"] <= INVERSION_OK]
        first = {
            e: float(ok.loc[ok["estimator"] == e, "k"].min()) if (ok["estimator"] == e).any() else math.nan
            for e in g["estimator"].unique()
        }
        row = {
            "dataset": dataset,
            "judge": judge,
            "judge_only_inverted": bool((g.loc[g["estimator"] == "judge_only", "inversion_rate"] > INVERSION_OK).any()),
        }
        ks = [first[e] for e in USES_JUDGE if e in first and first[e] == first[e]]
        k = min(ks) if ks else math.nan
        row["k_no_inversion"] = k
        row["estimators_at_k"] = ", ".join(e for e in USES_JUDGE if first.get(e) == k) or "-"
        at = g[g["k"] == k]
        judged, human = at[at["estimator"].isin(USES_JUDGE)], at[at["estimator"] == "human_only"]
        row["tau_best_at_k"] = float(judged["tau"].max()) if len(judged) else math.nan
        row["tau_human_only_at_k"] = float(human["tau"].iloc[0]) if len(human) else math.nan
        row["inversion_human_only_at_k"] = float(human["inversion_rate"].iloc[0]) if len(human) else math.nan
        row["judge_adds"] = (
            None
            if row["tau_human_only_at_k"] != row["tau_human_only_at_k"] or k != k
            else bool(row["tau_best_at_k"] > row["tau_human_only_at_k"] + TAU_MARGIN)
        )
        for e in ("human_only", *USES_JUDGE):
            row[f"k_no_inversion_{e}"] = first.get(e, math.nan)
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY)


def k_notes(table: pd.DataFrame, ks) -> list[str]:
    """One line per dataset where an asked k (calibration_k) is more than its queries: that k is all of them."""
    out = []
    for dataset, g in table.groupby("dataset", sort=False):
        n = int(g["queries"].max())
        over = [k for k in ks if k != "all" and int(k) > n]
        if over:
            out.append(
                f"calibration_k={','.join(over)}: {dataset} has {n} queries, so k={','.join(over)} is reported as "
                f"all ({n})"
            )
    return out


def notes(table: pd.DataFrame, summ: pd.DataFrame) -> list[str]:
    """Markdown bullet lines per (dataset, judge)."""
    out = []
    for r in summ.to_dict("records"):
        g = table[(table["dataset"] == r["dataset"]) & (table["judge"] == r["judge"])]
        n = int(g["queries"].iloc[0])
        inverted = "**inverted**" if r["judge_only_inverted"] else "not inverted"
        head = f"- **{names.markdown(r['dataset'])} / {names.markdown(r['judge'])}**: judge only is {inverted}. "
        if r["k_no_inversion"] != r["k_no_inversion"]:
            head += "No estimator that uses the judge gets the inversion rate to 5 % or less at the k tried."
        else:
            adds = {True: "yes", False: "no", None: "n/a"}[r["judge_adds"]]
            head += (
                f"Smallest k without inversion: {_k_text(r['k_no_inversion'], n)} ({r['estimators_at_k']}); there "
                "the best "
                f"judge-using estimator has tau {r['tau_best_at_k']:.3f} vs human only {r['tau_human_only_at_k']:.3f} "
                f"(human only inverted in {r['inversion_human_only_at_k']:.0%} of samples): the judge adds over "
                "human-only "
                f"labels: **{adds}**."
            )
        per = ", ".join(
            f"{e} {_k_text(r[f'k_no_inversion_{e}'], n)}"
            for e in ("human_only", *USES_JUDGE)
            if e in set(g["estimator"])
        )
        best = []
        for k, gk in g.groupby("k", sort=True):
            top = gk[gk["tau"] >= gk["tau"].max() - 1e-9]
            best.append(f"k={_k_text(k, n)}: {'/'.join(top['estimator'])} ({gk['tau'].max():.3f})")
        low = g[g["coverage"] < COVERAGE_OK]
        at = g[g["k"] == r["k_no_inversion"]]
        taus = ", ".join(f"{e} {t:.3f} (MAE {m:.3f})" for e, t, m in zip(at["estimator"], at["tau"], at["mae"]))
        out += (
            [head]
            + ([f"  - at that k, tau per estimator: {taus}"] if len(at) else [])
            + [
                f"  - smallest k without inversion per estimator: {per}",
                f"  - best tau per k: {'; '.join(best)}",
                "  - intervals below 90 % coverage: "
                + (
                    "; ".join(
                        f"{e} k={_k_text(k, n)} ({c:.1%})"
                        for e, k, c in zip(low["estimator"], low["k"], low["coverage"])
                    )
                    or "none"
                ),
            ]
        )
    return out


def view(table: pd.DataFrame) -> pd.DataFrame:
    """The printed table: k as "all (n)", coverage below 90 % flagged."""
    v = table.drop(columns=["reference", "queries"]).copy()
    v["k"] = [_k_text(k, n) for k, n in zip(table["k"], table["queries"])]
    v["coverage"] = [f"{c:.3f}" + (" LOW" if c < COVERAGE_OK else "") for c in table["coverage"]]
    return v


def blocks(table: pd.DataFrame) -> list[tuple[str, str, pd.DataFrame]]:
    """(file stem suffix, title, frame) per (dataset, judge); the title is raw text, each renderer escapes it."""
    return [
        (f"{names.file_part(d)}_{names.file_part(j)}", f"{d} / {j}", view(g).drop(columns=["dataset", "judge"]))
        for (d, j), g in table.groupby(["dataset", "judge"], sort=False)
    ]


def markdown(table: pd.DataFrame, summ: pd.DataFrame, options) -> list[str]:
    o = options
    parts = [
        f"\n## Correcting the judge with k human-labelled queries ({o.resamples} samples per k, seed {o.seed}, "
        f"truth: {o.reference})\n",
        "Each estimator estimates every system's human mean nDCG@10 over all queries from the judge's values and the "
        "human values of k sampled queries (judge_only: no human labels). tau: Kendall's tau-b of the estimated vs the "
        "human system ordering (mean over samples; tau_sd its spread); inversion_rate: share of samples where the LLM "
        "and oracle groups swap or an LLM system rises above every oracle; mae: mean |estimate - human mean|; "
        "coverage: "
        f"share of systems x samples whose {o.level:.0%} interval contains the human mean (LOW: below 90 %); "
        "width: mean "
        "interval width; agree/missed/spurious/reversed: share of system pairs whose significance decision (interval "
        f"of the difference, alpha {o.alpha}) agrees with / misses / adds to / reverses the humans' (paired "
        "t-test, all "
        "queries); labels_spent: human labels of the sampled queries (label-set pairs).\n",
        "Inversion gone = at most 5 % of samples inverted; the judge adds = the best estimator using it beats human "
        "only on tau by more than 0.02 at that k.\n",
    ]
    parts += [f"- {names.markdown(line)}." for line in k_notes(table, o.calibration_k)]
    parts += notes(table, summ)
    for _, title, frame in blocks(table):
        parts += [
            f"\n### {names.markdown(title)}\n",
            render.markdown(frame, index=False, integers=["samples"], digits=3),
        ]
    return parts


def latex_tables(table: pd.DataFrame) -> list[tuple[str, pd.DataFrame, str, dict]]:
    return [
        (
            f"calibration_{stem}",
            frame,
            f"Correcting the judge with k human-labelled queries: {title}.",
            {"index": False, "integers": ["samples"], "digits": 3},
        )
        for stem, title, frame in blocks(table)
    ]


@plain_text
def budget_figures(table: pd.DataFrame, out: Path) -> list[Path]:
    """The human-budget curve per judge: tau and inversion rate against the human labels spent, one line
    per estimator (judge only: a dashed level, it spends none), a row per dataset."""
    files = []
    for judge, gj in table.groupby("judge", sort=False):
        datasets = list(dict.fromkeys(gj["dataset"]))
        fig, axes = plt.subplots(len(datasets), 2, figsize=(10, 3.6 * len(datasets)), squeeze=False)
        for row, dataset in zip(axes, datasets):
            g = gj[gj["dataset"] == dataset]
            for name, ge in g.groupby("estimator", sort=False):
                ge = ge.sort_values("labels_spent")
                for ax, col in zip(row, ("tau", "inversion_rate")):
                    if name == "judge_only":
                        ax.axhline(ge[col].iloc[0], color="black", ls="--", lw=1, label=name)
                    else:
                        ax.plot(ge["labels_spent"], ge[col], marker="o", label=name)
            for ax, col, label in zip(row, ("tau", "inversion_rate"), ("Kendall's tau vs human", "inversion rate")):
                ax.set_xlabel("human labels spent (label-set pairs)")
                ax.set_ylabel(label)
                ax.set_title(names.plot(f"{dataset} / {judge}", 2 * names.PLOT_LIMIT), fontsize="medium")
                ax.grid(alpha=0.3)
            row[1].axhline(INVERSION_OK, color="gray", lw=0.8, ls=":")
            row[1].set_ylim(-0.03, 1.03)
            row[0].legend(fontsize="x-small", loc="lower right")
        files.append(save(fig, out / f"figure_budget_{names.file_part(judge)}.png"))
    return files


class Calibration(Section):
    """The human-budget experiment (compare/budget/experiment.py): calibration=... on the command line."""

    name = "calibration"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        """One row per (dataset, judge, estimator, k), and the summary the findings read; empty without calibration=."""
        o, calib = r.options, pd.DataFrame(columns=budget.COLUMNS)
        if o.calibration:
            original = r.original_labels
            cells = budget.cells(r.per_query, r.table1, original, r.refs, r.runs, r.problems)
            calib = budget.experiment(
                cells, list(o.calibration), list(o.calibration_k), o.resamples, o.seed, o.alpha, o.level, o.reference
            )
        return {"calibration": calib, "calibration_summary": summary(calib) if len(calib) else pd.DataFrame()}

    def markdown(self, r: Report) -> list[str]:
        return markdown(r.calibration, r.calibration_summary, r.options) if len(r.calibration) else []

    def latex(self, r: Report) -> list[LatexTable]:
        return latex_tables(r.calibration) if len(r.calibration) else []

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [
            (n, f, False)
            for n, f in (("calibration", r.calibration), ("calibration_summary", r.calibration_summary))
            if len(f)
        ]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return budget_figures(r.calibration, out) if len(r.calibration) else []

    def console(self, r: Report) -> list[str]:
        if not len(r.calibration):
            return []
        return [f"note: {names.plain(line)}" for line in k_notes(r.calibration, r.options.calibration_k)]

    def findings(self, r: Report) -> Iterable[Finding]:
        """Where calibration= was asked: how many human-labelled queries remove the inversion, and whether the judge
        adds anything over those human labels alone."""
        for row in r.calibration_summary.itertuples(index=False) if len(r.calibration_summary) else ():
            k = row.k_no_inversion
            if not known(k):
                text = "calibration: none of the human budgets tried removes the inversion."
            else:
                adds = {
                    True: "the judge adds to the human labels there",
                    False: "the judge adds nothing over those human labels alone",
                    None: "",
                }.get(row.judge_adds if isinstance(row.judge_adds, bool) else None, "")
                text = (
                    f"calibration: {int(k)} human-labelled queries remove the inversion ({row.estimators_at_k}); "
                    "best τ there "
                    f"{number(row.tau_best_at_k)} vs {number(row.tau_human_only_at_k)} from the human labels alone"
                    + (f"; {adds}." if adds else ".")
                )
            yield Finding(
                "calibration",
                text,
                row.dataset,
                row.judge,
                brief=f"calibration: no inversion from k = {int(k)}"
                if known(k)
                else "calibration: inversion at every k",
            )
