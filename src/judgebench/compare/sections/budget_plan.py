"""The budget planner's section: its computation's call and what the planner and the read-back say (the report section,
the terminal lines, the width-vs-budget figure, the plan files and sheets); the numbers are compare/budget/plan.py's and
compare/budget/files.py's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.compare.base import names
from judgebench.compare.base.section import Section
from judgebench.compare.budget import experiment as budget
from judgebench.compare.budget import files as budget_files
from judgebench.compare.budget import labelling_sheet
from judgebench.compare.budget.files import PLAN_FILE, template_name  # noqa: E402
from judgebench.compare.budget.plan import NOT_BETTER  # noqa: E402
from judgebench.compare.renderers import render
from judgebench.compare.renderers.figure_style import plain_text, save  # noqa: E402
from judgebench.metrics.designs import MIN_QUERIES, STRATEGIES, outlier_warning, warning  # noqa: E402

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

FIGURE = "figure_budget_plan.png"
CAPTION = (
    "Interval width of the system differences against the budget: planner's prediction (line), resampling (points)"
)


def _pairs_view(pred: pd.DataFrame) -> pd.DataFrame:
    p = pred[pred["target"] == "difference"]
    return pd.DataFrame(
        {
            "pair": p["system"] + " - " + p["other"],
            "difference (pilot)": p["estimate_pilot"],
            "predicted width": p["predicted_width"],
            "k needed": p["k_needed"].astype(str),
        }
    )


def console(plan: dict) -> list[str]:
    """The planner's printed lines: where the files are, then per (dataset, judge) the widths and k needed."""
    if not plan:
        return []
    lines = []
    if "predictions" in plan:
        rows = plan["plan"]
        for (d, j), g in plan["predictions"].groupby(["dataset", "judge"], sort=False):
            r = rows[(rows["dataset"] == d) & (rows["judge"] == j)]
            lines.append(
                f"plan {names.plain(d)}/{names.plain(j)}: {g['strategy'].iloc[0]}, budget {g['k'].iloc[0]}, "
                f"signal {r['signal'].iloc[0]}, {int(r['selected'].sum())} queries selected of {len(r)} -> "
                f"{template_name(d, j)}"
            )
            lines.append(
                f"  k needed for power {g['power'].iloc[0]:g} at alpha {g['alpha'].iloc[0]:g} (two-sided t-test)"
            )
            if g["warning"].iloc[0]:
                lines.append(f"  {g['warning'].iloc[0]}")
            if g["strategy"].iloc[0] != "uniform":
                lines.append(f"  {NOT_BETTER.format(strategy=g['strategy'].iloc[0])}")
            for x in g[g["target"] == "mean"].itertuples():
                lines.append(f"  mean {names.plain(x.system)[:40]:<40} width {x.predicted_width:.3f}")
            for x in g[g["target"] == "difference"].itertuples():
                pair = f"{names.plain(x.system)[:24]} - {names.plain(x.other)[:24]}"
                lines.append(f"  diff {pair:<51} width {x.predicted_width:.3f}  k needed {x.k_needed}")
    if "readback" in plan:
        for (d, j), g in plan["readback"].groupby(["dataset", "judge"], sort=False):
            means = g[g["target"] == "mean"].sort_values("rank")
            lines.append(
                f"read back {names.plain(d)}/{names.plain(j)} from {int(g['labelled_queries'].iloc[0])} labelled "
                "queries "
                f"({g['strategy'].iloc[0]}):"
            )
            lines += [f"  {w}" for w in [_readback_warning(plan, d, j, g), _outlier_warning(g)] if w]
            lines += [
                f"  {x.rank:>2} {names.plain(x.system)[:40]:<40} {x.estimate:.3f} [{x.low:.3f}, {x.high:.3f}]"
                for x in means.itertuples()
            ]
    return lines


def _readback_warning(plan: dict, dataset: str, judge: str, g: pd.DataFrame) -> str | None:
    """designs.warning for a read-back: its labelled queries of the plan's queries (the plan's rows when known)."""
    rows = plan.get("plan")
    n = int(((rows["dataset"] == dataset) & (rows["judge"] == judge)).sum()) if rows is not None else MIN_QUERIES
    return warning(int(g["labelled_queries"].iloc[0]), n)


