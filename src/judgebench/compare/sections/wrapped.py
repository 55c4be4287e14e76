"""The analyses that already had a renderer module of their own (discrimination, self-preference, the human-budget
experiment, the budget planner), each as a Section: ``compute`` calls the analysis, the outputs delegate to its
renderer module, whose views stay where they are."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare import names
from judgebench.compare.analyses import discrimination, order_bias, self_preference
from judgebench.compare.renderers import discrimination_report
from judgebench.compare.budget import experiment as budget
from judgebench.compare.budget import files as budget_files
from judgebench.compare.budget import plan_report as budget_plan_report
from judgebench.compare.budget import experiment_report as human_budget_report
from judgebench.compare.budget import labelling_sheet
from judgebench.compare.renderers import self_preference_report
from judgebench.compare.section import LatexTable, Section

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report


class Discrimination(Section):
    """Which judges order the oracle rankers as constructed (compare/analyses/discrimination.py)."""

    name = "discrimination"

    def compute(self, r: Report) -> dict:
        o = r.options
        return {"discrimination": discrimination.analyse(r.per_query, r.table1, r.table2, r.refs, o.alpha, seed=o.seed,
                                                         level=o.level, exclude=[v.name for v in r.virtual])}

    def markdown(self, r: Report) -> list[str]:
        return discrimination_report.markdown(r)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in discrimination_report.csv_frames(r)]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return discrimination_report.figure(r, out)

    def captions(self) -> dict[str, str]:
        return {discrimination_report.FIGURE: discrimination_report.CAPTION}


class SelfPreference(Section):
    """Does a judge favour its own family's rankers; with the PRP rankers' order bias (one table, terminal lines)."""

    name = "self_preference"

    def compute(self, r: Report) -> dict:
        o = r.options
        return {"self_preference": self_preference.analyse(r.per_query, r.table1, r.jobs, r.refs, o.bootstrap, o.seed, o.level,
                                                           o.alpha),
                "order_bias": order_bias.order_table(r.jobs)}

    def markdown(self, r: Report) -> list[str]:
        return self_preference_report.markdown(r)

    def latex(self, r: Report) -> list[LatexTable]:
        return self_preference_report.latex_tables(r)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in self_preference_report.csv_frames(r) if len(f)]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return self_preference_report.figures(r, out)

    def captions(self) -> dict[str, str]:
        return {self_preference_report.FIGURE: self_preference_report.CAPTION}

    def console(self, r: Report) -> list[str]:
        return [f"  {names.plain(x.dataset)} / {names.plain(x.system)}: PRP order consistency {x.order_consistency:.2f}, first "
                f"position {x.first_position:.2f}" for x in r.order_bias.itertuples(index=False)]


class Calibration(Section):
    """The human-budget experiment (compare/budget/experiment.py): calibration=... on the command line."""

    name = "calibration"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        """One row per (dataset, judge, estimator, k), and the summary the findings read; empty without calibration=."""
        o, calib = r.options, pd.DataFrame(columns=budget.COLUMNS)
        if o.calibration:
            original = r.original_labels
            cells = budget.cells(r.per_query, r.table1, original, r.refs, r.runs, r.problems)
            calib = budget.experiment(cells, list(o.calibration), list(o.calibration_k), o.resamples, o.seed,
                                      o.alpha, o.level, o.reference)
        return {"calibration": calib, "calibration_summary": human_budget_report.summary(calib) if len(calib) else pd.DataFrame()}

    def markdown(self, r: Report) -> list[str]:
        return human_budget_report.markdown(r.calibration, r.calibration_summary, r.options) if len(r.calibration) else []

    def latex(self, r: Report) -> list[LatexTable]:
        return human_budget_report.latex_tables(r.calibration) if len(r.calibration) else []

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in (("calibration", r.calibration), ("calibration_summary", r.calibration_summary)) if len(f)]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return human_budget_report.budget_figures(r.calibration, out) if len(r.calibration) else []

    def console(self, r: Report) -> list[str]:
        if not len(r.calibration):
            return []
        return [f"note: {names.plain(line)}" for line in human_budget_report.k_notes(r.calibration, r.options.calibration_k)]


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
                    out[dataset] = Path(client.download_artifacts(run_id, "config.yaml", tmp)).read_text(encoding="utf-8")
                except Exception:  # noqa: BLE001 (the sheet falls back to the dataset's config name)
                    continue
    return out


class BudgetPlan(Section):
    """The planner's plan and predictions, or the read-back of the assessors' labels (compare/budget/files.py). Its
    plan files and labelling sheets are its ``files``, written whatever format= says."""

    name = "budget_plan"

    def compute(self, r: Report) -> dict[str, dict]:
        """The planner's plan, predictions and measured widths, or the read-back's estimates ({} when neither is asked)."""
        o, planned = r.options, {}
        if o.plan or o.human_labels:
            original = r.original_labels
            planned = budget_files.build(budget.cells(r.per_query, r.table1, original, r.refs, None, r.problems), original, r.runs, o)
        return {"budget_plan": planned}

    def markdown(self, r: Report) -> list[str]:
        return budget_plan_report.markdown(r.budget_plan, r.options.level)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(name, r.budget_plan[key], False) for name, key in (
            ("human_budget_predictions", "predictions"), ("human_budget_measured", "measured"),
            ("human_budget_readback", "readback")) if key in r.budget_plan]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return budget_plan_report.figure(r.budget_plan["measured"], out) if "measured" in r.budget_plan else []

    def captions(self) -> dict[str, str]:
        return {budget_plan_report.FIGURE: budget_plan_report.CAPTION}

    def files(self, r: Report, out: Path) -> list[Path]:
        """The plan, its qrels templates and the assessors' sheets, whatever format= says."""
        if "plans" not in r.budget_plan:
            return []
        original = r.original_labels
        return (budget_files.write(r.budget_plan["plans"], original, out)
                + labelling_sheet.write(r.budget_plan["plans"], original, out, readback_command(r, out),
                                        cell_configs(r, {p.dataset for p in r.budget_plan["plans"]})))

    def console(self, r: Report) -> list[str]:
        lines = budget_plan_report.console(r.budget_plan)
        if "plans" in r.budget_plan:  # what the budget means in work: queries and pairs, and the assessors' sheets
            lines += labelling_sheet.counts(r.budget_plan["plans"], r.original_labels)
        return lines
