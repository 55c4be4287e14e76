"""A sweep's outcome records and its summary: one small JSON file per cell, written by whichever process ran it, and
the table printed (and sweep_summary.json written) from them at the end.

Records are files under the sweep directory, not messages to the submitting process, because with the submitit
launchers a cell runs in a SLURM job or another process that the submitter never hears from directly; the sweep
directory is shared with the jobs anyway. The callback (cli/hydra_callbacks.py) and the launchers that wait for
every job (hydra_plugins.judgebench_launcher) write them through ``write_record``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.utils import JobReturn, JobStatus
from omegaconf import DictConfig

RECORDS = ".judgebench/jobs"  # under the sweep directory
PLANNED = ".judgebench/planned.json"  # ... every cell's overrides, in launch order
SUMMARY_FILE = "sweep_summary.json"


def sweep_dir(config: DictConfig) -> Path:
    path = Path(str(config.hydra.sweep.dir))
    if not path.is_absolute():  # relative to where run.py was started (jobs may chdir)
        path = Path(str(config.hydra.runtime.cwd)) / path
    return path


def write_json(path: Path, data: Any) -> None:
    from judgebench.secrets import scrub

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(scrub(json.dumps(data, indent=1, default=str)), encoding="utf-8")  # no secret in a record
    tmp.replace(path)  # atomic: the submitter never reads half a record


def short_error(exc: BaseException | str, lines: int = 1, limit: int = 300) -> str:
    """The first ``lines`` lines in at most ``limit`` characters. A longer one loses its middle, not its end: a
    cell's error names the cell (its overrides, long paths) first and the cause last."""
    text = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
    kept = " ".join([line.strip() for line in str(text).splitlines() if line.strip()][:lines])
    if len(kept) <= limit:
        return kept
    head = (limit - 3) // 2
    return f"{kept[:head]} … {kept[len(kept) - (limit - 3 - head) :]}"


def masked(overrides: Sequence[str]) -> list[str]:
    """key=value overrides with secret-looking keys masked, as secrets.mask_secrets does for params."""
    from judgebench.secrets import MASK, is_secret_key, scrub

    out = []
    for o in overrides:
        key, sep, _ = str(o).partition("=")
        out.append(f"{key}={MASK}" if sep and is_secret_key(key) else scrub(str(o)))
    return out


def job_status(job_return: JobReturn) -> tuple[str, str | None]:
    """(status, error) of a JobReturn, without raising the job's exception."""
    if job_return.status == JobStatus.COMPLETED:
        value = job_return._return_value
        return str(getattr(value, "status", value)), None  # run.py returns JobOutcome.status
    if job_return.status == JobStatus.FAILED:
        return "failed", short_error(job_return._return_value)
    return "unknown", None


def write_record(
    directory: Path, num: int, overrides: Sequence[str], status: str, error: str | None = None, **extra: Any
) -> None:
    record = {
        "num": int(num),
        "overrides": masked(overrides),
        "status": status,
        "error": error,
        "time": time.time(),
        **extra,
    }
    write_json(directory / RECORDS / f"{int(num):05d}.json", record)


def read_records(directory: Path) -> list[dict]:
    records = []
    for path in sorted((directory / RECORDS).glob("*.json")):
        try:
            records.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    return sorted(records, key=lambda r: r["num"])


def read_planned(directory: Path) -> list[list[str]] | None:
    try:
        return json.loads((directory / PLANNED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def category(status: str) -> str:
    if status in ("failed", "unknown", "interrupted"):
        return "failed"
    return "skipped" if status.startswith("skipped") else "ran"


def summarize(directory: Path) -> dict:
    """Counts and per-cell rows of a sweep, from its records; also written to sweep_summary.json."""
    records = read_records(directory)
    counts = {"ran": 0, "skipped": 0, "failed": 0}
    for r in records:
        counts[category(r["status"])] += 1
    planned = read_planned(directory) or []
    started = {r["num"] for r in records}
    not_started = [{"num": num, "overrides": cell} for num, cell in enumerate(planned) if num not in started]
    summary = {
        "sweep_dir": str(directory),
        "cells": len(records) + len(not_started),
        **counts,
        "not_started": len(not_started),
        "jobs": records,
        "never_started": not_started,
    }
    write_json(directory / SUMMARY_FILE, summary)
    return summary


def format_summary(summary: dict) -> str:
    rows = summary["jobs"]
    common = set(rows[0]["overrides"]).intersection(*(r["overrides"] for r in rows[1:])) if len(rows) > 1 else set()
    waiting = summary.get("never_started") or []
    lines = [
        f"judgebench sweep: {summary['cells']} cells - {summary['ran']} ran, {summary['skipped']} skipped, "
        f"{summary['failed']} failed"
        + (f", {len(waiting)} never started" if waiting else "")
        + f" ({summary['sweep_dir']})"
    ]
    if common:
        lines.append("  common overrides: " + " ".join(o for o in rows[0]["overrides"] if o in common))
    width = max([len(r["status"]) for r in rows] + [6])
    jobs = [
        (r.get("slurm_array_job_id") and f"{r['slurm_array_job_id']}_{r.get('slurm_array_task_id')}")
        or r.get("slurm_job_id")
        or r.get("job_id")
        or "-"
        for r in rows
    ]
    show_jobs = any(job != "-" for job in jobs)  # Hydra's basic launcher: no job ids
    for r, job in zip(rows, jobs):
        cells = " ".join(o for o in r["overrides"] if o not in common) or "(no overrides)"
        line = f"  #{r['num']:<3} {r['status']:<{width}}  " + (f"job {job:<10}  " if show_jobs else "") + cells
        if r.get("error"):
            line += f"\n        error: {r['error']}"
            if r.get("log"):
                line += f"\n        log:   {r['log']}"
        lines.append(line)
    if waiting:
        lines.append(never_started_line(waiting, common))
    return "\n".join(lines)


def never_started_line(waiting: list[dict], common: set[str], shown: int = 3) -> str:
    """The cells that never started, the first few with their overrides, and how to run them: the same command
    again, whose finished cells are skipped (force=false), so only these and the failed ones run."""
    nums = " ".join(f"#{w['num']}" for w in waiting[:12]) + (" …" if len(waiting) > 12 else "")
    text = f"  never started ({len(waiting)}): {nums}; rerun the same command to run them (finished cells are skipped)"
    for w in waiting[:shown]:
        text += f"\n        #{w['num']}: " + (
            " ".join(o for o in w["overrides"] if o not in common) or "(no overrides)"
        )
    if len(waiting) > shown:
        text += f"\n        … and {len(waiting) - shown} more in sweep_summary.json"
    return text


def print_summary(directory: Path) -> dict | None:
    summary = summarize(directory)
    if summary["jobs"]:
        print(format_summary(summary), flush=True)
    return summary