def _outlier_warning(g: pd.DataFrame) -> str | None:
    """designs.outlier_warning for a read-back's rows: the unlabelled queries with an outlying judge value in any
    target."""
    column = g["unlabelled_outliers"] if "unlabelled_outliers" in g else pd.Series([], dtype=str)
    found = {q for cell in column.fillna("").astype(str) for q in cell.split(",") if q}
    return outlier_warning(sorted(found))


def markdown(plan: dict, level: float) -> list[str]:
    if not plan:
        return []
    parts = []
    if "predictions" in plan:
        parts.append(f"\n## Human-label budget plan ({PLAN_FILE})\n")
        parts.append(
            "The queries to send to assessors (selected = 1) with their inclusion probability, and what the budget "
            f"buys: the predicted width of each {level:.0%} interval about the all-query mean, from the variances of "
            "human - judge on the judge's human reference used as a pilot, and per system pair the k needed to tell "
            f"the two apart (alpha {_first(plan, 'alpha')}, power {_first(plan, 'power')}, two-sided t-test at the "
            "design's degrees of freedom; docs/protocol.md). The figure draws the predicted widths of the "
            "pair differences per strategy (lines) over the widths measured on resamples of each design "
            f"(points): {FIGURE}.\n"
        )
        parts += [
            f"\n{NOT_BETTER.format(strategy=st)}.\n"
            for st in dict.fromkeys(plan["predictions"]["strategy"])
            if st != "uniform"
        ]
        parts += [
            f"\n**{w}** "
            f"({', '.join(sorted(set(names.markdown(f'{d} / {j}') for d, j in zip(g['dataset'], g['judge']))))})\n"
            for w, g in plan["predictions"].groupby("warning", sort=False)
            if w
        ]
        for (d, j), g in plan["predictions"].groupby(["dataset", "judge"], sort=False):
            rows = plan["plan"]
            r = rows[(rows["dataset"] == d) & (rows["judge"] == j) & (rows["selected"] == 1)]
            parts += [
                f"\n### {names.markdown(f'{d} / {j}')}: {g['strategy'].iloc[0]}, budget {g['k'].iloc[0]}, "
                f"signal {r['signal'].iloc[0] if len(r) else ''}\n",
                render.markdown(
                    r[["query_id", "stratum", "inclusion_probability"]], index=False, integers=["stratum"], digits=3
                ),
                "",
                render.markdown(
                    g[g["target"] == "mean"][["system", "estimate_pilot", "predicted_width"]].rename(
                        columns={"estimate_pilot": "mean (pilot)", "predicted_width": "predicted width"}
                    ),
                    index=False,
                    digits=3,
                ),
                "",
                render.markdown(_pairs_view(g), index=False, digits=3),
            ]
        m = plan["measured"]
        parts += [
            "\nMeasured on resamples (pair differences, mean over pairs; flagged: under 10 labels or 20 queries, where "
            "benchmarks/calibration.py finds the intervals and power claims off target):\n",
            render.markdown(m, index=False, integers=["k", "samples"], digits=3),
        ]
    if "readback" in plan:
        parts.append("\n## Corrected estimates from the returned human labels\n")
        parts.append(
            "From the returned labels alone, with the plan's design and inclusion probabilities "
            f"({level:.0%} intervals about the all-query mean).\n"
        )
        for (d, j), g in plan["readback"].groupby(["dataset", "judge"], sort=False):
            warned = [w for w in (_readback_warning(plan, d, j, g), _outlier_warning(g)) if w]
            parts += [
                f"\n### {names.markdown(f'{d} / {j}')} ({int(g['labelled_queries'].iloc[0])} labelled queries)\n",
                *[f"**{w}**\n" for w in warned],
                render.markdown(
                    g[g["target"] == "mean"].sort_values("rank")[["rank", "system", "estimate", "low", "high"]],
                    index=False,
                    integers=["rank"],
                    digits=3,
                ),
            ]
    return parts


def _first(plan: dict, column: str) -> str:
    return f"{plan['predictions'][column].iloc[0]:g}" if len(plan["predictions"]) else ""


