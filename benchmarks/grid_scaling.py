"""How the cost of a grid grows with its size: 100, 300 and 1,000 cells of fast judges, and compare over them.

Each grid is one ``run.py -m`` multirun (the basic launcher: every cell in one process) in a fresh temporary
directory (fresh MLflow SQLite store, fresh cache): ``systems`` systems (6 oracles, then simulated LLM rankers)
times ``cells / systems`` judges, either simulated judges that differ in their seed (``judge.seed=range(...)``) or
file judges (``judge=qrels``, one qrels file per judge, the human labels with a seeded share changed). The cells
run under benchmarks/_grid_timer.py, which splits each cell's wall time into Hydra, dataset load, ranking, judging,
evaluation, MLflow and the rest. Then ``judgebench-compare`` runs over the store, timed from the outside.

Per-cell time = (the launcher's time + the sweeper's up-front check of the cells' configs) / cells; process
start-up, imports and the sweep's set-up (store, experiment, parent run) are paid once and shown apart. Growth =
per-cell time of the last tenth of the cells / the first tenth, and the per-cell
time of the largest grid / the smallest: 1 is linear.

    python -m benchmarks.grid_scaling [--sizes 100,300,1000] [--datasets toy,dl19] [--judges simulated,file] [--quick]
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.call_economy import env_for_jobs
from benchmarks.common import REPO, parser, table, write_json

SYSTEMS = [
    "oracle_perfect",
    "oracle_swap_1",
    "oracle_swap_1_2",
    "oracle_swap_2",
    "oracle_swap_2_3",
    "oracle_swap_3",
    "simllm_1",
    "simllm_2",
    "simllm_3",
    "simllm_4",
    "simllm_5",
]
STAGES = ["hydra", "dataset load", "ranking", "judging", "evaluation", "mlflow", "rest of cell"]
EXPERIMENT = "grid_scaling"


def write_file_judges(work: Path, dataset: str, n: int) -> list[str]:
    """n qrels files: the dataset's human labels, each with its own seeded 20 % of the labels moved by one grade."""
    from judgebench.data.trec import write_qrels

    qrels = _human_qrels(dataset)
    names = []
    for j in range(n):
        rng = random.Random(j)
        labels = [min(3, max(0, r + rng.choice((-1, 1)))) if rng.random() < 0.2 else r for r in qrels["relevance"]]
        name = f"filejudge_{j}.txt"
        write_qrels(qrels.assign(relevance=labels), work / name)
        names.append(name)
    return names


def _human_qrels(dataset: str):
    if dataset == "toy":
        from judgebench.data.datasets import load_toy

        return load_toy().qrels
    from judgebench.data.trec_dl import load_trec_dl

    return load_trec_dl(name=dataset, year=2019 if dataset == "dl19" else 2020).qrels


