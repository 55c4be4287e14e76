"""Write the compare outputs (Markdown, CSV, PNG) and log them as a compare run in MLflow."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench import tracking
from judgebench.compare import figures, significance, tables
from judgebench.compare.collect import collect_runs


@dataclass
class Report:
    jobs: pd.DataFrame
    table1: dict[str, pd.DataFrame]
    table2: pd.DataFrame
    missing: list[tuple[str, str, str]]
    oracle_tests: pd.DataFrame = field(default_factory=pd.DataFrame)
    agreement_counts: pd.DataFrame = field(default_factory=pd.DataFrame)
    agreement_pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    files: list[Path] = field(default_factory=list)

    def markdown(self) -> str:
        parts = ["## Table 1: mean nDCG@10 on judged documents (system x judge)"]
        for dataset, t in self.table1.items():
            shown = t.copy()
            for col in shown.columns[1:]:
                shown[col] = [_cell(v) for v in shown[col]]
            parts += [f"\n### {dataset}\n", shown.to_markdown()]
        parts += ["\n## Table 2: agreement with the human qrels per judge\n"]
        parts.append(self.table2.to_markdown(index=False, floatfmt=".4f") if len(self.table2) else "(no judge other than human)")
        if len(self.oracle_tests):
            parts.append("\n## Table 3: paired t-tests between oracle rankers (per-query nDCG@10, alpha 0.05)\n")
            shown = self.oracle_tests.copy()
            for col in ("significant", "significant_holm"):
                shown[col] = shown[col].map({True: "yes", False: "no"})
            parts.append(shown.drop(columns=["t"]).to_markdown(index=False, floatfmt=".4g"))
        if len(self.agreement_counts):
            parts.append("\n## Table 4: pairwise significance decisions, judge vs human (all system pairs)\n")
            parts.append(self.agreement_counts.to_markdown(index=False))
        if self.missing:
            parts.append("\n## Missing grid cells (no finished run)\n")
            parts += [f"- {d} / {s} / judge={j}" for d, s, j in self.missing]
        return "\n".join(parts) + "\n"


def _cell(v) -> str:
    return "missing" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def build(client: MlflowClient, experiment: str, sweep: str | None = None) -> Report:
    jobs = collect_runs(client, experiment, sweep)
    t1 = tables.table1(jobs)
    per_query = significance.load_per_query(client, jobs)
    oracles = {d: list(t.index[t["type"] == "oracle"]) for d, t in t1.items()}
    everyone = {d: list(t.index) for d, t in t1.items()}
    oracle_tests = significance.ttests(per_query, oracles)
    counts, pairs = significance.decision_agreement(significance.ttests(per_query, everyone))
    return Report(jobs, t1, tables.table2(jobs, t1), tables.missing_cells(jobs), oracle_tests, counts, pairs)


def write(report: Report, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    files = [out / "report.md"]
    files[0].write_text(report.markdown(), encoding="utf-8")
    for dataset, t in report.table1.items():
        path = out / f"table1_{dataset}.csv"
        t.to_csv(path)
        files.append(path)
    report.table2.to_csv(out / "table2.csv", index=False)
    files.append(out / "table2.csv")
    for name, frame in (("ttests_oracles", report.oracle_tests), ("significance_agreement", report.agreement_counts), ("significance_pairs", report.agreement_pairs)):
        if len(frame):
            frame.to_csv(out / f"{name}.csv", index=False)
            files.append(out / f"{name}.csv")
    files.append(figures.ndcg_bars(report.table1, out / "figure_ndcg_bars.png"))
    report.files = files
    return files


def log_compare_run(client: MlflowClient, experiment: str, sweep: str | None, files: list[Path]) -> str:
    exp_id = client.get_experiment_by_name(experiment).experiment_id
    run = tracking.JobRun(
        client, exp_id, f"compare/{sweep or 'all'}",
        {f"{tracking.TAG}kind": "compare", f"{tracking.TAG}sweep_id": sweep or "all", "git_commit": tracking.git_commit()},
    )
    for f in files:
        client.log_artifact(run.run_id, str(f))
    run.finish()
    return run.run_id
