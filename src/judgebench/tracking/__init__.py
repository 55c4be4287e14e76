"""The MLflow logging contract (docs/tracking.md): one run per job, found later by experiment and tags.

We talk to MLflow through an explicit MlflowClient, never the global fluent state, so that
several jobs in one process (a local Hydra multirun) cannot leak runs into each other. Runs follow
MLflow's conventions so that its UI reads them: MLflow's own tags (``mlflow.source.*``, git commit,
a one-line ``mlflow.note.content``, ``mlflow.parentRunId`` under a sweep's parent run), the dataset as
a dataset input, params that define the cell only (the full config is the ``config.yaml`` artifact).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlflow.entities import DatasetInput, InputTag, Metric, Param, RunTag
from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from mlflow.utils import mlflow_tags
from tenacity import (
    Retrying,
    retry_if_exception,
    retry_if_result,
    stop_after_attempt,
    wait_exponential,
    wait_incrementing,
)

from judgebench.checks.store_writable import check_sqlite_writable
from judgebench.identity import PACING
from judgebench.identity.run_tags import RunTags
from judgebench.secrets import MASK, SECRET_KEY, mask_secrets, scrub  # noqa: F401  (re-exported)
from judgebench.tracking import artifact_store

log = logging.getLogger("judgebench")

PARAM_MAX = 500  # longer values (prompts, path lists) go to artifacts, not params

EXPERIMENT_KIND, CLASSIC_ML = "mlflow.experimentKind", "custom_model_development"  # MLflow UI's experiment kinds


def flatten(tree: Mapping, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in tree.items():
        name = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(flatten(v, f"{name}."))
        else:
            out[name] = v
    return out


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


_READY_STORES: set[str] = set()


def ensure_sqlite_parent(tracking_uri: str) -> None:
    """Make a SQLite store ready for many jobs: create the directory of its database file (SQLite
    will not), and MLflow's tables once, under an exclusive file lock beside the database. Without
    the lock, jobs that open a fresh store at the same moment all run MLflow's schema creation and
    some fail ("table ... already exists", CircularDependencyError)."""
    if not tracking_uri.startswith("sqlite:///") or tracking_uri in _READY_STORES:
        return
    import mlflow
    from filelock import FileLock

    db = Path(tracking_uri[len("sqlite:///") :])
    db.parent.mkdir(parents=True, exist_ok=True)
    check_sqlite_writable(tracking_uri, db)
    ready = db.parent / f"{db.name}.ready"  # written once the schema exists: later jobs skip the lock

    def stamp() -> str:
        return f"{db.stat().st_ino} {mlflow.__version__}" if db.exists() else ""

    if not (ready.exists() and ready.read_text() == stamp()):
        with FileLock(db.parent / f"{db.name}.lock", thread_local=False, fallback_to_soft=False):  # the kernel's flock
            if not (ready.exists() and ready.read_text() == stamp()):  # another job may have done it
                _retry(lambda: MlflowClient(tracking_uri).search_experiments(max_results=1))
                ready.write_text(stamp())
    _READY_STORES.add(tracking_uri)


def _transient(exc: BaseException) -> bool:
    """A store error worth another try: MLflow's TEMPORARILY_UNAVAILABLE, or SQLite's "database is locked"."""
    text = str(exc).lower()
    return isinstance(exc, MlflowException) and (
        getattr(exc, "error_code", "") == "TEMPORARILY_UNAVAILABLE" or "is locked" in text
    )


_sleep = time.sleep  # how the retries wait (tests count the waits instead)


def _retry(call, attempts: int = 8):
    """Run call(), retrying transient store errors (SQLite "database is locked" under many writers): at most
    ``attempts`` tries, 0.1 s after the first failure, doubling up to 5 s; any other error, or the last one, is
    raised."""
    return Retrying(
        stop=stop_after_attempt(attempts),
        wait=wait_exponential(multiplier=0.1, max=5.0),
        retry=retry_if_exception(_transient),
        reraise=True,
        sleep=_sleep,
    )(call)


def get_or_create_experiment(client: MlflowClient, name: str, artifact_root: str | None, attempts: int = 10) -> str:
    """Idempotent under contention: parallel jobs may race to create the same experiment. A failed creation
    (another job created it first, or the DB was locked) is looked up again, 0.2 s later, then 0.4 s, ..."""

    def find_or_create() -> str | None:
        exp = client.get_experiment_by_name(name)
        if exp is not None:
            return exp.experiment_id
        try:
            location = artifact_store.experiment_location(client.tracking_uri, artifact_root, name)
            if location and ":" not in location.split("/", 1)[0]:
                Path(location).mkdir(parents=True, exist_ok=True)
            # the UI opens an experiment of this kind on its runs table, not on the GenAI traces overview
            return client.create_experiment(name, artifact_location=location, tags={EXPERIMENT_KIND: CLASSIC_ML})
        except MlflowException:
            return None

    found = Retrying(
        stop=stop_after_attempt(attempts),
        wait=wait_incrementing(start=0.2, increment=0.2),
        retry=retry_if_result(lambda found: found is None),
        retry_error_callback=lambda state: None,
        sleep=_sleep,
    )(find_or_create)
    if found is None:
        raise RuntimeError(f"could not create or find MLflow experiment {name!r}")
    return found


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
        self.run = _retry(lambda: client.create_run(experiment_id, run_name=scrub(run_name), tags=tags))
        self.run_id = self.run.info.run_id
        self._measured = False  # a metric logged: the run holds work (fail() keeps it)
        self._stored_at_start = _answers_stored()

    def log_params(self, params: Mapping[str, Any]) -> None:
        items = [Param(k, scrub(str(v))) for k, v in params.items()]
        for i in range(0, len(items), 100):
            _retry(lambda: self.client.log_batch(self.run_id, params=items[i : i + 100]))

    def log_metrics(self, metrics: Mapping[str, float]) -> None:
        self._measured = True
        now = int(time.time() * 1000)
        items = [Metric(k, float(v), now, 0) for k, v in metrics.items() if v is not None]
        for i in range(0, len(items), 500):
            _retry(lambda: self.client.log_batch(self.run_id, metrics=items[i : i + 500]))

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
        _retry(lambda: self.client.log_batch(self.run_id, metrics=values, params=items))

    def set_tags(self, tags: Mapping[str, Any], metrics: Mapping[str, float] | None = None) -> None:
        """Tags (and up to 1,000 ``metrics``) in one write: each write is a transaction of its own."""
        now = int(time.time() * 1000)
        self._measured = self._measured or bool(metrics)
        values = [Metric(k, float(v), now, 0) for k, v in (metrics or {}).items() if v is not None]
        if len(values) > 1000:
            self.log_metrics(metrics or {})
            values = []
        _retry(
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
        _retry(lambda: self.client.log_inputs(self.run_id, datasets=[DatasetInput(entity, tags)]))

    def finish(self, status: str = "FINISHED") -> None:
        _retry(lambda: self.client.set_terminated(self.run_id, status=status))

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
                _retry(lambda: self.client.delete_run(self.run_id))
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
        _retry(lambda: client.set_terminated(r.info.run_id, status="KILLED"))
        closed.append(r.info.run_id)
    if closed:
        log.info("marked %d run(s) of dead processes KILLED: %s", len(closed), ", ".join(closed))
    return closed


# What defines a cell: these config groups and top-level keys are params; the rest of the config (where
# and how a job runs) is in config.yaml only.
CELL_GROUPS = ("dataset", "ranker", "perturbation", "judge", "rewriter", "simulation")
CELL_KEYS = ("job", "max_failed_share")
# Leaves that say how a component runs, not what it computes (class paths, caches, rate limits,
# devices, prices), and the dataset's file paths (the dataset input holds their digest and source).
HOW = {
    *PACING,
    "_target_",
    "cache_dir",
    "progress",
    "device",
    "dtype",
    "batch_size",
    "batch_tokens",
    "api_key_env",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "mode",
    "poll_interval_s",
    "max_requests",
    "max_bytes",
    "price_factor",
}  # batch mode: how, not what
DATASET_FILES = {"data_dir", "topics", "qrels", "pool", "passages", "ids"}


def cell_config(config: Mapping) -> dict[str, Any]:
    """The flattened leaves of the config that define the cell (None values left out)."""
    out = {}
    for k, v in flatten(config).items():
        parts = k.split(".")
        if parts[0] not in CELL_GROUPS and k not in CELL_KEYS:
            continue
        if v is None or parts[-1] in HOW or (parts[0] == "dataset" and parts[-1] in DATASET_FILES):
            continue
        out[k] = v
    return out


def params_from_config(config: Mapping) -> tuple[dict[str, str], dict[str, str]]:
    """The cell-defining params (cell_config), masked; values too long for a param are returned as artifact texts."""
    flat = cell_config(mask_secrets(config))
    params, long_values = {}, {}
    for k, v in flat.items():
        text = json.dumps(v) if isinstance(v, (list, dict)) else str(v)
        if len(text) > PARAM_MAX:
            long_values[k] = text
            params[k] = f"<artifact params/{k}.txt>"
        else:
            params[k] = text
    return params, long_values


def find_finished(client: MlflowClient, experiment_id: str, config_hash: str) -> str | None:
    runs = client.search_runs(
        [experiment_id],
        filter_string=RunTags.where(config_hash=config_hash, status="FINISHED"),
        max_results=1,
    )
    return runs[0].info.run_id if runs else None


@dataclass(frozen=True)
class StoreSettings:
    """Where a job logs (``tracking_uri``, ``experiment_name``, ``artifact_root``) and whether a finished run of
    its config is rerun (``force``): read once from the job's config, so the store never sees the rest of it."""

    tracking_uri: str
    experiment_name: str
    artifact_root: str | None = None
    force: bool = False

    @classmethod
    def from_config(cls, cfg) -> StoreSettings:
        root = cfg.get("artifact_root")
        return cls(
            str(cfg["tracking_uri"]),
            str(cfg["experiment_name"]),
            None if root is None else str(root),
            bool(cfg.get("force")),
        )


