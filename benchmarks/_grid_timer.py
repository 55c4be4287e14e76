"""Run ``judgebench run`` in this process with a timer around each stage of every cell (grid_scaling.py).

    python -m benchmarks._grid_timer OUT.json -- -m key=value ...

Each wrapped function charges its own time, less that of the wrapped calls inside it, to one stage, so the
stages of a cell add up to its wall time. A cell's "hydra" time is what Hydra (composition, launch, callbacks)
spent before that cell's job started (the last cell also gets what follows it inside the launcher). Timed calls
outside the launcher (MLflow calls before the sweep starts or after it ends) are a cost of the grid, not of a cell:
they go to ``outside_launch``. The wrappers are installed here only: the package carries no timing code.
"""

from __future__ import annotations

import functools
import json
import sys
import time

STAGES = ["hydra", "dataset load", "ranking", "judging", "evaluation", "mlflow", "rest of cell"]
_stack: list[str] = []
_mark = [0.0]
cells: list[dict[str, float]] = []
_outside: dict[str, float] = {
    s: 0.0 for s in STAGES
}  # charged outside the launcher, or inside it before the first cell
_in_launch = [False]


def _charge(now: float) -> None:
    if _stack:
        bucket = cells[-1] if cells and _in_launch[0] else _outside
        bucket[_stack[-1]] += now - _mark[0]
    _mark[0] = now


def timed(stage: str, fn, new_cell: bool = False):
    @functools.wraps(fn)
    def wrapper(*a, **kw):
        if new_cell:  # Hydra's time since the previous cell was spent launching this one
            cells.append({s: 0.0 for s in STAGES})
        _charge(time.perf_counter())
        _stack.append(stage)
        try:
            return fn(*a, **kw)
        finally:
            _charge(time.perf_counter())
            _stack.pop()

    return wrapper


def _hydra_launch(fn):
    """The launcher's whole time (every cell and Hydra between them)."""

    @functools.wraps(fn)
    def wrapper(*a, **kw):
        started = time.perf_counter()
        _in_launch[0] = True
        try:
            return fn(*a, **kw)
        finally:
            _timings["launch_s"] = time.perf_counter() - started
            _in_launch[0] = False

    return wrapper


_timings: dict[str, float] = {}


def install() -> None:
    from hydra.core.plugins import Plugins
    from mlflow.tracking import MlflowClient

    import judgebench.cli.run as jrun
    from judgebench import rankings
    from judgebench.jobs import cell as cell_module
    from judgebench.jobs import judge_summary, pipeline
    from judgebench.judges.qrels_file import QrelsFileJudge
    from judgebench.judges.simulated import SimulatedJudge
    from judgebench.tracking import job_run, mlflow_store

    make_launcher = Plugins.instantiate_launcher

    def instantiate_launcher(self, *a, **kw):  # Hydra re-executes its plugin modules: wrap the instance
        launcher = make_launcher(self, *a, **kw)
        launcher.launch = _hydra_launch(timed("hydra", launcher.launch))
        return launcher

    Plugins.instantiate_launcher = instantiate_launcher
    from hydra.plugins.sweeper import Sweeper

    validate = Sweeper.validate_batch_is_legal

    def validate_batch_is_legal(self, batch):  # the sweeper composes every cell's config once before launching any
        started = time.perf_counter()
        try:
            return validate(self, batch)
        finally:
            _timings["validate_s"] = _timings.get("validate_s", 0.0) + time.perf_counter() - started

    Sweeper.validate_batch_is_legal = validate_batch_is_legal
    jrun._dispatch = timed("rest of cell", jrun._dispatch, new_cell=True)
    cell_module.load_dataset = timed("dataset load", cell_module.load_dataset)  # the cell loads it (jobs/cell.py)
    rankings.rank_once = timed("ranking", rankings.rank_once)
    for cls in (SimulatedJudge, QrelsFileJudge):
        cls.judge = timed("judging", cls.judge)
    for name in ("evaluate", "means", "references"):
        setattr(pipeline, name, timed("evaluation", getattr(pipeline, name)))
    judge_summary.statistics = timed("evaluation", judge_summary.statistics)
    for name in dir(MlflowClient):
        attr = getattr(MlflowClient, name)
        if not name.startswith("_") and callable(attr) and not isinstance(attr, type):
            setattr(MlflowClient, name, timed("mlflow", attr))
    for module, name in (
        (mlflow_store, "ensure_sqlite_parent"),
        (job_run, "git_commit"),
        (job_run, "standard_tags"),
        (mlflow_store, "open_store"),
    ):
        setattr(module, name, timed("mlflow", getattr(module, name)))
    import mlflow.data

    mlflow.data.from_pandas = timed("mlflow", mlflow.data.from_pandas)


def main(argv: list[str]) -> int:
    started = time.perf_counter()
    out, _, args = argv[0], argv[1], argv[2:]
    install()
    from judgebench.cli.run import cli

    imported = time.perf_counter()
    code = 0
    try:
        code = cli(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    total = time.perf_counter() - started
    data = {
        "exit_code": code,
        "process_s": total,
        "imports_s": imported - started,
        "launch_s": _timings.get("launch_s", 0.0),
        "validate_s": _timings.get("validate_s", 0.0),
        "outside_launch": _outside,
        "cells": cells,
    }
    with open(out, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
