"""The MLflow store a job logs to: made ready once for many jobs, the experiment found or created under contention,
and the resume check (a FINISHED run of the same configuration means the job is done).

``StoreSettings`` is read once from a job's config, so the store never sees the rest of it. A fresh SQLite store
gets MLflow's schema once under a file lock, and an experiment is created idempotently: parallel jobs opening the
same store and experiment at one moment all find them (docs/tracking.md).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from mlflow.exceptions import MlflowException
from mlflow.tracking import MlflowClient
from tenacity import Retrying, retry_if_result, stop_after_attempt, wait_incrementing

from judgebench.checks.store_writable import check_sqlite_writable
from judgebench.identity.run_tags import RunTags
from judgebench.tracking import artifact_store, retries
from judgebench.tracking.job_run import close_dead

log = logging.getLogger("judgebench")

EXPERIMENT_KIND, CLASSIC_ML = "mlflow.experimentKind", "custom_model_development"  # MLflow UI's experiment kinds


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
                retries.retry(lambda: MlflowClient(tracking_uri).search_experiments(max_results=1))
                ready.write_text(stamp())
    _READY_STORES.add(tracking_uri)


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
        sleep=retries.sleep,
    )(find_or_create)
    if found is None:
        raise RuntimeError(f"could not create or find MLflow experiment {name!r}")
    return found


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
