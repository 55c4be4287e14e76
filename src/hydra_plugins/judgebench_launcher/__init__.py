"""judgebench's submitit launchers (conf/hydra/launcher/slurm.yaml, slurm_gpu.yaml, local_parallel.yaml).

A fork of hydra-submitit-launcher 1.2.0 (``hydra_plugins.hydra_submitit_launcher``), limited to one
method: ``BaseSubmititLauncher.launch`` (the submitting side) is replaced by ``WaitForAllJobs.launch``.
Everything else (the launcher and queue configs, ``setup``, the job side ``__call__``, ``checkpoint``)
is the library's, inherited through ``LocalLauncher`` / ``SlurmLauncher``. What the fork changes:

- Results are gathered by ``WaitForAllJobs._collect``, which waits for every job and reports each.
  The stock ``launch`` returns ``[j.results()[0] for j in jobs]``: it raises at the first job that
  died without a result (scancel, time limit, OOM, node failure, kill -9), leaving the others
  running and unreported. Here such a job becomes a failed JobReturn carrying the scheduler's state,
  and gets an outcome record like the others (``judgebench.cli.sweep_records.write_record``). A job
  whose Python task raised comes back from SLURM as COMPLETED, with a FAILED JobReturn inside.
- ``JUDGEBENCH_JOB_PYTHON`` (when set) is passed to the executor as ``<cluster>_python``, to run the
  jobs with another interpreter than the submitting one.
- It logs the submitted job ids before waiting.
- The MLflow runs a dead job left RUNNING are marked KILLED (``close_runs_of_dead_job``).
- Launcher fields that interpolate the job's own config (``slurm_gpu``'s ``mem_gb: ${model_memory_gb:32}``:
  the memory of the cell's models) are resolved per job, and jobs that need different values go into
  separate job arrays (:func:`group_by_settings`); the stock launcher resolves them once for the whole sweep.

Hydra instantiates launchers only from classes defined in the ``hydra_plugins`` package, so the
classes live here.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import OmegaConf

from hydra_plugins.hydra_submitit_launcher.submitit_launcher import LocalLauncher, SlurmLauncher
from judgebench.cli.sweep_records import (
    RECORDS,
    job_status,
    masked,
    short_error,
    sweep_dir,
    write_json,
    write_record,
)
from judgebench.cli.sweep_store import close_runs_of_dead_job
from judgebench.errors import PREFIX, CellError, scrub

log = logging.getLogger("judgebench.sweep")


class WaitForAllJobs:
    """Mixin for hydra-submitit-launcher's BaseSubmititLauncher (provides params, config, _EXECUTOR)."""

    def launch(self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int) -> Sequence[JobReturn]:
        # hydra-submitit-launcher 1.2.0's BaseSubmititLauncher.launch(), except where marked.
        import submitit
        from hydra.core.singleton import Singleton
        from hydra.core.utils import filter_overrides

        from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

        assert self.config is not None
        assert len(job_overrides) > 0
        init_params = {"folder": self.params["submitit_folder"]}
        specific_init_keys = {"max_num_timeout"}
        init_params.update({f"{self._EXECUTOR}_{k}": v for k, v in self.params.items() if k in specific_init_keys})
        if os.environ.get("JUDGEBENCH_JOB_PYTHON"):  # changed: the jobs' interpreter
            init_params[f"{self._EXECUTOR}_python"] = os.environ["JUDGEBENCH_JOB_PYTHON"]
        executor = submitit.AutoExecutor(cluster=self._EXECUTOR, **init_params)
        baseparams = set(OmegaConf.structured(BaseQueueConf).keys())
        params = {
            k if k in baseparams else f"{self._EXECUTOR}_{k}": v
            for k, v in self.params.items()
            if k not in specific_init_keys | {"submitit_folder"}
        }
        executor.update_parameters(**params)
        per_job = [k for k in per_job_fields(self.config) if k not in specific_init_keys | {"submitit_folder"}]

        directory = Path(str(self.config.hydra.sweep.dir))
        directory.mkdir(parents=True, exist_ok=True)
        if "mode" in self.config.hydra.sweep:
            os.chmod(directory, mode=int(str(self.config.hydra.sweep.mode), 8))
        log.info(f"Submitit '{self._EXECUTOR}' sweep output dir : {directory}")
        job_params = []
        for idx, overrides in enumerate(job_overrides, start=initial_job_idx):
            log.info(f"\t#{idx} : {' '.join(filter_overrides(overrides))}")
            job_params.append((list(overrides), "hydra.sweep.dir", idx, f"job_id_for_{idx}", Singleton.get_state()))

        if per_job:  # changed: one array per distinct value of the fields that follow the job's config
            settings = [self._job_settings(per_job, overrides) for overrides in job_overrides]
            jobs = [None] * len(job_params)
            for values, members in group_by_settings(settings):
                executor.update_parameters(
                    **{k if k in baseparams else f"{self._EXECUTOR}_{k}": v for k, v in values.items()}
                )
                log.info("%d cells with %s", len(members), " ".join(f"{k}={v}" for k, v in values.items()))
                for i, job in zip(members, executor.map_array(self, *zip(*[job_params[i] for i in members]))):
                    jobs[i] = job
        else:
            jobs = executor.map_array(self, *zip(*job_params))
        # changed from here: log the ids, then wait for every job (_collect) instead of j.results()[0]
        ids = ", ".join(j.job_id for j in jobs[:4]) + (", ..." if len(jobs) > 4 else "")
        log.info("submitted %d jobs (%s); waiting for all of them", len(jobs), ids)
        records = sweep_dir(self.config)
        nums = range(initial_job_idx, initial_job_idx + len(jobs))
        return [self._collect(job, list(ov), num, records) for num, ov, job in zip(nums, job_overrides, jobs)]

    def _job_settings(self, fields: list[str], overrides: Sequence[str]) -> dict[str, Any]:
        """The launcher fields ``fields`` resolved against one job's config (composed as the job will compose it)."""
        job_cfg = self.hydra_context.config_loader.load_sweep_config(self.config, list(overrides))
        return {k: job_cfg.hydra.launcher[k] for k in fields}

    @staticmethod
    def _collect(job: Any, overrides: list[str], num: int, directory: Path) -> JobReturn:
        record = directory / RECORDS / f"{num:05d}.json"
        try:
            ret = job.results()[0]
        except Exception as exc:  # died without a result: scancel, time limit, OOM, kill -9, node failure
            try:
                state = job.state
            except Exception:
                state = "UNKNOWN"
            error = f"[{state}] {short_error(exc, lines=2)}"
            line = (
                f"{PREFIX}cell #{num} ({' '.join(masked(overrides)) or 'no overrides'}): died without a result: {error}"
            )
            ret = JobReturn(
                overrides=overrides, status=JobStatus.FAILED, _return_value=CellError(scrub(line))
            )  # one line, exit 2
            write_record(
                directory, num, overrides, "failed", error, job_id=job.job_id, state=state, log=str(job.paths.stderr)
            )
            close_runs_of_dead_job(job.job_id)  # changed: its MLflow run ends KILLED, not RUNNING for ever
            log.error("job %s (#%d %s) died without a result: %s", job.job_id, num, " ".join(overrides), state)
            return ret
        if not record.exists():  # no SweepCallback in the job (removed from hydra.callbacks)
            status, error = job_status(ret)
            write_record(directory, num, overrides, status, error, job_id=job.job_id)
        elif ret.status == JobStatus.FAILED:
            data = json.loads(record.read_text(encoding="utf-8"))
            data["log"] = str(job.paths.stderr)
            write_json(record, data)
        return ret


def per_job_fields(config: Any) -> list[str]:
    """Launcher fields whose value is an interpolation (e.g. ``mem_gb: ${model_memory_gb:32}``), resolved per job."""
    launcher = config.hydra.launcher
    return [k for k in launcher if k != "_target_" and OmegaConf.is_interpolation(launcher, k)]


def group_by_settings(settings: Sequence[dict[str, Any]]) -> list[tuple[dict[str, Any], list[int]]]:
    """Job indices grouped by equal settings, in order of first appearance: one job array per group."""
    groups: dict[tuple, tuple[dict[str, Any], list[int]]] = {}
    for i, values in enumerate(settings):
        groups.setdefault(tuple(sorted(values.items())), (dict(values), []))[1].append(i)
    return list(groups.values())


class SubmititSlurmLauncher(WaitForAllJobs, SlurmLauncher):
    _EXECUTOR = "slurm"


class SubmititLocalLauncher(WaitForAllJobs, LocalLauncher):
    _EXECUTOR = "local"
