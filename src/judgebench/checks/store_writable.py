"""A SQLite MLflow store that a job could not write to, said in one line before the job starts: a read-only file or
mount, or a folder that takes no new file (SQLite writes its journal beside the database)."""

from __future__ import annotations

import os
from pathlib import Path


def check_sqlite_writable(tracking_uri: str, db: Path) -> None:
    """One line up front (ConfigError) when a job could not log to the SQLite store: the database file takes no
    write lock (read-only file or mount) or its folder takes no new file (SQLite writes its journal there).
    Without this, MLflow's writes fail later, after retries, as sqlite3.OperationalError tracebacks."""
    import secrets
    import sqlite3

    from judgebench.exceptions import ConfigError

    hint = "point tracking_uri at a writable store (a copy of this one: cp the .db file into a writable folder)"
    probe = db.parent / f".{db.name}.probe.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ConfigError(
            f"tracking_uri={tracking_uri}: the MLflow store's folder {db.parent} is not writable "
            f"([Errno {e.errno}] {e.strerror}); {hint}"
        ) from None
    if not db.exists():
        return
    con = None
    try:
        con = sqlite3.connect(f"file:{db}?mode=rw", uri=True, timeout=10)
        con.execute("BEGIN IMMEDIATE")  # a write lock, nothing written
        con.rollback()
    except sqlite3.OperationalError as e:
        if "locked" in str(e) or "busy" in str(e):  # another job is writing: writable
            return
        raise ConfigError(
            f"tracking_uri={tracking_uri}: the MLflow store {db} cannot be written ({e}); {hint}"
        ) from None
    finally:
        if con is not None:
            con.close()
