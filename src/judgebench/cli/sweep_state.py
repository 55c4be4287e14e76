"""The submitting process's state of the sweep it runs: its directory, whether its summary was printed, its start
time, and its MLflow side (store, experiment, parent run, the config waiting for the sweep's checks).

Module globals, not callback attributes: the callback object is pickled with the launcher into every submitit job,
and its attributes would travel with it. Read by the callback (cli/hydra_callbacks.py), the MLflow side
(cli/sweep_store.py), the sweep's checks (cli/sweep_preflight.py) and the exit code of ``run.py -m`` (cli/run.py).
"""

from __future__ import annotations

from typing import Any

SWEEP: dict[str, Any] = {
    "dir": None,
    "printed": True,
    "started": 0.0,
    "uri": None,
    "parent": None,
    "experiment": None,
    "pending": None,
}
