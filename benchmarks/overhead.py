"""Framework overhead: where the time of a 14-system grid goes when judging costs (almost) nothing.

The paper grid (14 systems x DL19, DL20) with the human and the simulated judge through ``run.py -m``, in a
fresh temporary directory (fresh MLflow SQLite store), written two ways:

* ``cartesian``: ranker x perturbation x dataset x judge, as a user writes it first (9 x 6 x 2 x 2 = 216
  launches; the 160 non-oracle x non-identity cells are skipped as duplicates inside the job);
* ``systems``: ``+experiment=paper_grid`` from benchmarks/conf, where each system is one config that sets
  ranker and perturbation (14 x 2 x 2 = 56 launches, no duplicates).

Both are timed without a profiler; the ``systems`` grid is then run again under cProfile and its time split
into start-up, Hydra's per-job config composition, MLflow, metrics, judging, ranking and the rest.

    python -m benchmarks.overhead [--quick] [--skip-cartesian]
"""

from __future__ import annotations

import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.call_economy import PERTURBATIONS, RANKERS, env_for_jobs
from benchmarks.common import REPO, parser, table, write_json

SYSTEMS = (
    ["bm25"]
    + [f"oracle_{p}" for p in PERTURBATIONS]
    + ["rankgpt_gpt35", "rankvicuna_7b"]
    + [f"simllm_{i}" for i in range(1, 6)]
)

# direct callees of pipeline.run_job and of run_cell (the stages run_job hands its resolved cell to), by (module
# path fragment, function name) -> phase
PHASES = [
    ("metrics", [("judgebench/metrics/", ""), ("judgebench/evaluation.py", "")]),  # evaluation: the nDCG of every qrels
    (
        "MLflow (store, runs, params, metrics, artifacts)",
        [
            ("judgebench/tracking/", ""),
            ("mlflow/", ""),
            ("judgebench/jobs/common.py", "file_text"),
            ("judgebench/jobs/common.py", "frame_text"),
        ],
    ),
    ("judging", [("judgebench/judges/", "judge")]),
    ("ranking (+ perturbation, cut)", [("judgebench/rankers/", "")]),
    ("dataset load", [("judgebench/jobs/common.py", "load_dataset"), ("judgebench/data/", "")]),
    (
        "config (instantiate, hash, to_container, yaml)",
        [
            ("hydra/", ""),
            ("omegaconf/", ""),
            ("judgebench/jobs/common.py", "config_hash"),
            ("judgebench/jobs/cell.py", ""),
        ],
    ),
]


def grid_cmd(kind: str, quick: bool, sweep_dir: Path) -> list[str]:
    common = [
        sys.executable,
        str(REPO / "run.py"),
        "-m",
        f"hydra.searchpath=[file://{REPO / 'benchmarks' / 'conf'}]",
        "judge=human,simulated",
        "progress=false",
        f"hydra.sweep.dir={sweep_dir}",
    ]
    if quick:  # seconds: the toy dataset, 2 systems, 1 judge
        common[common.index("judge=human,simulated")] = "judge=human"
        if kind == "systems":
            return common + ["+experiment=paper_grid", "dataset=toy", "+system=oracle_swap_1"]
        return common + [
            "experiment_name=paper_grid",
            "dataset=toy",
            "ranker=bm25,oracle",
            "perturbation=perfect,swap_1",
        ]
    if kind == "systems":
        return common + ["+experiment=paper_grid"]
    return common + [
        "experiment_name=paper_grid",
        "dataset=dl19,dl20",
        f"ranker={','.join(RANKERS)}",
        f"perturbation={','.join(PERTURBATIONS)}",
    ]


