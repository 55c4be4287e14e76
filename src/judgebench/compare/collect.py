"""Find the job runs of an experiment in MLflow and turn them into one frame, one row per cell.

compare knows runs only through experiment and tags (DESIGN.md 6); everything it reports is
derived from this frame and the runs' artifacts.
"""

from __future__ import annotations

import itertools

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench.tracking import TAG

CELL = ["dataset", "system", "judge", "rewriter"]
TAG_COLUMNS = ["dataset", "system", "ranker", "ranker_type", "perturbation", "judge", "judge_family", "judge_model", "rewriter", "text_view"]
ORIGINAL = "original"


class CompareError(RuntimeError):
    """A problem the user must fix (unknown experiment, bad argument): one line, exit code 2."""


def collect_runs(client: MlflowClient, experiment: str, sweep: str | None = None) -> pd.DataFrame:
    """Latest FINISHED job run per cell (dataset, system, judge, rewriter)."""
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments())
        raise CompareError(f"no MLflow experiment named {experiment!r}; experiments in this store: {', '.join(names) or 'none'}")
    # The sweep is matched here, not in the filter string: sweep ids are paths and may hold quotes.
    filt = f"tags.`{TAG}kind` = 'job' and attributes.status = 'FINISHED'"
    rows = []
    page = None
    while True:
        runs = client.search_runs([exp.experiment_id], filter_string=filt, max_results=1000, page_token=page)
        for r in runs:
            if sweep and r.data.tags.get(f"{TAG}sweep_id") != sweep:
                continue
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
    frame = pd.DataFrame(rows).sort_values("start_time", kind="stable")
    frame["text_view"] = frame["text_view"].fillna(ORIGINAL)
    frame["rewriter"] = frame["rewriter"].fillna("none")
    return frame.drop_duplicates(CELL, keep="last").reset_index(drop=True)


def select(jobs: pd.DataFrame, datasets: list[str] | None, judges: list[str] | None) -> pd.DataFrame:
    """Keep the requested datasets and judges; the human column needs no human-judge run, so it always stays."""
    out = jobs
    if datasets:
        out = out[out["dataset"].isin(datasets)]
    if judges:
        out = out[out["judge"].isin(judges)]
    if out.empty:
        raise CompareError(
            f"no finished job runs for datasets={','.join(datasets or ['*'])} judges={','.join(judges or ['*'])}; "
            f"the experiment has datasets {sorted(jobs['dataset'].unique())} and judges {sorted(jobs['judge'].unique())}"
        )
    return out.reset_index(drop=True)


def split_views(jobs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(original-view runs, rewritten-view runs): the main tables compare systems on the original texts;
    rewritten views feed the content-bias section only."""
    original = jobs["text_view"] == ORIGINAL
    return jobs[original].reset_index(drop=True), jobs[~original].reset_index(drop=True)


def missing_cells(jobs: pd.DataFrame, datasets: list[str] | None = None, judges: list[str] | None = None) -> pd.DataFrame:
    """Grid cells without a finished run: the product of every dataset, system, judge and rewriter seen
    (or requested) minus the cells present. Reported, never silently dropped."""
    ds = list(dict.fromkeys([*(datasets or []), *jobs["dataset"]]))
    systems = list(dict.fromkeys(jobs["system"]))
    js = list(dict.fromkeys([*(judges or []), *jobs["judge"]]))
    rewriters = list(dict.fromkeys(jobs["rewriter"]))
    have = set(zip(jobs["dataset"], jobs["system"], jobs["judge"], jobs["rewriter"]))
    rows = [c for c in itertools.product(ds, systems, js, rewriters) if c not in have]
    return pd.DataFrame(rows, columns=CELL)
