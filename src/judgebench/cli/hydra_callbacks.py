"""Hydra integration for sweeps (``python run.py -m ...``): the submitting side of a grid.

``SweepCallback`` (registered in conf/config.yaml under ``hydra.callbacks``):

- ``on_multirun_start`` (submitting process, before any job exists) clears the outcome records of an
  earlier run of the same sweep directory. Once the sweep's checks passed (``open_sweep_store``, called
  by the sweeper after cli/sweep_preflight.py, or at the first ``on_job_start``), the MLflow store and the
  experiment are created once, so that parallel jobs only ever find them (no race on schema or
  experiment creation), and the sweep's parent run (kind ``sweep``) is started: every cell's run (and a judge
  summary a cell creates)
  nests under it through ``mlflow.parentRunId``, MLflow's own nesting, so the UI shows one row per sweep.
  A dry run (``dry_run=true``) skips all of this: it creates nothing in MLflow.
  The jobs learn its id from the environment (``JUDGEBENCH_PARENT_RUN``), which Hydra's basic launcher,
  submitit's local executor and ``sbatch`` all pass on. A single ``python run.py`` job has no parent.
- ``on_job_end`` runs in the process that ran the job: the submitting process with Hydra's basic
  launcher (``hydra/launcher=local``), the SLURM (or submitit local) job process with the submitit
  launchers, which never call it in the submitting process. It writes one small JSON record per
  cell under ``<sweep dir>/.judgebench/jobs/``: overrides, status (finished | skipped-done |
  skipped-duplicate | dry-run | failed), error, SLURM ids. The sweep directory is shared with the
  jobs anyway (submitit keeps its pickles there).
- ``on_multirun_end`` prints the summary table (cells ran / skipped / failed, with their
  overrides, and the cells that never started, which the sweeper lists in ``.judgebench/planned.json``), writes
  ``<sweep dir>/sweep_summary.json`` and logs it on the parent run, which ends
  FINISHED (FAILED when a cell failed). When a job failed, Hydra's sweeper
  raises before ``on_multirun_end``; the same summary is then printed when the process exits.

The submitit launchers that wait for every job and record the ones that died without a result
are in ``hydra_plugins.judgebench_launcher``; they write the same records through ``write_record``.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from judgebench.identity.run_tags import RunTags

log = logging.getLogger("judgebench.sweep")

RECORDS = ".judgebench/jobs"  # under the sweep directory
PLANNED = ".judgebench/planned.json"  # ... every cell's overrides, in launch order
SUMMARY_FILE = "sweep_summary.json"
_SLURM_ENV = {
    "slurm_job_id": "SLURM_JOB_ID",
    "slurm_array_job_id": "SLURM_ARRAY_JOB_ID",
    "slurm_array_task_id": "SLURM_ARRAY_TASK_ID",
}

# Submitting-process state. Module globals, not callback attributes: the callback object is
# pickled with the launcher into every submitit job, and its attributes would travel with it.
_SWEEP: dict[str, Any] = {
    "dir": None,
    "printed": True,
    "started": 0.0,
    "uri": None,
    "parent": None,
    "experiment": None,
    "pending": None,
}


def sweep_dir(config: DictConfig) -> Path:
    path = Path(str(config.hydra.sweep.dir))
    if not path.is_absolute():  # relative to where run.py was started (jobs may chdir)
        path = Path(str(config.hydra.runtime.cwd)) / path
    return path


def write_json(path: Path, data: Any) -> None:
    from judgebench.secrets import scrub

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(scrub(json.dumps(data, indent=1, default=str)), encoding="utf-8")  # no secret in a record
    tmp.replace(path)  # atomic: the submitter never reads half a record


def short_error(exc: BaseException | str, lines: int = 1, limit: int = 300) -> str:
    """The first ``lines`` lines in at most ``limit`` characters. A longer one loses its middle, not its end: a
    cell's error names the cell (its overrides, long paths) first and the cause last."""
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    kept = " ".join([line.strip() for line in str(text).splitlines() if line.strip()][:lines])
    if len(kept) <= limit:
        return kept
    head = (limit - 3) // 2
    return f"{kept[:head]} … {kept[len(kept) - (limit - 3 - head) :]}"


def _masked(overrides: Sequence[str]) -> list[str]:
    """key=value overrides with secret-looking keys masked, as tracking.mask_secrets does for params."""
    from judgebench.secrets import MASK, is_secret_key, scrub

    out = []
    for o in overrides:
        key, sep, _ = str(o).partition("=")
        out.append(f"{key}={MASK}" if sep and is_secret_key(key) else scrub(str(o)))
    return out