def run_grid(kind: str, quick: bool, profile: Path | None = None) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"jb-overhead-{kind}-"))
    try:
        cmd = grid_cmd(kind, quick, work / "multirun")
        if profile:
            cmd = [cmd[0], "-m", "cProfile", "-o", str(profile), *cmd[1:]]
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=work, env=env_for_jobs(), capture_output=True, text=True, timeout=3600)
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{kind} grid failed:\n{done.stderr[-3000:]}")
        from mlflow.tracking import MlflowClient

        client = MlflowClient(f"sqlite:///{work}/mlruns/mlflow.db")
        exp = client.get_experiment_by_name("paper_grid")
        runs = client.search_runs([exp.experiment_id], "tags.`judgebench.kind` = 'job'", max_results=10000)
        # one row per launched cell in the sweep summary ("  #3   finished  job 5120_3  ..."; no job id locally)
        launched = sum(1 for line in done.stderr.splitlines() + done.stdout.splitlines() if re.match(r"  #\d+ ", line))
        return {
            "seconds": seconds,
            "finished_runs": sum(r.info.status == "FINISHED" for r in runs),
            "launches": launched,
            "metrics_wall_s": sum(r.data.metrics.get("wall_time_s", 0) for r in runs),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _match(key: tuple, rules: list[tuple[str, str]]) -> bool:
    filename, _, func = key
    return any(frag in filename and (not name or func == name) for frag, name in rules)


def split_profile(path: Path) -> dict:
    st = pstats.Stats(str(path))
    stats = st.stats  # (file, line, func) -> (cc, nc, tt, ct, callers)
    total = st.total_tt

    def cum(file_frag: str, func: str) -> tuple[float, int]:
        ct = n = 0
        for (f, _, name), (_, nc, _, c, _) in stats.items():
            if file_frag in f and name == func:
                ct, n = ct + c, n + nc
        return ct, n

    launch, _ = cum("hydra/_internal/core_plugins/basic_launcher.py", "launch")
    hydra_job, jobs = cum("hydra/core/utils.py", "run_job")
    compose, composes = cum("hydra/_internal/config_loader_impl.py", "load_sweep_config")
    run_job_keys = [k for k in stats if k[0].endswith("judgebench/jobs/pipeline.py") and k[2] == "run_job"]
    job_total = sum(stats[k][3] for k in run_job_keys)
    # run_cell hands its stages to the job skeleton (jobs/skeleton.py run_steps), which calls the cell's own work
    # function: those three pass the work on, their callees are the phases
    passing = {("judgebench/jobs/pipeline.py", "run_cell"), ("judgebench/jobs/pipeline.py", "work")}
    passing.add(("judgebench/jobs/skeleton.py", "run_steps"))
    run_cell_keys = [k for k in stats if any(k[0].endswith(f) and k[2] == name for f, name in passing)]
    phases = {name: 0.0 for name, _ in PHASES}
    callees: dict[str, float] = {}
    for key, (_, _, _, _, callers) in stats.items():
        if key in run_cell_keys:  # not a phase: its own callees are
            continue
        edge = sum(callers[k][3] for k in run_job_keys + run_cell_keys if k in callers)
        if not edge:
            continue
        label = f"{Path(key[0]).parent.name}/{Path(key[0]).name}:{key[2]}"
        callees[label] = callees.get(label, 0.0) + edge
        for name, rules in PHASES:
            if _match(key, rules):
                phases[name] += edge
                break
    phases["rest of run_job"] = job_total - sum(phases.values())
    split = {
        "process start-up (imports, Hydra init, sweep set-up)": total - launch,
        "Hydra per-job composition and launch (outside run_job)": launch - job_total,
        **phases,
    }
    return {
        "profile_total_s": total,
        "run_job_total_s": job_total,
        "jobs_launched": jobs,
        "hydra_load_sweep_config_s": compose,
        "hydra_load_sweep_config_calls": composes,
        "split_s": split,
        "top_run_job_callees_s": dict(sorted(callees.items(), key=lambda kv: -kv[1])[:12]),
    }


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--skip-cartesian", action="store_true", help="time only the systems formulation")
    args = ap.parse_args(argv)
    rows = []
    timings = {}
    if args.quick:
        args.skip_cartesian = True
    for kind in [] if args.quick else ["systems"] if args.skip_cartesian else ["cartesian", "systems"]:
        m = run_grid(kind, args.quick)
        timings[kind] = m
        rows.append(
            {
                "grid": kind,
                "launches": m["launches"],
                "finished_runs": m["finished_runs"],
                "wall_s": round(m["seconds"], 1),
                "s_per_finished_run": round(m["seconds"] / max(1, m["finished_runs"]), 2),
            }
        )
        print(f"{kind}: {m['launches']} launches, {m['finished_runs']} runs in {m['seconds']:.1f} s", flush=True)
    with tempfile.TemporaryDirectory(prefix="jb-overhead-prof-") as tmp:
        prof = Path(tmp) / "grid.prof"
        m = run_grid("systems", args.quick, profile=prof)
        split = split_profile(prof)
    if args.quick:  # the profiled run is the only one
        timings["systems (profiled)"] = m
        rows.append(
            {
                "grid": "systems (under cProfile)",
                "launches": m["launches"],
                "finished_runs": m["finished_runs"],
                "wall_s": round(m["seconds"], 1),
                "s_per_finished_run": round(m["seconds"] / max(1, m["finished_runs"]), 2),
            }
        )
    total = split["profile_total_s"]
    split_rows = [
        {"phase": k, "seconds": round(v, 2), "share": round(v / total, 3)} for k, v in split["split_s"].items()
    ]
    metrics_s = split["split_s"]["metrics"]
    outside = total - metrics_s
    md = table(
        rows,
        ["grid", "launches", "finished_runs", "wall_s", "s_per_finished_run"],
        "Grid wall time (human + simulated judges)",
    )
    md += "\n\n" + table(
        split_rows, ["phase", "seconds", "share"], f"Where the time goes (systems grid under cProfile, {total:.0f} s)"
    )
    print(
        f"\nshare outside metrics: {outside / total:.1%}; Hydra load_sweep_config: "
        f"{split['hydra_load_sweep_config_calls']} calls, "
        f"{split['hydra_load_sweep_config_s']:.1f} s"
    )
    print("top direct callees of pipeline.run_job (s):")
    for k, v in split["top_run_job_callees_s"].items():
        print(f"  {v:7.2f}  {k}")
    out = {
        "settings": {"quick": args.quick, "judges": ["human", "simulated"]},
        "grids": timings,
        "rows": rows,
        "profile": split,
        "share_outside_metrics": round(outside / total, 3),
        "split_rows": split_rows,
        "markdown": md,
    }
    write_json("overhead", out, args.out)
    return out


if __name__ == "__main__":
    main()
