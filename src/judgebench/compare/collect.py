"""Find the job runs of an experiment in MLflow and turn them into one frame, one row per cell."""

from __future__ import annotations

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench.tracking import TAG

CELL = ["dataset", "system", "judge", "rewriter"]
TAG_COLUMNS = ["dataset", "system", "ranker", "ranker_type", "perturbation", "judge", "judge_family", "judge_model", "rewriter", "text_view"]


class CompareError(RuntimeError):
    pass


def collect_runs(client: MlflowClient, experiment: str, sweep: str | None = None) -> pd.DataFrame:
    """Latest FINISHED job run per cell (dataset, system, judge, rewriter)."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments())
        raise CompareError(f"no MLflow experiment named {experiment!r}; experiments in this store: {', '.join(names) or 'none'}")
    filt = f"tags.`{TAG}kind` = 'job' and attributes.status = 'FINISHED'"
    if sweep:
        filt += f" and tags.`{TAG}sweep_id` = '{sweep}'"
    rows = []
    page = None
    while True:
        runs = client.search_runs([exp.experiment_id], filter_string=filt, max_results=1000, page_token=page)
        for r in runs:
            row = {c: r.data.tags.get(c) for c in TAG_COLUMNS}
            row.update(r.data.metrics)
            row.update(run_id=r.info.run_id, start_time=r.info.start_time, sweep_id=r.data.tags.get(f"{TAG}sweep_id"))
            rows.append(row)
        page = runs.token
        if not page:
            break
    if not rows:
        where = f" for sweep {sweep!r}" if sweep else ""
        raise CompareError(f"experiment {experiment!r} has no finished job runs{where}")
    frame = pd.DataFrame(rows).sort_values("start_time")
    return frame.drop_duplicates(CELL, keep="last").reset_index(drop=True)
