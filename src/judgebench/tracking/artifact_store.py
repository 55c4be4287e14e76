"""Artifact locations relative to the store, so that a copied ``mlruns/`` keeps its artifacts.

MLflow turns every local artifact location into an absolute path when it creates an experiment
(``resolve_uri_if_local``): the runs of a store copied or moved elsewhere point back at the old
directory. MLflow's own relative form is the proxied scheme ``mlflow-artifacts:/<path>``, which an
``mlflow server``/``mlflow ui`` started with ``--artifacts-destination <store>/artifacts`` serves from
wherever the store now is. So an experiment of a SQLite store whose artifacts live beside the database
(the default ``artifact_root``, ``<store dir>/artifacts``) is created with ``mlflow-artifacts:/<name>``.

Without a server MLflow cannot read that scheme (it wants an http tracking URI). For SQLite tracking
URIs this module registers a resolver for the scheme with MLflow's artifact-repository registry that
maps ``mlflow-artifacts:/<path>`` to ``<directory of the database>/artifacts/<path>``; every other
tracking URI gets MLflow's own repository (through the server). Importing ``judgebench.tracking``
registers it, so jobs, compare and tests all read and write the same place.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from mlflow.store.artifact.artifact_repository_registry import _artifact_repository_registry
from mlflow.store.artifact.local_artifact_repo import LocalArtifactRepository
from mlflow.store.artifact.mlflow_artifacts_repo import MlflowArtifactsRepository

SCHEME = "mlflow-artifacts"
ARTIFACTS_DIR = "artifacts"  # beside the SQLite database, as the default artifact_root puts it


def sqlite_db(tracking_uri: str | None) -> Path | None:
    if tracking_uri and tracking_uri.startswith("sqlite:///"):
        return Path(tracking_uri[len("sqlite:///") :].split("?", 1)[0])
    return None


def store_artifacts(tracking_uri: str) -> Path | None:
    """``<store dir>/artifacts`` of a SQLite store, None for other stores."""
    db = sqlite_db(tracking_uri)
    return db.parent / ARTIFACTS_DIR if db is not None else None


def experiment_location(tracking_uri: str, artifact_root: str | None, name: str) -> str | None:
    """The artifact location of a new experiment: ``mlflow-artifacts:/<name>`` when its artifacts go beside
    a SQLite store (relative: survives a copy), else ``<artifact_root>/<name>`` (a shared directory or a
    bucket the user chose), or None (the server's default)."""
    if not artifact_root:
        return None
    beside = store_artifacts(tracking_uri)
    if beside is not None and "://" not in artifact_root and Path(artifact_root).resolve() == beside.resolve():
        return f"{SCHEME}:/{name}"
    return f"{artifact_root.rstrip('/')}/{name}"


def local_path(artifact_uri: str, tracking_uri: str) -> Path:
    """Where ``mlflow-artifacts:/<path>`` lives for a SQLite store."""
    path = unquote(urlparse(artifact_uri).path).lstrip("/")
    return store_artifacts(tracking_uri) / path


def _repository(artifact_uri: str, tracking_uri: str | None = None, registry_uri: str | None = None):
    if sqlite_db(tracking_uri) is not None:
        return LocalArtifactRepository(str(local_path(artifact_uri, tracking_uri)))
    return MlflowArtifactsRepository(artifact_uri, tracking_uri=tracking_uri, registry_uri=registry_uri)


def register() -> None:
    _artifact_repository_registry.register(SCHEME, _repository)


register()
