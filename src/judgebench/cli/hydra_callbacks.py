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

This module holds the callback that the config names and the hooks it owns; the records and the summary are
cli/sweep_records.py, the MLflow side (store, experiment, parent run) cli/sweep_store.py, and the submitting
process's state of the sweep cli/sweep_state.py.
"""

from __future__ import annotations

import atexit
import logging
import os
import time
from collections.abc import Sequence
from typing import Any

from hydra.core.utils import JobReturn
from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from judgebench.cli.sweep_records import (
    PLANNED,
    RECORDS,
    job_status,
    masked,
    print_summary,
    summarize,
    sweep_dir,
    write_json,
    write_record,
)
from judgebench.cli.sweep_state import SWEEP
from judgebench.cli.sweep_store import end_parent_run, open_sweep_store

log = logging.getLogger("judgebench.sweep")

_SLURM_ENV = {
    "slurm_job_id": "SLURM_JOB_ID",
    "slurm_array_job_id": "SLURM_ARRAY_JOB_ID",
    "slurm_array_task_id": "SLURM_ARRAY_TASK_ID",
}


def record_planned(cells: Sequence[Sequence[str]]) -> None:
    """The sweep's cells in launch order (the sweeper calls this once it knows them), so that the summary can
    name the cells that never started: a sweep stopped by Ctrl-C, a failure or a kill leaves no record of them."""
    if SWEEP["dir"] is not None:
        write_json(SWEEP["dir"] / PLANNED, [masked(cell) for cell in cells])


def record_interrupted() -> None:
    """Ctrl-C inside a multirun cell: record it (status interrupted), so the summary printed at exit shows it."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode

        hc = HydraConfig.get()
        if hc.mode == RunMode.MULTIRUN and SWEEP["dir"] is not None:
            write_record(SWEEP["dir"], hc.job.num, list(hc.overrides.task), "interrupted", "interrupted (Ctrl-C)")
    except Exception:  # never mask the interrupt
        pass


def _print_at_exit() -> None:
    """The sweep raised (a job failed) before on_multirun_end: report anyway."""
    summary = None
    if not SWEEP["printed"] and SWEEP["dir"] is not None:
        SWEEP["printed"] = True
        try:
            summary = print_summary(SWEEP["dir"])
        except Exception as exc:  # never mask the sweep's own error
            print(f"judgebench: could not summarize the sweep: {exc}")
    if SWEEP["parent"] is not None:
        end_parent_run(summary, failed=True)


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
        SWEEP.update(dir=directory, printed=not self.summary, started=time.perf_counter())
        atexit.register(_print_at_exit)  # prints only when summary is on; always closes the parent run
        # a dry run creates nothing in MLflow; a sweep opens its store once its checks passed (open_sweep_store)
        SWEEP["pending"] = config if self.create_experiment and not config.get("dry_run") else None

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
        if self.summary and not SWEEP["printed"]:
            SWEEP["printed"] = True
            summary = print_summary(sweep_dir(config))
            if config.get("dry_run"):
                from judgebench.jobs import dry_run_total

                dry_run_total.print_total(sweep_dir(config))
            log.info("sweep done in %.1fs", time.perf_counter() - SWEEP["started"])
        if SWEEP["parent"] is not None:
            end_parent_run(summary or summarize(sweep_dir(config)))
