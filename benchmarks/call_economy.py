"""Call economy: how many paid LLM calls the paper's grid makes, on a cold cache, on a rerun, and when
8 jobs start in parallel on a cold cache.

The grid is the paper's 14 systems (BM25, 6 oracles, RankGPT-3.5, RankVicuna-7B, 5 simulated LLM rankers)
on TREC DL 2019 and 2020, judged by gpt_4o_mini pointed at the local fake OpenAI-compatible server, run as
``run.py -m`` in a temporary directory (MLflow store and call cache under it). The fake server counts
requests and prompt hashes: duplicates = requests - distinct prompts.

    python -m benchmarks.call_economy [--quick] [--latency 0.02] [--keep DIR]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, TREC_DL_DIR, parser, server_duplicates, table, write_json

RANKERS = ["bm25", "oracle", "rankgpt_gpt35", "rankvicuna_7b"] + [f"simllm_{i}" for i in range(1, 6)]
PERTURBATIONS = ["perfect", "swap_3", "swap_2", "swap_1", "swap_2_3", "swap_1_2"]
SYSTEMS = (
    ["bm25"]
    + [f"oracle_{p}" for p in PERTURBATIONS]
    + ["rankgpt_gpt35", "rankvicuna_7b"]
    + [f"simllm_{i}" for i in range(1, 6)]
)


def grid_overrides(datasets: list[str], systems: list[str]) -> list[str]:
    """benchmarks/conf/experiment/paper_grid.yaml: one job per (dataset, system), a system = ranker + perturbation."""
    return ["+experiment=paper_grid", f"dataset={','.join(datasets)}", f"+system={','.join(systems)}"]


def base_overrides(url: str, experiment: str) -> list[str]:
    return [
        f"hydra.searchpath=[file://{REPO / 'benchmarks' / 'conf'}]",
        "judge=gpt_4o_mini",
        f"judge.base_url={url}",
        f"experiment_name={experiment}",
        "progress=false",
    ]


def env_for_jobs() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JUDGEBENCH_CACHE_DIR"}  # the cache lives under the temp cwd
    env.update(
        {
            "JUDGEBENCH_TREC_DL_DIR": str(TREC_DL_DIR),
            "OPENAI_API_KEY": "sk-dummy-for-the-fake-server",
            "HYDRA_FULL_ERROR": "1",
        }
    )
    return env


def run(cmd: list[str], cwd: Path, timeout: float = 3600) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env_for_jobs(), capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} ... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return seconds, done


def mlflow_summary(cwd: Path, experiment: str) -> dict:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{cwd}/mlruns/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id], max_results=10000) if exp else []
    jobs = [r for r in runs if r.data.tags.get("judgebench.kind", "job") == "job" and "calls_made" in r.data.metrics]
    summaries = [r for r in runs if r.data.tags.get("judgebench.kind") == "judge_summary"]
    return {
        "runs": len(jobs),
        "finished": sum(r.info.status == "FINISHED" for r in jobs),
        "systems_per_dataset": {
            ds: len({r.data.tags.get("system") for r in jobs if r.data.tags.get("dataset") == ds})
            for ds in sorted({r.data.tags.get("dataset") for r in jobs})
        },
        "calls_made": int(sum(r.data.metrics.get("calls_made", 0) for r in jobs)),
        "calls_cached": int(sum(r.data.metrics.get("calls_cached", 0) for r in jobs)),
        # judge-level numbers live on the judge-summary runs (one per dataset, judge and text view)
        "label_set_sizes": {
            ds: int(max(r.data.metrics["label_set_size"] for r in summaries if r.data.tags.get("dataset") == ds))
            for ds in sorted({r.data.tags.get("dataset") for r in summaries})
        },
        "queries": {
            ds: int(max(r.data.metrics.get("n_queries", 0) for r in jobs if r.data.tags.get("dataset") == ds))
            for ds in sorted({r.data.tags.get("dataset") for r in jobs})
        },
    }


def label_set_size(dataset: str) -> tuple[int, int]:
    """(pairs in pool ∩ qrels, judged queries) computed from the data, independently of the grid."""
    if dataset == "toy":
        from judgebench.data.datasets import load_toy

        ds = load_toy()
    else:
        from judgebench.data.trec_dl import load_trec_dl

        ds = load_trec_dl(dataset, int("20" + dataset[2:]), data_dir=str(TREC_DL_DIR))
    return len(ds.label_set()), ds.label_set()["query_id"].nunique()


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.02, help="fake server latency per request (s)")
    ap.add_argument("--parallel", type=int, default=8, help="jobs started at once on a cold cache")
    ap.add_argument("--keep", type=Path, default=None, help="run in this folder and keep it (default: a temp dir)")
    args = ap.parse_args(argv)
    if args.quick:
        datasets, systems, parallel_cells = ["toy"], ["bm25", "oracle_swap_1"], 2
        args.latency = 0.0
    else:
        datasets, systems, parallel_cells = ["dl19", "dl20"], SYSTEMS, args.parallel
    n_systems = len(systems)

    from judgebench.testing.fake_process import FakeLLMServer

    label_sets = {ds: label_set_size(ds) for ds in datasets}
    label_total = sum(n for n, _ in label_sets.values())
    queries_total = sum(q for _, q in label_sets.values())
    naive = queries_total * n_systems * 100
    root = args.keep or Path(tempfile.mkdtemp(prefix="jb-call-economy-"))
    root.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    result: dict = {
        "settings": {
            "datasets": datasets,
            "systems": systems,
            "n_systems": n_systems,
            "latency_s": args.latency,
            "quick": args.quick,
            "workdir": str(root),
        },
        "label_set_sizes": {ds: n for ds, (n, _) in label_sets.items()},
        "label_set_total": label_total,
        "judged_queries": {ds: q for ds, (_, q) in label_sets.items()},
        "naive_calls": naive,
    }
    try:
        with FakeLLMServer(latency_s=args.latency) as srv:
            url = srv.openai_base_url
            grid = [
                sys.executable,
                str(REPO / "run.py"),
                "-m",
                *base_overrides(url, "call_economy"),
                *grid_overrides(datasets, systems),
            ]
            cold_dir = root / "grid"
            cold_dir.mkdir(exist_ok=True)
            reruns = [
                ("cold cache", []),
                ("rerun (finished cells skipped)", []),
                ("rerun force=true (every cell re-judged from the cache)", ["force=true"]),
            ]
            if args.quick:  # seconds: the force rerun alone exercises the cache path
                del reruns[1]
            for label, extra in reruns:
                srv.reset()
                seconds, _ = run(grid + extra + [f"hydra.sweep.dir={cold_dir}/multirun/{len(rows)}"], cold_dir)
                dup = server_duplicates(srv.stats())
                ml = mlflow_summary(cold_dir, "call_economy")
                rows.append(
                    {
                        "run": label,
                        "jobs": "1 process, sequential",
                        "calls": dup["requests"],
                        "distinct_prompts": dup["distinct_prompts"],
                        "duplicates": dup["duplicates"],
                        "label_set": label_total,
                        "calls_vs_label_set": round(dup["requests"] / label_total, 4),
                        "naive": naive,
                        "seconds": round(seconds, 1),
                    }
                )
                print(
                    f"{label}: {dup['requests']} calls ({dup['duplicates']} duplicates) in {seconds:.1f} s", flush=True
                )
                if label == "cold cache":
                    result["mlflow_cold"] = ml
            result["mlflow_after_reruns"] = ml

            # parallel: N single-cell jobs at once, cold cache, shared MLflow store
            par_dir = cold_dir  # same MLflow store (its schema exists), a fresh cache and experiment
            par_cache = root / "parallel-cache"
            cells = [(ds, r) for ds in datasets for r in ["bm25", "oracle", "rankgpt_gpt35", "rankvicuna_7b"]][
                :parallel_cells
            ]
            if args.quick:
                cells = [("toy", "bm25"), ("toy", "oracle")][:parallel_cells]
            srv.reset()
            started = time.perf_counter()
            procs = [
                subprocess.Popen(
                    [
                        sys.executable,
                        str(REPO / "run.py"),
                        *base_overrides(url, "parallel"),
                        f"dataset={ds}",
                        f"ranker={r}",
                        "perturbation=perfect",
                        f"cache_dir={par_cache}",
                        f"hydra.run.dir={root}/parallel-outputs/{i}",
                    ],
                    cwd=par_dir,
                    env=env_for_jobs(),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for i, (ds, r) in enumerate(cells)
            ]
            errs = [p.communicate(timeout=3600)[1] for p in procs]
            seconds = time.perf_counter() - started
            codes = [p.returncode for p in procs]
            stats = srv.stats()
            dup = server_duplicates(stats)
            sharing = {ds: sum(1 for d, _ in cells if d == ds) for ds in {d for d, _ in cells}}
            cells_label_total = sum(label_sets[ds][0] for ds in sharing)
            uncoordinated = sum(label_sets[ds][0] * k for ds, k in sharing.items())
            concurrency = 8  # judge.backend.max_concurrency of the API judge configs
            overlap = sum((k - 1) * concurrency for k in sharing.values())
            rows.append(
                {
                    "run": f"{len(cells)} jobs in parallel, cold cache",
                    "jobs": f"{len(cells)} processes",
                    "calls": dup["requests"],
                    "distinct_prompts": dup["distinct_prompts"],
                    "duplicates": dup["duplicates"],
                    "label_set": cells_label_total,
                    "calls_vs_label_set": round(dup["requests"] / cells_label_total, 4),
                    "naive": uncoordinated,
                    "seconds": round(seconds, 1),
                }
            )
            result["parallel"] = {
                "cells": [f"{d}/{r}" for d, r in cells],
                "return_codes": codes,
                "stderr_tails": [e[-1500:] for e, c in zip(errs, codes) if c != 0],
                "jobs_per_label_set": sharing,
                "max_in_flight": stats["max_in_flight"],
                "in_flight_overlap_bound": overlap,
                "uncoordinated_calls": uncoordinated,
                **dup,
                "mlflow": mlflow_summary(par_dir, "parallel") if all(c == 0 for c in codes) else None,
            }
            print(
                f"parallel: {dup['requests']} calls, {dup['distinct_prompts']} distinct, {dup['duplicates']} "
                "duplicates "
                f"(in-flight overlap bound {overlap}; uncoordinated worst case {uncoordinated}); exit codes {codes}",
                flush=True,
            )
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    md = table(
        rows,
        [
            "run",
            "jobs",
            "calls",
            "distinct_prompts",
            "duplicates",
            "label_set",
            "calls_vs_label_set",
            "naive",
            "seconds",
        ],
        f"Paid judge calls: {n_systems} systems x {', '.join(datasets)} (naive = queries x systems x 100)",
    )
    result.update(
        {
            "rows": rows,
            "markdown": md,
            "targets": {
                "cold_calls_equal_label_set": rows[0]["calls"] == label_total,
                "rerun_zero_calls": all(r["calls"] == 0 for r in rows[1:-1]),
                "parallel_duplicates_within_overlap": result["parallel"]["duplicates"]
                <= result["parallel"]["in_flight_overlap_bound"],
            },
        }
    )
    write_json("call_economy", result, args.out)
    return result


if __name__ == "__main__":
    main()
