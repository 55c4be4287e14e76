"""What judgebench-compare can refuse before importing MLflow, pandas and matplotlib: an unknown experiment.

Why: the compare command imports its whole stack (MLflow, pandas, scipy, matplotlib) and opens the store
before it asks for the experiment; a mistyped name took 20-30 s to be told on a busy machine, where a
config typo takes one. A local store is an SQLite file MLflow writes with a fixed ``experiments`` table
(name, lifecycle_stage): read with the standard library's sqlite3, read-only, the answer costs
milliseconds. Any other store (a tracking server, a file store), or a database this check cannot read
(an older or newer schema, locked), is left to MLflow: this check only ever refuses what MLflow would.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

PROGRAM = "judgebench-compare"  # its errors print as "judgebench-compare: error: ..." (errors.print_error)


def tracking_uri(argv: list[str]) -> str:
    """The store compare will open: tracking_uri=..., else MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db (as
    compare/command/preflight.py)."""
    given = [a.partition("=")[2] for a in argv if a.partition("=")[0] == "tracking_uri"]
    return (
        (given[-1] if given else "")
        or os.environ.get("MLFLOW_TRACKING_URI")
        or f"sqlite:///{Path.cwd() / 'mlruns' / 'mlflow.db'}"
    )


def active_experiments(uri: str) -> list[str] | None:
    """The names of the store's active experiments; None when the store is not a readable local SQLite file."""
    if not uri.startswith("sqlite:///"):
        return None
    path = Path(uri[len("sqlite:///") :])
    if not path.is_file():
        return None  # cli.py says "no MLflow store at ..."
    try:
        with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1) as db:
            rows = db.execute("SELECT name FROM experiments WHERE lifecycle_stage = 'active'").fetchall()
    except sqlite3.Error:  # another schema, locked, not a database: MLflow decides
        return None
    return sorted(str(name) for (name,) in rows)


def unknown_experiment(argv: list[str]) -> str | None:
    """The error line's message when experiment=NAME is not in a local store; None when it is, or when unknown."""
    named = [a.partition("=")[2] for a in argv if a.partition("=")[0] == "experiment"]
    if not named or not named[-1]:
        return None
    names = active_experiments(tracking_uri(argv))
    if names is None or named[-1] in names:
        return None
    return f"no MLflow experiment named {named[-1]!r}; experiments in this store: {', '.join(names) or 'none'}"
