"""A dry-run sweep's total: the grid's distinct calls, input tokens, cost, GPU- and CPU-hours, printed once at its end.

Why: each cell of a dry run prints its own work and the total of the cells run in the same process so far,
but a sweep run by parallel or SLURM launchers has one process per cell, and a reader pricing a grid wants
one figure. Each dry-run cell saves what it counted (``jobs/dry_run.py``: call keys with their tokens and
cost, local-model work by prompt fingerprint, and the backends not checked offline) under
``<sweep dir>/.judgebench/dry_run/``; the sweep's end reads them all, counts each call key once (the
cache would make a call shared by two cells once) and prints the total.
"""

from __future__ import annotations

import json
from pathlib import Path

from judgebench.llm.estimate.measured_rates import CPU_CORES

DIR = ".judgebench/dry_run"  # under the sweep directory


def save_cell(sweep_dir: Path, num: int, dataset: str | None = None) -> None:
    """What this process has planned so far (its cells' calls, summed once) for the sweep's total, and the cell's
    dataset (the total names what it priced: the default ``toy`` is not the collection a reader means to run)."""
    from judgebench.checks import offline_checks
    from judgebench.jobs import dry_run
    from judgebench.secrets import mask_url

    data = {
        "calls": {k: list(v) for k, v in dry_run._PLANNED.items()},
        "gpu_hours": dict(dry_run._GPU_PLANNED),
        "cpu_hours": dict(dry_run._CPU_PLANNED),
        "not_checked": sorted(f"{kind} {model} at {mask_url(url)}" for kind, url, model in offline_checks._NOTED),
        "datasets": [dataset] if dataset else [],
    }
    path = Path(sweep_dir) / DIR / f"{int(num):05d}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def clear(sweep_dir: Path) -> None:
    """A rerun of the same sweep directory totals afresh."""
    for old in (Path(sweep_dir) / DIR).glob("*.json"):
        old.unlink(missing_ok=True)


def total(sweep_dir: Path) -> dict | None:
    """The sweep's distinct calls, tokens, cost, GPU-hours and unchecked backends; None when no cell saved any."""
    calls: dict[str, list] = {}
    gpu: dict[str, float] = {}
    cpu: dict[str, float] = {}
    unchecked: set[str] = set()
    datasets: dict[str, None] = {}
    files = sorted((Path(sweep_dir) / DIR).glob("*.json"))
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for key, value in data["calls"].items():
            calls.setdefault(key, value)
        for key, value in data["gpu_hours"].items():
            gpu.setdefault(key, value)
        for key, value in data.get("cpu_hours", {}).items():
            cpu.setdefault(key, value)
        unchecked.update(data.get("not_checked", []))
        datasets.update(dict.fromkeys(data.get("datasets", [])))
    if not files:
        return None
    return {
        "calls": len(calls),
        "input_tokens": int(sum(t for t, _ in calls.values())),
        "cost_usd": float(sum(c for _, c in calls.values())),
        "gpu_hours": float(sum(gpu.values())),
        "cpu_hours": float(sum(cpu.values())),
        "not_checked": sorted(unchecked),
        "datasets": list(datasets),
    }


def format_total(t: dict) -> str:
    sets = t.get("datasets") or []
    on = f" (dataset{'s' if len(sets) > 1 else ''} {', '.join(sets)})" if sets else ""
    line = (
        f"dry run total{on}: {t['calls']:,} distinct API calls to make, ~{t['input_tokens']:,} input tokens, "
        f"~${t['cost_usd']:.4f} at the config's prices; ~{t['gpu_hours']:.3g} GPU-hours of local models"
        + (f" (~{t['cpu_hours']:.3g} CPU-hours on {CPU_CORES} cores)" if t.get("cpu_hours") else "")
    )
    if t["not_checked"]:
        line += "\n  not checked offline (server, key, model id; the real run's preflight asks): " + "; ".join(
            t["not_checked"]
        )
    return line


def print_total(sweep_dir: Path) -> dict | None:
    t = total(sweep_dir)
    if t is not None:
        print(format_total(t), flush=True)
    return t
