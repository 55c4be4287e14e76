"""The one skeleton of a job that logs a run (a grid cell, a labels-only job, the content-bias job): find it done
and skip it, or plan it in a dry run, or check its API backends, open its run, do the work, close the run.

Why one: each job used to repeat these steps, and one of them (content bias) opened its run only after the work
and had no resume, so a finished content-bias job was run again. Here the order is the same for every job: a
finished run with the same resume key is found before anything is built or asked, a dry run asks nothing (its
backends are listed as not checked), each API backend answers before any work, and the run is open while the work
runs, so a failure ends it FAILED (or KILLED) instead of leaving nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from judgebench.checks import offline_checks, preflight
from judgebench.data.datasets import Dataset
from judgebench.jobs.cell import CellSettings
from judgebench.jobs.common import JobOutcome, find_done, open_job_run
from judgebench.tracking import job_run


@dataclass(frozen=True)
class RunOpening:
    """What the job's MLflow run is opened with (``open_job_run``): its name, tags and note, the config it logs as
    params (a DictConfig or its resolved tree), and the dataset it logs as its input."""

    name: str
    tags: dict[str, str]
    note: str
    logged: Any
    cache_dir: str | None
    dataset: Dataset


@dataclass(frozen=True)
class OpenRun:
    """What the work is given: the open run, the store it lives in, the logged config as a container, and the param
    values too long for MLflow (the work logs them as files, ``params/<name>.txt``)."""

    job: job_run.JobRun
    client: Any
    experiment_id: str
    config: dict
    long_values: dict[str, str]


@dataclass(frozen=True)
class JobSteps:
    """One job's own parts of the skeleton.

    ``label`` names the job in its outcome (the grid cell's system, ``labels``, ``content_bias``); ``where`` in the
    resume messages. ``api_parts`` are the components whose API backends a dry run lists as not checked
    (``judge=``, ``rewriter=``, ``ranker=``). ``plan`` is the dry run (asks nothing); ``check`` the preflight (each
    API backend answers before any work); ``opening`` what the run is opened with; ``work`` does the work in the
    open run, logs its metrics and files and returns the metrics (an exception ends the run FAILED); ``finished``
    says the job's result once its run is closed."""

    label: str
    where: str
    config_hash: str
    settings: CellSettings
    api_parts: dict[str, Any]
    plan: Callable[[], JobOutcome]
    check: Callable[[], None]
    opening: Callable[[], RunOpening]
    work: Callable[[OpenRun], dict]
    finished: Callable[[dict], None]


def run_steps(steps: JobSteps) -> JobOutcome:
    """Skip a finished job, plan a dry run, or check, open, work, close; the outcome says which."""
    done, store = find_done(steps.settings.store, steps.settings.dry_run, steps.config_hash, steps.where)
    if done:
        return JobOutcome("skipped-done", steps.label, run_id=done)
    if store is None:  # offline: no lookup, what it would have asked is listed as not checked
        offline_checks.note(preflight.api_backends(**steps.api_parts))
        return steps.plan()
    steps.check()
    client, exp_id = store
    opening = steps.opening()
    job, config, long_values = open_job_run(
        client, exp_id, opening.name, opening.tags, opening.note, opening.logged, opening.cache_dir, opening.dataset
    )
    try:
        metrics = steps.work(OpenRun(job, client, exp_id, config, long_values))
        job.finish("FINISHED")
    except BaseException as exc:
        job.fail(exc)
        raise
    steps.finished(metrics)
    return JobOutcome("finished", steps.label, run_id=job.run_id, metrics=metrics)
