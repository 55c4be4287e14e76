"""One MLflow run per job, as MLflow's UI reads it: its own tags (source, git commit, note, parent run), the job's
params, metrics, artifacts and dataset input, and an end that says how the job ended.

We talk to MLflow through an explicit MlflowClient, never the global fluent state, so that several jobs in one
process (a local Hydra multirun) cannot leak runs into each other. A run nests under its sweep's parent run
(``mlflow.parentRunId``, found through ``PARENT_ENV``), records where its process lives, so that a later job can
close the RUNNING run of a process that was killed (``close_dead``), and every value it logs is scrubbed of secrets.
"""

from __future__ import annotations

import functools
import logging
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.tracking import MlflowClient
from mlflow.utils import mlflow_tags

from judgebench.identity.run_tags import RunTags
from judgebench.secrets import scrub
from judgebench.tracking.retries import retry

log = logging.getLogger("judgebench")


@functools.lru_cache(maxsize=8)
def git_commit(cwd: str | Path = Path(__file__).parent) -> str:
    """The commit of the judgebench checkout (not of wherever run.py was started); "unknown" for an installed
    package, also one in a venv inside some other repository (whose commit says nothing about this code).
    Once per process: the code a process runs is the code it imported (each call ran git twice, in every run)."""
    try:
        tracked = subprocess.run(
            ["git", "ls-files", "--error-unmatch", str(Path(__file__).resolve())],
            cwd=cwd,
            capture_output=True,
            timeout=5,
        )
        if tracked.returncode != 0:
            return "unknown"
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


PARENT_ENV = "JUDGEBENCH_PARENT_RUN"  # "<experiment id>:<run id>" of the sweep's parent run, set by the sweep


def parent_run_id(experiment_id: str) -> str | None:
    """The sweep's parent run when this process runs a cell of a sweep in the same experiment."""
    exp, _, run = os.environ.get(PARENT_ENV, "").partition(":")
    return run if run and exp == str(experiment_id) else None


def standard_tags(note: str | None = None, parent: str | None = None) -> dict[str, str]:
    """MLflow's own tags: user and source (MLflow's context providers), git commit, note, parent."""
    from mlflow.tracking.context.registry import resolve_tags

    tags = resolve_tags({mlflow_tags.MLFLOW_GIT_COMMIT: git_commit()})
    if note:
        tags[mlflow_tags.MLFLOW_RUN_NOTE] = note
    if parent:
        tags[mlflow_tags.MLFLOW_PARENT_RUN_ID] = parent
    return tags