def open_store(store: StoreSettings) -> tuple[MlflowClient, str]:
    """The client and experiment id a job logs to (the store and the experiment created when missing)."""
    ensure_sqlite_parent(store.tracking_uri)
    client = MlflowClient(store.tracking_uri)
    return client, get_or_create_experiment(client, store.experiment_name, store.artifact_root)


def find_done_readonly(store: StoreSettings, config_hash: str, what: str) -> str | None:
    """A dry run's resume check: the FINISHED run with this config hash, looked up without creating anything
    (no store, no experiment, no run; a dead job's runs are left for the real run to close)."""
    uri = store.tracking_uri
    if store.force or (uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).is_file()):
        return None
    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(store.experiment_name)
    done = find_finished(client, exp.experiment_id, config_hash) if exp is not None else None
    if done:
        print(f"[dry run] skip {what}: finished run {done} has this config (nothing to do)")
    return done


def resume(store: StoreSettings, config_hash: str, what: str) -> tuple[MlflowClient, str, str | None]:
    """(client, experiment id, the id of a FINISHED run with this config hash unless force=true): a job with
    one is skipped as done."""
    client, exp_id = open_store(store)
    close_dead(client, exp_id, RunTags.where(config_hash=config_hash))
    done = None if store.force else find_finished(client, exp_id, config_hash)
    if done:
        log.info("skip %s: finished run %s has this config (force=true reruns)", what, done)
    return client, exp_id, done
