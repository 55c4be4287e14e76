"""Find the job runs of an experiment in MLflow and turn them into one frame, one row per cell.

compare knows runs only through experiment and tags (docs/architecture.md); everything it reports is
derived from this frame and the runs' artifacts.
"""

from __future__ import annotations

import itertools

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench.compare.base import dataset_identity
from judgebench.exceptions import CompareError
from judgebench.identity.run_tags import RunTags
from judgebench.identity.text_view import ORIGINAL

CELL = ["dataset", "system", "judge", "rewriter"]
TAG_COLUMNS = [
    "dataset",
    "system",
    "ranker",
    "ranker_type",
    "ranker_family",
    "ranker_model",
    "perturbation",
    "judge",
    "judge_family",
    "judge_model",
    "rewriter",
    "text_view",
    "judge_scale",
    "imported",
    "imported_labels",
]
ID_COLUMNS = [
    "judge_hash",
    "system_hash",
    "rewriter_hash",
    "metric_version",
    "version",
    *dataset_identity.COLUMNS,
]  # RunTags fields
UNVERSIONED = "1"  # runs logged before the metric version was stamped


def _experiment_id(client: MlflowClient, experiment: str) -> str:
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        names = sorted(e.name for e in client.search_experiments())
        raise CompareError(
            f"no MLflow experiment named {experiment!r}; experiments in this store: {', '.join(names) or 'none'}"
        )
    return exp.experiment_id


def search(client: MlflowClient, experiment_id: str, kind: str, sweep: str | None, limit: int | None = None) -> list:
    """FINISHED runs of a kind ("job", "judge_summary", "labels"), of one sweep when given. The sweep is
    matched here, not in the filter string: sweep ids are paths and may hold quotes."""
    filt = f"tags.`{RunTags.name('kind')}` = '{kind}' and attributes.status = 'FINISHED'"
    out, page = [], None
    while True:
        runs = client.search_runs([experiment_id], filter_string=filt, max_results=1000, page_token=page)
        out.extend(r for r in runs if not sweep or RunTags.from_tags(r.data.tags).sweep_id == sweep)
        page = runs.token
        if not page or (limit is not None and len(out) >= limit):
            return out


def run_row(r) -> dict:
    """One run as a row: its names (TAG_COLUMNS), identity (ID_COLUMNS), metrics and ids, read through RunTags. Grid
    and labels-only runs are read the same way, so a judge is the same column (or row) in both reports."""
    tags = RunTags.from_tags(r.data.tags)
    row = {c: getattr(tags, c) for c in [*TAG_COLUMNS, *ID_COLUMNS]}
    row.update(r.data.metrics)
    row.update(
        run_id=r.info.run_id, start_time=r.info.start_time, sweep_id=tags.sweep_id, artifact_uri=r.info.artifact_uri
    )  # compare reads the artifacts without fetching each run again
    return row


def display_names(frame: pd.DataFrame, name: str, model: str | None, key: str, within: str = "dataset") -> pd.Series:
    """Readable column names, one per distinct configuration (``key``: its hash) within a dataset: the name
    when no dataset has two configurations under it; else name@model for a configuration whose model no
    other one of that name has; else name#<hash prefix>. (Within a dataset: a run-file ranker or a file
    judge names another file per dataset and is still one system or judge.)"""
    out = frame[name].astype(str).copy()
    keys = frame[key].fillna("")
    for value, g in frame.groupby(name, sort=False):
        if g.groupby(within)[key].apply(lambda k: k.fillna("").nunique()).max() <= 1:
            continue
        models = g[model].fillna("") if model else pd.Series("", index=g.index)
        for (_, m), gm in g.groupby([within, models], sort=False):
            same_model_keys = keys[g.index][(g[within] == gm[within].iloc[0]) & (models == m)].nunique()
            label = f"{value}@{m}" if model and m and same_model_keys == 1 else None
            out[gm.index] = label if label else f"{value}#" + keys[gm.index].str[:6]
    return out


def collect_runs(
    client: MlflowClient,
    experiment: str,
    sweep: str | None = None,
    allow_mixed_versions: bool = False,
    picks: dict[str, str] | None = None,
    names: list[str] | None = None,
) -> pd.DataFrame:
    """Latest FINISHED job run per cell (dataset, system, judge, rewriter), columns named per configuration.

    Two runs of different judge configurations under one name become two columns (see display_names);
    runs of different metric versions are refused unless ``allow_mixed_versions``; a dataset name with two
    identities (other qrels, pool or passages) is refused unless ``picks`` ({name: hash prefix}) selects one
    (only the datasets of ``names`` are checked when given: the others are not reported)."""
    exp_id = _experiment_id(client, experiment)
    rows = [run_row(r) for r in search(client, exp_id, "job", sweep)]
    if not rows:
        where = f" for sweep {sweep!r}" if sweep else ""
        raise CompareError(f"experiment {experiment!r} has no finished job runs{where}")
    frame = pd.DataFrame(rows).sort_values("start_time", kind="stable").reset_index(drop=True)
    frame["text_view"] = frame["text_view"].fillna(ORIGINAL)
    frame["rewriter"] = frame["rewriter"].fillna("none")
    frame["metric_version"] = frame["metric_version"].fillna(UNVERSIONED)
    versions = sorted(frame["metric_version"].unique())
    if len(versions) > 1 and not allow_mixed_versions:
        counts = frame["metric_version"].value_counts().to_dict()
        raise CompareError(
            f"experiment {experiment!r} mixes runs of metric versions {versions} ({counts} runs): their numbers "
            "were computed "
            "by different evaluation code. Rerun the grid (finished cells of the current version are skipped), "
            "select one sweep "
            f"with sweep=ID, or pass allow_mixed_versions=true"
        )
    frame = dataset_identity.one_identity(frame, picks, experiment, names)
    if frame.empty:
        raise CompareError(f"experiment {experiment!r} has no finished job runs of the selected dataset identities")
    frame["judge"] = display_names(frame, "judge", "judge_model", "judge_hash")
    frame["system"] = display_names(frame, "system", "ranker_model", "system_hash")
    frame["rewriter"] = display_names(frame, "rewriter", None, "rewriter_hash")
    return frame.drop_duplicates(CELL, keep="last").reset_index(drop=True)


