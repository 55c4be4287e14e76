"""The compare run in MLflow: what it read (inputs.json, tags) and one run per selection, not a pile of copies.

A compare run is keyed by ``judgebench.compare_key``, a hash of the experiment, the sweep, the kind of
report and every option: rerunning compare on the same selection marks the previous run
``judgebench.superseded_by=<new run>`` and deletes it (MLflow's soft delete: hidden from the runs
table, restorable with ``mlflow.tracking.MlflowClient().restore_run``), so the table keeps one
compare run per selection, the latest. A compare of one sweep nests under that sweep's parent run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mlflow.tracking import MlflowClient

from judgebench.identity.run_tags import RunTags
from judgebench.tracking import job_run

KIND = "compare"
PARAM_MAX, NOTE_MAX = 6000, 4000  # MLflow refuses a param over 6000 characters, a tag over 8000: names can be longer


def _short(value: Any, limit: int) -> str:
    """A param or note cut to ``limit`` characters, saying so (the report files, logged beside, hold everything)."""
    text = str(value)
    if len(text) <= limit:
        return text
    tail = f" ... (cut from {len(text)} characters: the report has them all)"
    return text[: limit - len(tail)] + tail


def compare_key(experiment: str, sweep: str | None, report_kind: str, options: Any) -> str:
    opts = dataclasses.asdict(options) if dataclasses.is_dataclass(options) else dict(options or {})
    text = json.dumps(
        {"experiment": experiment, "sweep": sweep, "report": report_kind, "options": opts}, sort_keys=True, default=str
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _sweep_parent(client: MlflowClient, exp_id: str, sweep: str | None) -> str:
    """The parent run of the selected sweep, "" (top level) when none or no sweep was selected."""
    if not sweep:
        return ""
    runs = client.search_runs([exp_id], filter_string=RunTags.where(kind="sweep"), max_results=1000)
    return next((r.info.run_id for r in runs if RunTags.from_tags(r.data.tags).sweep_id == sweep), "")


def log(
    client: MlflowClient,
    experiment: str,
    sweep: str | None,
    key: str,
    name: str,
    note: str,
    files: Iterable[Path],
    inputs: Mapping[str, list[str]],
    params: Mapping[str, Any] | None = None,
    metrics: Mapping[str, float] | None = None,
) -> tuple[str, list[str]]:
    """(the new compare run's id, the ids of the earlier runs of this selection it superseded)."""
    exp_id = client.get_experiment_by_name(experiment).experiment_id
    previous = client.search_runs([exp_id], filter_string=RunTags.where(kind=KIND, compare_key=key), max_results=1000)
    read = {k: sorted(set(v)) for k, v in inputs.items()}
    sweeps = read.get("sweeps", [])
    tags = RunTags(
        kind=KIND,
        sweep_id=sweep or "all",
        compare_key=key,
        git_commit=job_run.git_commit(),
        inputs=", ".join(f"{len(v)} {k}" for k, v in read.items()),
        input_sweeps=", ".join(sweeps)[:4000],
    ).to_tags()
    run = job_run.JobRun(
        client, exp_id, name, tags, note=_short(note, NOTE_MAX), parent=_sweep_parent(client, exp_id, sweep)
    )
    try:
        if params:
            run.log_params({k: _short(v, PARAM_MAX) for k, v in params.items()})
        if metrics:
            run.log_metrics(metrics)
        run.log_files(
            {
                "inputs.json": json.dumps(
                    {"experiment": experiment, "sweep": sweep, "compare_key": key, **read}, indent=1
                )
            }
        )
        for f in files:
            client.log_artifact(run.run_id, str(f))
    except BaseException:
        run.finish("FAILED")
        raise
    run.finish()
    superseded = [r.info.run_id for r in previous]
    for old in superseded:
        client.set_tag(old, RunTags.name("superseded_by"), run.run_id)
        client.delete_run(old)
    return run.run_id, superseded
