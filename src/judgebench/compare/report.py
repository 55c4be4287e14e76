"""Write the compare outputs (Markdown, CSV, PNG) and log them as a compare run in MLflow."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench import tracking
from judgebench.compare import figures, tables
from judgebench.compare.collect import collect_runs


@dataclass
class Report:
    jobs: pd.DataFrame
    table1: dict[str, pd.DataFrame]
    table2: pd.DataFrame
    missing: list[tuple[str, str, str]]
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
        if self.missing:
            parts.append("\n## Missing grid cells (no finished run)\n")
            parts += [f"- {d} / {s} / judge={j}" for d, s, j in self.missing]
        return "\n".join(parts) + "\n"


def _cell(v) -> str:
    return "missing" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.4f}"


def build(client: MlflowClient, experiment: str, sweep: str | None = None) -> Report:
    jobs = collect_runs(client, experiment, sweep)
    t1 = tables.table1(jobs)
    return Report(jobs, t1, tables.table2(jobs, t1), tables.missing_cells(jobs))


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