def grid_args(work: Path, dataset: str, judges: str, cells: int) -> tuple[list[str], int]:
    """The multirun's arguments and its number of cells (systems x judges, the nearest to ``cells``)."""
    n_systems = min(10, max(1, cells // 2))
    n_judges = max(1, round(cells / n_systems))
    args = [
        "-m",
        f"hydra.searchpath=[file://{REPO / 'benchmarks' / 'conf'}]",
        f"hydra.sweep.dir={work / 'multirun'}",
        f"experiment_name={EXPERIMENT}",
        "progress=false",
        f"dataset={dataset}",
        f"+system={','.join(SYSTEMS[:n_systems])}",
    ]
    if judges == "simulated":
        args += ["judge=simulated", f"judge.seed=range(0,{n_judges})"]
    else:
        args += ["judge=qrels", f"judge.path={','.join(write_file_judges(work, dataset, n_judges))}"]
    return args, n_systems * n_judges


def finished_runs(work: Path) -> dict[str, int]:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{work}/mlruns/mlflow.db")
    exp = client.get_experiment_by_name(EXPERIMENT)
    runs = client.search_runs([exp.experiment_id], "tags.`judgebench.kind` = 'job'", max_results=50000)
    return {"job_runs": len(runs), "finished": sum(r.info.status == "FINISHED" for r in runs)}


def run_grid(dataset: str, judges: str, cells: int, compare: bool) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"jb-grid-{dataset}-{judges}-{cells}-"))
    try:
        args, n = grid_args(work, dataset, judges, cells)
        timings = work / "timings.json"
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "benchmarks._grid_timer", str(timings), "--", *args],
            cwd=work,
            env={**env_for_jobs(), "PYTHONPATH": str(REPO)},
            capture_output=True,
            text=True,
            timeout=7200,
        )
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{dataset}/{judges}/{n} grid failed ({done.returncode}):\n{done.stderr[-3000:]}")
        t = json.loads(timings.read_text())
        out = {
            "dataset": dataset,
            "judges": judges,
            "cells": n,
            "wall_s": wall,
            **finished_runs(work),
            **summarize(t, wall),
        }
        if compare:
            started = time.perf_counter()
            done = subprocess.run(
                [
                    str(Path(sys.executable).parent / "judgebench-compare"),
                    f"experiment={EXPERIMENT}",
                    f"tracking_uri=sqlite:///{work}/mlruns/mlflow.db",
                    f"out={work / 'compare-out'}",
                ],
                cwd=work,
                env=env_for_jobs(),
                capture_output=True,
                text=True,
                timeout=7200,
            )
            out["compare_s"] = time.perf_counter() - started
            if done.returncode != 0:
                raise RuntimeError(f"compare failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def summarize(t: dict, wall: float) -> dict:
    cells = t["cells"]
    n = len(cells)
    split = {s: sum(c[s] for c in cells) for s in STAGES}
    split["hydra"] += t["validate_s"]  # the sweeper composes cells' configs before launching: a per-cell cost too
    per_cell = [sum(c.values()) for c in cells]
    tenth = max(1, n // 10)
    first, last = sum(per_cell[:tenth]) / tenth, sum(per_cell[-tenth:]) / tenth
    return {
        "timed_cells": n,
        "process_s": t["process_s"],
        "startup_s": t["process_s"] - t["launch_s"] - t["validate_s"],
        "launch_s": t["launch_s"],
        "validate_s": t["validate_s"],
        "split_s": split,
        "split_sum_s": sum(split.values()),
        "outside_launch_s": sum(t["outside_launch"].values()),
        "per_cell_s": (t["launch_s"] + t["validate_s"]) / max(1, n),
        "per_cell_split_s": {s: v / max(1, n) for s, v in split.items()},
        "first_tenth_split_s": {s: sum(c[s] for c in cells[:tenth]) / tenth for s in STAGES},
        "last_tenth_split_s": {s: sum(c[s] for c in cells[-tenth:]) / tenth for s in STAGES},
        "first_tenth_per_cell_s": first,
        "last_tenth_per_cell_s": last,
        "growth_within_grid": last / first if first else None,
    }


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,300,1000", help="grid sizes in cells (comma-separated)")
    ap.add_argument("--datasets", default="toy,dl19", help="datasets (toy, dl19)")
    ap.add_argument(
        "--judges",
        default=None,
        help="judge kinds: simulated (seeds), file (qrels files); default both (--quick: simulated)",
    )
    ap.add_argument("--no-compare", action="store_true", help="skip judgebench-compare")
    args = ap.parse_args(argv)
    sizes = [4] if args.quick else [int(s) for s in args.sizes.split(",")]
    datasets = ["toy"] if args.quick else args.datasets.split(",")
    kinds = (args.judges or ("simulated" if args.quick else "simulated,file")).split(",")
    grids, rows = [], []
    for dataset in datasets:
        for kind in kinds:
            for size in sizes:
                g = run_grid(dataset, kind, size, compare=not args.no_compare)
                grids.append(g)
                pc = g["per_cell_split_s"]
                row = {
                    "dataset": dataset,
                    "judges": kind,
                    "cells": g["cells"],
                    "finished": g["finished"],
                    "start-up s": round(g["startup_s"], 1),
                    "per cell s": round(g["per_cell_s"], 3),
                    **{s: round(pc[s], 4) for s in STAGES},
                    "last/first tenth": round(g["growth_within_grid"], 2) if g["growth_within_grid"] else "",
                    "compare s": round(g["compare_s"], 1) if "compare_s" in g else "",
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    for r in rows:  # growth across sizes: per-cell time and compare time per cell, relative to the smallest grid
        base = next(b for b in rows if b["dataset"] == r["dataset"] and b["judges"] == r["judges"])
        r["per cell vs smallest"] = round(r["per cell s"] / base["per cell s"], 2)
        if r["compare s"] != "" and base["compare s"]:
            r["compare/cell vs smallest"] = round(
                (r["compare s"] / r["cells"]) / (base["compare s"] / base["cells"]), 2
            )
    md = table(rows, title="Grid scaling: per-cell wall time by stage (s), compare over the same store")
    out = {
        "settings": {"sizes": sizes, "datasets": datasets, "judges": kinds, "compare": not args.no_compare},
        "grids": grids,
        "rows": rows,
        "markdown": md,
    }
    write_json("grid_scaling", out, args.out)
    return out


if __name__ == "__main__":
    main()