def job_status(job_return: JobReturn) -> tuple[str, str | None]:
    """(status, error) of a JobReturn, without raising the job's exception."""
    if job_return.status == JobStatus.COMPLETED:
        value = job_return._return_value
        return str(getattr(value, "status", value)), None  # run.py returns JobOutcome.status
    if job_return.status == JobStatus.FAILED:
        return "failed", short_error(job_return._return_value)
    return "unknown", None


def write_record(
    directory: Path, num: int, overrides: Sequence[str], status: str, error: str | None = None, **extra: Any
) -> None:
    record = {
        "num": int(num),
        "overrides": _masked(overrides),
        "status": status,
        "error": error,
        "time": time.time(),
        **extra,
    }
    write_json(directory / RECORDS / f"{int(num):05d}.json", record)


def read_records(directory: Path) -> list[dict]:
    records = []
    for path in sorted((directory / RECORDS).glob("*.json")):
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(records, key=lambda r: r["num"])


def record_planned(cells: Sequence[Sequence[str]]) -> None:
    """The sweep's cells in launch order (the sweeper calls this once it knows them), so that the summary can
    name the cells that never started: a sweep stopped by Ctrl-C, a failure or a kill leaves no record of them."""
    if _SWEEP["dir"] is not None:
        write_json(_SWEEP["dir"] / PLANNED, [_masked(cell) for cell in cells])


