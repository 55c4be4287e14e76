"""compare for labels-only runs (``judgebench.kind=labels``): the agreement table, one row per judge, presented by the
sections of compare/sections/labels_only.py and written as the grid report is (``report.write_formats``).

A labels-only experiment (e.g. LLMJudge: human labels, no passages, no systems) has judge labels and
human labels and nothing else, so the report is Table 2's label statistics, its figures, and one line
saying what needs systems, instead of nDCG numbers nobody measured or a failure.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench.compare import report, sections
from judgebench.compare.base import columns, dataset_identity
from judgebench.compare.base.artifacts import Artifacts
from judgebench.compare.base.report_model import LabelsReport
from judgebench.compare.sections import labels_only
from judgebench.compare.store import compare_run
from judgebench.compare.store.collect import display_names, run_row, search
from judgebench.exceptions import CompareError
from judgebench.identity.text_view import ORIGINAL

KIND = "labels"
TABLE = ["dataset", "judge", *columns.AGREEMENT, "labelled_pairs", "failed_pairs", *columns.SHARES]


def has_runs(client: MlflowClient, experiment: str, kind: str, sweep: str | None = None) -> bool:
    """Whether the experiment has a finished run of this kind ("job", "labels")."""
    exp = client.get_experiment_by_name(experiment)
    return exp is not None and bool(search(client, exp.experiment_id, kind, sweep, limit=1))


def collect(
    client: MlflowClient, experiment: str, sweep: str | None, datasets: list[str] | None, judges: list[str] | None
) -> pd.DataFrame:
    """Latest finished labels-only run per (dataset, judge configuration), selected and named like the grid's
    cells: one identity per dataset name (``datasets=name@hash`` picks one), a row per judge configuration
    (its hash; collect.display_names: ``name@model`` or ``name#hash`` when two configurations share a name)."""
    exp = client.get_experiment_by_name(experiment)
    frame = pd.DataFrame([run_row(r) for r in search(client, exp.experiment_id, KIND, sweep)])  # not empty: has_runs()
    frame = frame.sort_values("start_time", kind="stable").reset_index(drop=True)
    frame["text_view"] = frame["text_view"].fillna(ORIGINAL)
    wanted, picks = dataset_identity.parse(datasets)
    frame = dataset_identity.one_identity(frame, picks, experiment, wanted)
    frame["judge"] = display_names(frame, "judge", "judge_model", "judge_hash")
    frame = frame.drop_duplicates(["dataset", "judge"], keep="last")
    if wanted:
        frame = frame[frame["dataset"].isin(wanted)]
    if judges:
        frame = frame[frame["judge"].isin(judges)]
    return frame.reset_index(drop=True)


def build(client: MlflowClient, experiment: str, sweep: str | None, options) -> LabelsReport | None:
    """The labels-only report, or None when the experiment has no labels-only runs."""
    if not has_runs(client, experiment, KIND, sweep):
        return None
    runs = collect(client, experiment, sweep, options.datasets, options.judges)
    if runs.empty:
        raise CompareError(
            f"experiment {experiment!r} has no labels-only runs for datasets={','.join(options.datasets or ['*'])} "
            f"judges={','.join(options.judges or ['*'])}"
        )
    art = Artifacts(client)
    labels = art.labels(runs)
    agreement = columns.agreement_table(labels)
    usage = runs[["dataset", "judge"]].assign(
        labelled_pairs=runs.get("labelled_pairs"), failed_pairs=runs.get("calls_failed")
    )
    table = usage.merge(agreement, on=["dataset", "judge"], how="left")[TABLE]
    datasets = list(dict.fromkeys([*(dataset_identity.parse(options.datasets)[0] or []), *runs["dataset"]]))
    judges = list(dict.fromkeys([*(options.judges or []), *runs["judge"]]))
    have = set(zip(runs["dataset"], runs["judge"]))
    missing = pd.DataFrame(
        [c for c in itertools.product(datasets, judges) if c not in have], columns=["dataset", "judge"]
    )
    return LabelsReport(experiment, sweep, tuple(options.formats), runs, table, labels, missing, art.problems)


def write(r: LabelsReport, out: Path) -> list[Path]:
    """The formats asked for, each section's part of each (compare/sections/labels_only.py)."""
    out.mkdir(parents=True, exist_ok=True)
    box = r.header() if "html" in r.formats else {}  # report.html's header box, read only for it
    r.files = report.write_formats(
        r, out, r.formats, labels_only.SECTIONS, box, f"judgebench compare: {r.experiment} (labels)"
    )
    return r.files


def log_compare_run(client: MlflowClient, r: LabelsReport, files: list[Path]) -> str:
    """A compare run (kind "compare") in the experiment: every statistic per (dataset, judge) as a metric, the
    runs read in inputs.json; it supersedes the previous compare run of the same selection (compare_run)."""
    metrics = sections.compare_run_metrics(r, labels_only.SECTIONS)  # the sections' own
    key = compare_run.compare_key(
        r.experiment,
        r.sweep,
        "labels",
        {"formats": r.formats, "datasets": sorted(set(r.table["dataset"])), "judges": sorted(set(r.table["judge"]))},
    )
    h = r.header()
    note = (
        f"compare report of labels-only runs: {h['selection']}; datasets {h['datasets']}; "
        f"{len(set(r.table['judge']))} judges"
    )
    inputs = {"labels_runs": list(r.runs["run_id"]), "sweeps": list(r.runs["sweep_id"].dropna())}
    run_id, r.superseded = compare_run.log(
        client, r.experiment, r.sweep, key, f"compare-labels/{r.sweep or 'all'}", note, files, inputs, metrics=metrics
    )
    return run_id