class JobRun:
    """One MLflow run for one grid cell; FAILED unless finish() is reached. ``note`` is the one-line
    description the UI shows; the run nests under the sweep's parent run when there is one."""

    def __init__(
        self,
        client: MlflowClient,
        experiment_id: str,
        run_name: str,
        tags: Mapping[str, str],
        note: str | None = None,
        parent: str | None = None,
    ):
        self.client = client
        parent = parent_run_id(experiment_id) if parent is None else parent  # "": top level
        tags = {k: scrub(str(v)) for k, v in {**standard_tags(note, parent), **process_tags(), **tags}.items()}
        self.run = retry(lambda: client.create_run(experiment_id, run_name=scrub(run_name), tags=tags))
        self.run_id = self.run.info.run_id
        self._measured = False  # a metric logged: the run holds work (fail() keeps it)
        self._stored_at_start = _answers_stored()

    def log_params(self, params: Mapping[str, Any]) -> None:
        items = [Param(k, scrub(str(v))) for k, v in params.items()]
        for i in range(0, len(items), 100):
            retry(lambda: self.client.log_batch(self.run_id, params=items[i : i + 100]))

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        self._measured = True
        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, 0) for k, v in metrics.items() if v is not None]
        for i in range(0, len(items), 500):
            retry(lambda: self.client.log_batch(self.run_id, metrics=items[i : i + 500]))

    def log_params_and_metrics(self, params: Mapping[str, Any], metrics: Mapping[str, float]) -> None:
        """Up to 100 params and 900 metrics in one write (one transaction): for jobs that log many small runs."""
        self._measured = True
        now = int(time.time() * 1000)
        items = [Param(k, scrub(str(v))) for k, v in params.items()]
        values = [Metric(k, float(v), now, 0) for k, v in metrics.items() if v is not None]
        if len(items) > 100 or len(values) > 900:
            self.log_params(params)
            self.log_metrics(metrics)
            return
        retry(lambda: self.client.log_batch(self.run_id, metrics=values, params=items))

    def set_tags(self, tags: Mapping[str, Any], metrics: Mapping[str, float] | None = None) -> None:
        """Tags (and up to 1,000 ``metrics``) in one write: each write is a transaction of its own."""
        now = int(time.time() * 1000)
        self._measured = self._measured or bool(metrics)
        values = [Metric(k, float(v), now, 0) for k, v in (metrics or {}).items() if v is not None]
        if len(values) > 1000:
            self.log_metrics(metrics or {})
            values = []
        retry(
            lambda: self.client.log_batch(
                self.run_id, metrics=values, tags=[RunTag(k, scrub(str(v))) for k, v in tags.items()]
            )
        )

    def log_files(self, files: Mapping[str, str | bytes]) -> None:
        """Text artifacts are scrubbed of every secret value the process knows (a server may echo a key)."""
        with tempfile.TemporaryDirectory() as tmp:
            for name, content in files.items():
                path = Path(tmp) / name
                path.parent.mkdir(parents=True, exist_ok=True)
                if isinstance(content, bytes):
                    path.write_bytes(content)
                else:
                    path.write_text(scrub(content), encoding="utf-8")
            self.client.log_artifacts(self.run_id, tmp)

    def log_dataset(self, name: str, frame, source: str, digest: str, context: str = "label_set") -> None:
        """The dataset as an MLflow dataset input (the UI's Dataset column): name, digest of its input
        files, source, and the schema and size of ``frame`` (the pairs the judges label)."""
        import warnings

        import mlflow.data

        with warnings.catch_warnings():  # MLflow's hints on integer columns (no label is missing) and on local sources
            warnings.simplefilter("ignore")
            entity = mlflow.data.from_pandas(frame, source=source, name=name, digest=digest)._to_mlflow_entity()
        tags = [InputTag(mlflow_tags.MLFLOW_DATASET_CONTEXT, context)]
        retry(lambda: self.client.log_inputs(self.run_id, datasets=[DatasetInput(entity, tags)]))

    def finish(self, status: str = "FINISHED") -> None:
        retry(lambda: self.client.set_terminated(self.run_id, status=status))

    def fail(self, exc: BaseException) -> None:
        """End the run as the exception says: KILLED when the job was stopped (Ctrl-C, SIGTERM, a SLURM time
        limit's requeue exit), FAILED when it broke. Never left RUNNING by an exception.

        A run that failed on bad input (a DataError or ConfigError) before any work (no metric logged, no model
        answer stored by this process since it opened) is deleted instead: it holds nothing but the error, which
        the terminal said, and MLflow keeps it in its trash (``mlflow gc`` removes it; docs/tracking.md)."""
        from judgebench.exceptions import ConfigError, DataError

        if (
            isinstance(exc, (DataError, ConfigError))
            and not self._measured
            and _answers_stored() == self._stored_at_start
        ):
            try:
                retry(lambda: self.client.delete_run(self.run_id))
                return
            except Exception as error:  # the run's status then says FAILED, as before
                log.debug("could not delete run %s: %s", self.run_id, error)
        self.finish(terminal_status(exc))


def _answers_stored() -> int:
    """Model answers this process has written to the call cache so far."""
    from judgebench.cache.store import STORED

    return sum(STORED.values())


def terminal_status(exc: BaseException) -> str:
    return "KILLED" if isinstance(exc, (KeyboardInterrupt, SystemExit)) else "FAILED"


def process_tags() -> dict[str, str]:
    """Where the run's process lives: a later run on this host can tell a dead one's RUNNING run from a live one."""
    return RunTags(host=socket.gethostname(), pid=str(os.getpid())).to_tags()


def close_dead(client: MlflowClient, experiment_id: str, filter_string: str) -> list[str]:
    """Mark KILLED the RUNNING runs matching ``filter_string`` whose process (by host and pid tags) is gone on
    this host: a job killed with SIGKILL (OOM, kill -9) cannot end its own run."""
    here, closed = socket.gethostname(), []
    for r in client.search_runs(
        [experiment_id], filter_string=f"{filter_string} and attributes.status = 'RUNNING'", max_results=200
    ):
        tags = RunTags.from_tags(r.data.tags)
        if tags.host != here or not (tags.pid or "").isdigit():
            continue
        try:
            os.kill(int(tags.pid), 0)
            continue  # alive (or another process with that pid: left alone)
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        retry(lambda: client.set_terminated(r.info.run_id, status="KILLED"))
        closed.append(r.info.run_id)
    if closed:
        log.info("marked %d run(s) of dead processes KILLED: %s", len(closed), ", ".join(closed))
    return closed
