"""How compare's time grows with the number of systems: leaderboards of 35, 100 and 300 systems x 5 judges x 100 q.

Each store is generated, not run: synthetic per-query nDCG@10 of every system under the human labels and four judges
(a system effect, a query effect, judge noise and a judge-specific lift of one family's systems), written as
leaderboard files (``run measure query value``) and imported by ``job=import_results`` (the importer is exercised
too). Stores are kept under ``--work`` (default ``.cache/judgebench/compare_scaling``) and reused: a rerun times
compare only. Then ``judgebench-compare`` runs over each store as a user runs it (its own process, every format
including figures), timed from the outside; ``--profile`` also builds the report in this process under cProfile
and prints the functions that take the most time. The target (issue 53): 300 systems in <= 60 s on 2 idle cores.

    python -m benchmarks.compare_scaling [--systems 35,100,300] [--no-figures] [--profile] [--quick]
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from benchmarks.common import REPO, machine, parser, table, write_json

JUDGES = {"human": "human", "judge_a": "openai", "judge_b": "llama", "judge_c": "google", "judge_d": "mistral"}
TYPES = {"GPT": "openai", "Llama": "llama", "T5": "t5", "Other": "other"}
QUERIES = 100
TARGET_S = 60.0


def write_leaderboard(folder: Path, systems: int, queries: int = QUERIES, seed: int = 0) -> None:
    """One results file per judge and the runs table, seeded; written once per folder."""
    if (folder / "runs.txt").exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    names = [f"sys{i:03d}" for i in range(systems)]
    kinds = rng.choice(list(TYPES), systems)
    quality = rng.uniform(0.2, 0.7, systems)[:, None] + rng.normal(0, 0.12, (1, queries))
    human = np.clip(quality + rng.normal(0, 0.1, (systems, queries)), 0, 1)
    qids = [str(2000000 + q) for q in range(queries)]
    for judge, family in JUDGES.items():
        if judge == "human":
            values = human
        else:
            lift = np.where([TYPES[k] == family for k in kinds], 0.03, 0.0)[:, None]
            values = np.clip(human + 0.15 + lift + rng.normal(0, 0.08, human.shape), 0, 1)
        lines = [f"{s}\tndcg_cut_10\t{q}\t{v:.4f}" for s, row in zip(names, values) for q, v in zip(qids, row)]
        (folder / f"{judge}.eval").write_text("\n".join(lines) + "\n")
    rows = [f"{s}\t{k}\t{int(k in ('GPT', 'Llama', 'T5'))}" for s, k in zip(names, kinds)]
    (folder / "runs.txt").write_text("run_id\ttype\tisLLM\n" + "\n".join(rows) + "\n")


def config(folder: Path, store: Path, experiment: str):
    from omegaconf import OmegaConf

    return OmegaConf.create(
        {
            "experiment_name": experiment,
            "tracking_uri": f"sqlite:///{store}/mlflow.db",
            "artifact_root": f"{store}/artifacts",
            "sweep_id": experiment,
            "force": False,
            "results": {
                "dataset": "leaderboard",
                "data_dir": str(folder),
                "measure": "ndcg_cut_10",
                "judges": {j: {"files": f"{j}.eval", "family": f, "model": j} for j, f in JUDGES.items()},
                "runs": {
                    "table": "runs.txt",
                    "id_column": "run_id",
                    "type_column": "type",
                    "llm_column": "isLLM",
                    "families": TYPES,
                },
            },
        }
    )


def ensure_store(work: Path, systems: int, queries: int) -> tuple[Path, str, float]:
    """(store folder, experiment, seconds spent importing now: 0 when the store was there)."""
    from judgebench.jobs.import_results import run_import

    folder, store, experiment = (
        work / f"data_{systems}x{queries}",
        work / f"store_{systems}x{queries}",
        f"scale_{systems}",
    )
    write_leaderboard(folder, systems, queries)
    started = time.perf_counter()
    outcome = run_import(config(folder, store, experiment))
    return store, experiment, (time.perf_counter() - started) if outcome.metrics["cells_imported"] else 0.0


def time_compare(store: Path, experiment: str, out: Path, formats: str | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "judgebench.compare",
            f"experiment={experiment}",
            f"tracking_uri=sqlite:///{store}/mlflow.db",
            f"out={out}",
            *([f"format={formats}"] if formats else []),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if done.returncode != 0:
        raise RuntimeError(f"compare failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def profile(store: Path, experiment: str, out: Path, top: int = 25) -> str:
    """report.build and report.write in this process under cProfile: the functions with the most cumulative time."""
    from mlflow.tracking import MlflowClient

    from judgebench.compare import report

    os.environ["MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"] = "false"
    prof = cProfile.Profile()
    prof.enable()
    r = report.build(MlflowClient(f"sqlite:///{store}/mlflow.db"), experiment)
    report.write(r, out)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("cumulative").print_stats("judgebench", top)
    return text.getvalue()


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--systems", default="35,100,300", help="comma-separated numbers of systems")
    ap.add_argument("--queries", type=int, default=QUERIES)
    ap.add_argument(
        "--work",
        type=Path,
        default=REPO / ".cache" / "judgebench" / "compare_scaling",
        help="where the generated stores are kept (reused by the next run)",
    )
    ap.add_argument(
        "--no-figures", action="store_true", help="also time compare without figures (format=md,csv,tex,html)"
    )
    ap.add_argument("--profile", action="store_true", help="also profile compare in this process (largest size)")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.systems.split(",")]
    queries = args.queries
    if args.quick:
        sizes, queries = [6, 12], 10
    rows = []
    for n in sizes:
        store, experiment, imported = ensure_store(args.work, n, queries)
        seconds = time_compare(store, experiment, args.work / f"report_{n}x{queries}")
        row = {
            "systems": n,
            "judges": len(JUDGES),
            "queries": queries,
            "cells": n * len(JUDGES),
            "pairs": n * (n - 1) // 2,
            "import s": round(imported, 1) if imported else "(kept)",
            "compare s": round(seconds, 1),
        }
        if args.no_figures:
            row["without figures s"] = round(
                time_compare(store, experiment, args.work / f"report_{n}x{queries}_nofig", "md,csv,tex,html"), 1
            )
        rows.append(row)
        print(
            f"{n} systems: compare {seconds:.1f} s"
            + (f", without figures {row['without figures s']} s" if args.no_figures else ""),
            flush=True,
        )
    base = rows[0]
    for r in rows:
        r["compare vs smallest"] = round(r["compare s"] / base["compare s"], 2)
    md = table(
        rows,
        title="compare's wall time (own process, every format) by number of systems "
        f"(5 judges, {queries} queries; target: 300 systems <= {TARGET_S:.0f} s on 2 idle cores)",
    )
    print(md)
    result = {
        "settings": {"systems": sizes, "queries": queries, "judges": list(JUDGES)},
        "rows": rows,
        "markdown": md,
        "uptime": os.popen("uptime").read().strip(),
        "machine": machine(),
    }
    if args.profile:
        text = profile(*ensure_store(args.work, sizes[-1], queries)[:2], args.work / "report_profiled")
        print(text)
        result["profile"] = text
    write_json("compare_scaling", result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