def read_planned(directory: Path) -> list[list[str]] | None:
    try:
        return json.loads((directory / PLANNED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def category(status: str) -> str:
    if status in ("failed", "unknown", "interrupted"):
        return "failed"
    return "skipped" if status.startswith("skipped") else "ran"


def summarize(directory: Path) -> dict:
    """Counts and per-cell rows of a sweep, from its records; also written to sweep_summary.json."""
    records = read_records(directory)
    counts = {"ran": 0, "skipped": 0, "failed": 0}
    for r in records:
        counts[category(r["status"])] += 1
    planned = read_planned(directory) or []
    started = {r["num"] for r in records}
    not_started = [{"num": num, "overrides": cell} for num, cell in enumerate(planned) if num not in started]
    summary = {
        "sweep_dir": str(directory),
        "cells": len(records) + len(not_started),
        **counts,
        "not_started": len(not_started),
        "jobs": records,
        "never_started": not_started,
    }
    write_json(directory / SUMMARY_FILE, summary)
    return summary


def format_summary(summary: dict) -> str:
    rows = summary["jobs"]
    common = set(rows[0]["overrides"]).intersection(*(r["overrides"] for r in rows[1:])) if len(rows) > 1 else set()
    waiting = summary.get("never_started") or []
    lines = [
        f"judgebench sweep: {summary['cells']} cells - {summary['ran']} ran, {summary['skipped']} skipped, "
        f"{summary['failed']} failed"
        + (f", {len(waiting)} never started" if waiting else "")
        + f" ({summary['sweep_dir']})"
    ]
    if common:
        lines.append("  common overrides: " + " ".join(o for o in rows[0]["overrides"] if o in common))
    width = max([len(r["status"]) for r in rows] + [6])
    jobs = [
        (r.get("slurm_array_job_id") and f"{r['slurm_array_job_id']}_{r.get('slurm_array_task_id')}")
        or r.get("slurm_job_id")
        or r.get("job_id")
        or "-"
        for r in rows
    ]
    show_jobs = any(job != "-" for job in jobs)  # Hydra's basic launcher: no job ids
    for r, job in zip(rows, jobs):
        cells = " ".join(o for o in r["overrides"] if o not in common) or "(no overrides)"
        line = f"  #{r['num']:<3} {r['status']:<{width}}  " + (f"job {job:<10}  " if show_jobs else "") + cells
        if r.get("error"):
            line += f"\n        error: {r['error']}"
            if r.get("log"):
                line += f"\n        log:   {r['log']}"
        lines.append(line)
    if waiting:
        lines.append(never_started_line(waiting, common))
    return "\n".join(lines)


def never_started_line(waiting: list[dict], common: set[str], shown: int = 3) -> str:
    """The cells that never started, the first few with their overrides, and how to run them: the same command
    again, whose finished cells are skipped (force=false), so only these and the failed ones run."""
    nums = " ".join(f"#{w['num']}" for w in waiting[:12]) + (" …" if len(waiting) > 12 else "")
    text = f"  never started ({len(waiting)}): {nums}; rerun the same command to run them (finished cells are skipped)"
    for w in waiting[:shown]:
        text += f"\n        #{w['num']}: " + (
            " ".join(o for o in w["overrides"] if o not in common) or "(no overrides)"
        )
    if len(waiting) > shown:
        text += f"\n        … and {len(waiting) - shown} more in sweep_summary.json"
    return text


def print_summary(directory: Path) -> dict | None:
    summary = summarize(directory)
    if summary["jobs"]:
        print(format_summary(summary), flush=True)
    return summary


def record_interrupted() -> None:
    """Ctrl-C inside a multirun cell: record it (status interrupted), so the summary printed at exit shows it."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
        if hc.mode == RunMode.MULTIRUN and _SWEEP["dir"] is not None:
            write_record(_SWEEP["dir"], hc.job.num, list(hc.overrides.task), "interrupted", "interrupted (Ctrl-C)")
    except Exception:  # never mask the interrupt
        pass


def _print_at_exit() -> None:
    """The sweep raised (a job failed) before on_multirun_end: report anyway."""
    summary = None
    if not _SWEEP["printed"] and _SWEEP["dir"] is not None:
        _SWEEP["printed"] = True
        try:
            summary = print_summary(_SWEEP["dir"])
        except Exception as exc:  # never mask the sweep's own error
            print(f"judgebench: could not summarize the sweep: {exc}")
    if _SWEEP["parent"] is not None:
        end_parent_run(summary, failed=True)


def precreate_experiment(config: DictConfig) -> str | None:
    """Create the MLflow store and experiment before any job starts (skipped when swept)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    overrides = OmegaConf.to_container(config.hydra.overrides.task, resolve=False)
    parsed = OverridesParser.create().parse_overrides(overrides)
    swept = {o.key_or_group.lstrip("+~") for o in parsed if o.is_sweep_override()}
    if swept & {"tracking_uri", "experiment_name", "artifact_root", "experiment"}:
        return None  # each job creates its own; get_or_create_experiment is idempotent
    from hydra.core.hydra_config import HydraConfig

    hydra_config = HydraConfig.instance()
    previous = hydra_config.cfg
    hydra_config.set_config(config)  # ${hydra:runtime.cwd} in the default tracking_uri / artifact_root
    try:
        uri, name, artifact_root = (
            config.get("tracking_uri"),
            config.get("experiment_name"),
            config.get("artifact_root"),
        )
    finally:
        hydra_config.cfg = previous
    if not uri or not name:
        return None
    from judgebench import tracking

    tracking.ensure_sqlite_parent(str(uri))
    client = tracking.MlflowClient(str(uri))
    _SWEEP["uri"] = str(uri)
    exp_id = tracking.get_or_create_experiment(client, str(name), str(artifact_root) if artifact_root else None)
    _SWEEP["experiment"] = exp_id
    tracking.close_dead(client, exp_id, RunTags.where(kind="sweep"))  # a sweep killed with -9 on this host
    return exp_id


def close_runs_of_dead_job(job_id: str) -> list[str]:
    """Mark KILLED the RUNNING MLflow runs of a SLURM job that died without a result (scancel, time limit,
    out of memory, node failure): its Python was killed before it could end them. ``job_id``: submitit's
    ``<array id>_<task>`` or a plain job id."""
    from judgebench import tracking

    uri, exp_id = _SWEEP.get("uri"), _SWEEP.get("experiment")
    if not uri or exp_id is None or not job_id:
        return []
    array, _, task = str(job_id).partition("_")
    match = (
        f"tags.slurm_array_job_id = '{array}' and tags.slurm_array_task_id = '{task}'"
        if task
        else f"tags.slurm_job_id = '{array}'"
    )
    client = tracking.MlflowClient(uri)
    closed = []
    try:
        for r in client.search_runs(
            [exp_id], filter_string=f"{match} and attributes.status = 'RUNNING'", max_results=50
        ):
            client.set_terminated(r.info.run_id, status="KILLED")
            closed.append(r.info.run_id)
    except Exception as exc:  # the sweep's report matters more than the runs' status
        log.warning("could not mark the MLflow runs of job %s KILLED: %s", job_id, short_error(exc))
    return closed


def start_parent_run(config: DictConfig, experiment_id: str) -> str:
    """The sweep's parent run, its id exported for the jobs (see the module docstring)."""
    from judgebench import tracking

    sweep = str(config.get("sweep_id") or config.hydra.sweep.dir)
    overrides = (
        " ".join(_masked(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))) or "(no overrides)"
    )
    name = f"sweep {Path(sweep).parent.name}/{Path(sweep).name}".replace("sweep /", "sweep ")
    note = (
        f"Sweep of experiment {config.experiment_name}: {overrides}; one nested run per cell (sweep dir "
        f"{sweep_dir(config)})"
    )
    run = tracking.JobRun(
        tracking.MlflowClient(_SWEEP["uri"]),
        experiment_id,
        name,
        RunTags(kind="sweep", sweep_id=sweep).to_tags(),
        note=note[:5000],
        parent="",
    )
    os.environ[tracking.PARENT_ENV] = f"{experiment_id}:{run.run_id}"
    _SWEEP["parent"] = run
    return run.run_id


def open_sweep_store() -> None:
    """Create the MLflow experiment and start the sweep's parent run, once per sweep, in the submitting process,
    after the sweep's checks (the sweeper calls this once cli/sweep_preflight.py passed, before any cell starts).
    Why not at ``on_multirun_start``: a sweep refused by its checks must leave nothing in MLflow (no parent run
    RUNNING or FAILED) and say so in seconds, without importing MLflow or creating the store first."""
    config, _SWEEP["pending"] = _SWEEP.get("pending"), None
    if config is None:
        return
    try:
        exp_id = precreate_experiment(config)
        if exp_id is not None:
            log.info("MLflow experiment %s (id %s) ready before the jobs start", config.experiment_name, exp_id)
            start_parent_run(config, exp_id)
    except Exception as exc:  # the jobs still get_or_create it themselves
        log.warning("could not create the MLflow experiment before the sweep: %s", short_error(exc))


def end_parent_run(summary: dict | None, failed: bool = False) -> None:
    """Log the sweep summary on the parent run and end it (FAILED when a cell failed or the sweep raised)."""
    from judgebench import tracking

    run, _SWEEP["parent"] = _SWEEP["parent"], None
    os.environ.pop(tracking.PARENT_ENV, None)
    if run is None:
        return
    try:
        if summary is not None:
            run.set_tags(RunTags(cells=summary["cells"], failed=summary["failed"]).to_tags())
            run.log_files({SUMMARY_FILE: json.dumps(summary, indent=1, default=str)})
        run.finish("FAILED" if failed or summary is None or summary["failed"] else "FINISHED")
    except Exception as exc:  # the sweep's own outcome matters more than its parent run
        log.warning("could not close the sweep's MLflow parent run: %s", short_error(exc))


class SweepCallback(Callback):
    def __init__(self, summary: bool = True, create_experiment: bool = True) -> None:
        self.summary = summary
        self.create_experiment = create_experiment

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        directory = sweep_dir(config)
        for old in (directory / RECORDS).glob("*.json"):
            old.unlink(missing_ok=True)  # a rerun of the same sweep directory reports afresh
        (directory / PLANNED).unlink(missing_ok=True)
        if config.get("dry_run"):
            from judgebench.jobs import dry_run_total

            dry_run_total.clear(directory)
        _SWEEP.update(dir=directory, printed=not self.summary, started=time.perf_counter())
        atexit.register(_print_at_exit)  # prints only when summary is on; always closes the parent run
        # a dry run creates nothing in MLflow; a sweep opens its store once its checks passed (open_sweep_store)
        _SWEEP["pending"] = config if self.create_experiment and not config.get("dry_run") else None

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        open_sweep_store()  # a sweeper that did not open it after its checks (judgebench's does): before the first cell

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        from hydra.types import RunMode

        if config.hydra.mode != RunMode.MULTIRUN:
            return
        status, error = job_status(job_return)
        extra = {k: os.environ[v] for k, v in _SLURM_ENV.items() if os.environ.get(v)}
        job_id = str(OmegaConf.select(config, "hydra.job.id", default="") or "")
        if job_id and job_id != str(config.hydra.job.num) and not job_id.startswith("job_id_for_"):
            extra["job_id"] = job_id  # submitit's "<array id>_<task>" or pid; Hydra's basic launcher has none
        overrides = list(job_return.overrides or OmegaConf.to_container(config.hydra.overrides.task))
        write_record(sweep_dir(config), config.hydra.job.num, overrides, status, error, **extra)
        if status == "dry-run":  # its counts, for the sweep's total (jobs/dry_run_total.py)
            from judgebench.jobs import dry_run_total

            dry_run_total.save_cell(
                sweep_dir(config), config.hydra.job.num, OmegaConf.select(config, "dataset.name", default=None)
            )

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        summary = None
        if self.summary and not _SWEEP["printed"]:
            _SWEEP["printed"] = True
            summary = print_summary(sweep_dir(config))
            if config.get("dry_run"):
                from judgebench.jobs import dry_run_total

                dry_run_total.print_total(sweep_dir(config))
            log.info("sweep done in %.1fs", time.perf_counter() - _SWEEP["started"])
        if _SWEEP["parent"] is not None:
            end_parent_run(summary or summarize(sweep_dir(config)))