def collect_summaries(
    client: MlflowClient, experiment: str, jobs: pd.DataFrame, sweep: str | None = None
) -> pd.DataFrame:
    """The judge-summary runs of the judges in ``jobs`` (judge-level statistics, logged once per dataset, judge
    and text view), named as ``jobs`` names the judge; latest per (dataset, judge, text view)."""
    names = dict(zip(jobs["judge_hash"].fillna(""), jobs["judge"]))
    identity = dict(zip(jobs["dataset"], jobs["dataset_hash"])) if "dataset_hash" in jobs else {}
    rows = []
    for r in search(client, _experiment_id(client, experiment), "judge_summary", sweep):
        tags = RunTags.from_tags(r.data.tags)
        same_data = (dataset_identity.UNRECORDED if tags.dataset_hash is None else tags.dataset_hash) == identity.get(
            tags.dataset
        )
        if (tags.judge_hash or "") in names and same_data:
            rows.append(
                {
                    "dataset": tags.dataset,
                    "judge": names[tags.judge_hash or ""],
                    "text_view": tags.text_view,
                    "run_id": r.info.run_id,
                    "start_time": r.info.start_time,
                    **r.data.metrics,
                }
            )
    cols = ["dataset", "judge", "text_view", "run_id", "start_time", "labelled_pairs", "failed_pairs"]
    if not rows:
        return pd.DataFrame(columns=cols)
    frame = pd.DataFrame(rows).sort_values("start_time", kind="stable")
    return frame.drop_duplicates(["dataset", "judge", "text_view"], keep="last").reset_index(drop=True)


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
            f"the experiment has datasets {sorted(jobs['dataset'].unique())} and judges "
            f"{sorted(jobs['judge'].unique())}"
        )
    return out.reset_index(drop=True)


def split_views(jobs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(original-view runs, rewritten-view runs): the main tables compare systems on the original texts;
    rewritten views feed the content-bias section only."""
    original = jobs["text_view"] == ORIGINAL
    return jobs[original].reset_index(drop=True), jobs[~original].reset_index(drop=True)


def missing_cells(
    jobs: pd.DataFrame,
    datasets: list[str] | None = None,
    judges: list[str] | None = None,
    running: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Grid cells without a finished run: the product of every dataset, system, judge and rewriter seen
    (or requested) minus the cells present. Reported, never silently dropped. The cells of ``running`` (runs
    not finished yet, running_cells) widen the product: a system whose every cell still runs is a missing
    system, not an absent one."""
    seen = jobs if running is None or running.empty else pd.concat([jobs[CELL], running[CELL]], ignore_index=True)
    ds = list(dict.fromkeys([*(datasets or []), *seen["dataset"]]))
    systems = list(dict.fromkeys(seen["system"]))
    js = list(dict.fromkeys([*(judges or []), *seen["judge"]]))
    rewriters = list(dict.fromkeys(seen["rewriter"]))
    have = set(zip(jobs["dataset"], jobs["system"], jobs["judge"], jobs["rewriter"]))
    rows = [c for c in itertools.product(ds, systems, js, rewriters) if c not in have]
    return pd.DataFrame(rows, columns=CELL)


def running_cells(client: MlflowClient, experiment: str, jobs: pd.DataFrame, sweep: str | None = None) -> pd.DataFrame:
    """The cells (CELL columns) of the job runs still RUNNING in the experiment (of ``sweep`` when given) that have
    no finished run in ``jobs``: compare of a sweep under way says how many cells it still waits for. A cell whose
    process died leaves its run RUNNING too; it is counted here until it is rerun."""
    filt = f"tags.`{RunTags.name('kind')}` = 'job' and attributes.status = 'RUNNING'"
    tags = [
        RunTags.from_tags(r.data.tags)
        for r in client.search_runs([_experiment_id(client, experiment)], filter_string=filt, max_results=5000)
    ]
    rows = [(t.dataset, t.system, t.judge, t.rewriter or "none") for t in tags if not sweep or t.sweep_id == sweep]
    frame = pd.DataFrame(rows, columns=CELL).dropna().drop_duplicates()
    have = set(zip(jobs["dataset"], jobs["system"], jobs["judge"], jobs["rewriter"]))
    keep = pd.Series([c not in have for c in frame.itertuples(index=False, name=None)], index=frame.index, dtype=bool)
    return frame[keep].reset_index(drop=True)
