"""A sweep's side in MLflow, from the submitting process: the store and the experiment created once before any cell
runs, the sweep's parent run that every cell's run nests under, and the runs of SLURM jobs that died closed.

Created once by the submitter, so that parallel jobs only ever find the store and the experiment (no race on schema
or experiment creation); opened only after the sweep's checks passed (cli/sweep_preflight.py), so a refused sweep
leaves nothing in MLflow. The jobs learn the parent run's id from the environment (``JUDGEBENCH_PARENT_RUN``).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from judgebench.cli.sweep_records import SUMMARY_FILE, masked, short_error, sweep_dir
from judgebench.cli.sweep_state import SWEEP
from judgebench.identity.run_tags import RunTags

log = logging.getLogger("judgebench.sweep")


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
    from mlflow.tracking import MlflowClient

    from judgebench.tracking import job_run, mlflow_store

    mlflow_store.ensure_sqlite_parent(str(uri))
    client = MlflowClient(str(uri))
    SWEEP["uri"] = str(uri)
    exp_id = mlflow_store.get_or_create_experiment(client, str(name), str(artifact_root) if artifact_root else None)
    SWEEP["experiment"] = exp_id
    job_run.close_dead(client, exp_id, RunTags.where(kind="sweep"))  # a sweep killed with -9 on this host
    return exp_id


def close_runs_of_dead_job(job_id: str) -> list[str]:
    """Mark KILLED the RUNNING MLflow runs of a SLURM job that died without a result (scancel, time limit,
    out of memory, node failure): its Python was killed before it could end them. ``job_id``: submitit's
    ``<array id>_<task>`` or a plain job id."""
    from mlflow.tracking import MlflowClient

    uri, exp_id = SWEEP.get("uri"), SWEEP.get("experiment")
    if not uri or exp_id is None or not job_id:
        return []
    array, _, task = str(job_id).partition("_")
    match = (
        f"tags.slurm_array_job_id = '{array}' and tags.slurm_array_task_id = '{task}'"
        if task
        else f"tags.slurm_job_id = '{array}'"
    )
    client = MlflowClient(uri)
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
    from mlflow.tracking import MlflowClient

    from judgebench.tracking import job_run

    sweep = str(config.get("sweep_id") or config.hydra.sweep.dir)
    overrides = " ".join(masked(OmegaConf.to_container(config.hydra.overrides.task, resolve=False))) or "(no overrides)"
    name = f"sweep {Path(sweep).parent.name}/{Path(sweep).name}".replace("sweep /", "sweep ")
    note = (
        f"Sweep of experiment {config.experiment_name}: {overrides}; one nested run per cell (sweep dir "
        f"{sweep_dir(config)})"
    )
    run = job_run.JobRun(
        MlflowClient(SWEEP["uri"]),
        experiment_id,
        name,
        RunTags(kind="sweep", sweep_id=sweep).to_tags(),
        note=note[:5000],
        parent="",
    )
    os.environ[job_run.PARENT_ENV] = f"{experiment_id}:{run.run_id}"
    SWEEP["parent"] = run
    return run.run_id


def open_sweep_store() -> None:
    """Create the MLflow experiment and start the sweep's parent run, once per sweep, in the submitting process,
    after the sweep's checks (the sweeper calls this once cli/sweep_preflight.py passed, before any cell starts).
    Why not at ``on_multirun_start``: a sweep refused by its checks must leave nothing in MLflow (no parent run
    RUNNING or FAILED) and say so in seconds, without importing MLflow or creating the store first."""
    config, SWEEP["pending"] = SWEEP.get("pending"), None
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

    from judgebench.tracking import job_run

    run, SWEEP["parent"] = SWEEP["parent"], None
    os.environ.pop(job_run.PARENT_ENV, None)
    if run is None:
        return
    try:
        if summary is not None:
            run.set_tags(RunTags(cells=summary["cells"], failed=summary["failed"]).to_tags())
            run.log_files({SUMMARY_FILE: json.dumps(summary, indent=1, default=str)})
        run.finish("FAILED" if failed or summary is None or summary["failed"] else "FINISHED")
    except Exception as exc:  # the sweep's own outcome matters more than its parent run
        log.warning("could not close the sweep's MLflow parent run: %s", short_error(exc))
