"""A sweep of ``run.py -m`` through a named Hydra launcher into a folder of its own (forked warm for the basic
launcher, a new interpreter otherwise), and its output for an assertion message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def sweep(
    tmp: Path, *overrides: str, launcher: str = "slurm", env: dict | None = None, timeout: int = 300
) -> subprocess.CompletedProcess:
    cmd = [
        sys.executable,
        str(REPO / "run.py"),
        "-m",
        f"hydra/launcher={launcher}",
        *overrides,
        "experiment_name=launch",
        f"tracking_uri=sqlite:///{tmp}/mlruns/mlflow.db",
        f"artifact_root={tmp}/mlruns/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.sweep.dir={tmp}/multirun",
        "progress=false",
    ]
    if launcher == "local":  # the basic launcher runs the cells in run.py's process: fork the warm test process
        import cli_runner

        res = cli_runner.run(cmd[2:], cwd=tmp, env=env, timeout=timeout)
        return subprocess.CompletedProcess(cmd, res.rc, res.out, res.err)
    return subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=timeout, env=env)


def explain(done: subprocess.CompletedProcess) -> str:
    return f"rc={done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-4000:]}"