@plain_text
def figure(measured: pd.DataFrame, out: Path) -> list[Path]:
    """Interval width of the pair differences against the budget, a line per strategy, one panel per (dataset,
    judge)."""
    groups = list(measured.groupby(["dataset", "judge"], sort=False))
    if not groups:
        return []
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 3.8), squeeze=False)
    for ax, ((d, j), g) in zip(axes[0], groups):
        for s, colour in zip(STRATEGIES, ("tab:blue", "tab:orange", "tab:green")):
            gs = g[g["strategy"] == s].sort_values("k")
            ax.plot(gs["k"], gs["predicted_width"], color=colour, label=f"{s} (predicted)")
            ax.plot(gs["labels_mean"], gs["measured_width"], "o", color=colour, label=f"{s} (measured)")
        ax.set_xlabel("human-labelled queries")
        ax.set_ylabel("mean 95 % interval width, differences")
        ax.set_title(names.plot(f"{d} / {j}", 2 * names.PLOT_LIMIT), fontsize="medium")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    return [save(fig, out / FIGURE)]


def readback_command(r: Report, out: Path) -> str:
    """The command that reads the filled labels back: the same store, selection and folder as this plan (a read-back
    on another store or other datasets would score other runs). A credentialed store URI is masked."""
    from judgebench.secrets import mask_url

    o = r.options
    parts = ["judgebench-compare", f"experiment={r.experiment}"]
    parts += [f"tracking_uri={mask_url(r.tracking_uri)}"] if r.tracking_uri else []
    parts += [f"sweep={r.sweep}"] if r.sweep else []
    parts += [f"{key}={','.join(v)}" for key, v in (("datasets", o.datasets), ("judges", o.judges)) if v]
    parts += [f"out={out.parent if out.name == 'plan' else out}", f"calibration.human_labels={out / 'labels.tsv'}"]
    return " ".join(parts)


def cell_configs(r: Report, datasets: set[str]) -> dict[str, str]:
    """A grid cell's logged config.yaml per dataset: what the sheet's texts are loaded from (a ``dataset=trec`` grid
    names its passages there, not in a config of judgebench's). Nothing for a dataset whose file cannot be read."""
    import tempfile

    from mlflow.tracking import MlflowClient

    if not r.tracking_uri or "run_id" not in r.jobs:
        return {}
    client, out = MlflowClient(r.tracking_uri), {}
    for dataset, run_id in r.jobs.drop_duplicates("dataset")[["dataset", "run_id"]].itertuples(index=False):
        if dataset in datasets:
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    out[dataset] = Path(client.download_artifacts(run_id, "config.yaml", tmp)).read_text(
                        encoding="utf-8"
                    )
                except Exception:  # noqa: BLE001 (the sheet falls back to the dataset's config name)
                    continue
    return out


class BudgetPlan(Section):
    """The planner's plan and predictions, or the read-back of the assessors' labels (compare/budget/files.py). Its
    plan files and labelling sheets are its ``files``, written whatever format= says."""

    name = "budget_plan"

    def compute(self, r: Report) -> dict[str, dict]:
        """The planner's plan, predictions and measured widths, or the read-back's estimates ({} when neither is
        asked)."""
        o, planned = r.options, {}
        if o.plan or o.human_labels:
            original = r.original_labels
            planned = budget_files.build(
                budget.cells(r.per_query, r.table1, original, r.refs, None, r.problems), original, r.runs, o
            )
        return {"budget_plan": planned}

    def markdown(self, r: Report) -> list[str]:
        return markdown(r.budget_plan, r.options.level)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [
            (name, r.budget_plan[key], False)
            for name, key in (
                ("human_budget_predictions", "predictions"),
                ("human_budget_measured", "measured"),
                ("human_budget_readback", "readback"),
            )
            if key in r.budget_plan
        ]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return figure(r.budget_plan["measured"], out) if "measured" in r.budget_plan else []

    def captions(self) -> dict[str, str]:
        return {FIGURE: CAPTION}

    def files(self, r: Report, out: Path) -> list[Path]:
        """The plan, its qrels templates and the assessors' sheets, whatever format= says."""
        if "plans" not in r.budget_plan:
            return []
        original = r.original_labels
        return budget_files.write(r.budget_plan["plans"], original, out) + labelling_sheet.write(
            r.budget_plan["plans"],
            original,
            out,
            readback_command(r, out),
            cell_configs(r, {p.dataset for p in r.budget_plan["plans"]}),
        )

    def console(self, r: Report) -> list[str]:
        lines = console(r.budget_plan)
        if "plans" in r.budget_plan:  # what the budget means in work: queries and pairs, and the assessors' sheets
            lines += labelling_sheet.counts(r.budget_plan["plans"], r.original_labels)
        return lines
