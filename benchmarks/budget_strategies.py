"""Which queries to label: uniform, stratified and active designs on paper_human (DL19, DL20, the biased simulated
judge), at equal budgets. Per (dataset, strategy, k): the mean 95 % interval width of the system differences
over the resamples, their coverage of the all-query human difference, the planner's predicted width and the
ratio of the two; then a plan per strategy for DL19, labelled from the held-back human labels and read back,
against the resampling code's estimate for the same sample.

    python -m benchmarks.budget_strategies [--store DIR] [--ks 10 20] [--resamples 200] [--signals systems labels]
        [--allocation neyman|proportional] [--experiment paper_human] [--datasets dl19 dl20] [--judge simulated]
        [--quick]

--store: a folder holding the grid's mlruns/ (``python run.py -m +experiment=paper_human`` run there);
without it the paper_human grid is run into a temporary folder first (about 1.5 min idle, 4 min on 2 loaded
cores). --signals: the planner's signals the active and stratified designs are built on (compare/budget/signals.py;
judges and entropy need 2 judges or logged probabilities, which paper_human lacks). The read-back runs on the
first dataset. --quick: ks 4 6 and 30 resamples (the tests' size, on a toy store).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from mlflow.tracking import MlflowClient
from scipy import stats

from benchmarks.common import REPO, parser, write_json
from benchmarks.common import table as markdown_table
from judgebench.compare.base import tables
from judgebench.compare.base.artifacts import Artifacts
from judgebench.compare.base.reference import References
from judgebench.compare.budget import experiment as budget
from judgebench.compare.budget import files as budget_files
from judgebench.compare.budget import plan as budget_plan
from judgebench.compare.budget import signals as budget_signals
from judgebench.compare.store.collect import collect_runs, select, split_views
from judgebench.identity.text_view import ORIGINAL
from judgebench.metrics import designs


def load(store: Path, experiment: str = "paper_human"):
    """compare's calibration cells (reference human_judged), the judge labels and the run files of the grid."""
    client = MlflowClient(f"sqlite:///{store / 'mlruns' / 'mlflow.db'}")
    everything = select(collect_runs(client, experiment, None, False, {}, None), None, None)
    jobs, _ = split_views(everything)
    art = Artifacts(client)
    per_query, labels = art.per_query(jobs), art.labels(everything)
    t1 = tables.table1(
        per_query, tables.system_types(jobs), tables.judge_order(jobs, None), list(dict.fromkeys(jobs["dataset"]))
    )
    original = labels[labels["text_view"] == ORIGINAL]
    cells = budget.cells(per_query, t1, original, References(per_query, "human_judged"), None, [])
    return cells, original, art.runs(jobs)


def measure(cell, ks, resamples, seed, u=None, signal="systems", allocation="neyman") -> list[dict]:
    pairs = budget_plan.pairs_of(cell, None)
    i, j = (np.array([p[x] for p in pairs]) for x in (0, 1))
    y, f = cell.y[i] - cell.y[j], cell.f[i] - cell.f[j]
    truth, rows = y.mean(axis=1), []
    u = budget_plan.systems_disagreement(cell) if u is None else u
    err = np.abs((y - f) - (y - f).mean(axis=1, keepdims=True)).mean(
        axis=0
    )  # per query: what the signal should predict
    rho = float(stats.spearmanr(u, err)[0])
    for k in ks:
        for strategy in designs.STRATEGIES:
            d = budget_plan.build(strategy, u, k, allocation)
            mask = d.draw(resamples, seed)
            mask = mask[mask.sum(axis=1) >= 2]
            e, half = budget_plan.estimate(d, y, f, mask, 0.95)
            predicted = float(budget_plan.predicted_width(d, y, f, k, 0.95).mean())
            width = float((2 * half).mean())
            rows.append(
                {
                    "dataset": cell.dataset,
                    "judge": cell.judge,
                    "signal": signal,
                    "strategy": strategy,
                    "k": k,
                    "samples": len(mask),
                    "labelled_mean": float(mask.sum(axis=1).mean()),
                    "width": width,
                    "coverage": float((np.abs(e.point - truth) <= half + 1e-12).mean()),
                    "predicted_width": predicted,
                    "predicted_over_measured": predicted / width,
                    "sd_of_estimates": float(e.point.std(axis=0).mean()),
                    "signal_error_spearman": rho,
                }
            )
    return rows


def read_back(cell, labels, runs, k, seed, tmp: Path, u=None, signal="systems", allocation="neyman") -> list[dict]:
    """A plan per strategy labelled from the held-back human labels (the label set's ``human`` column), read back."""
    out = []
    lab = labels[(labels["dataset"] == cell.dataset) & (labels["judge"] == cell.judge)]
    human = {(str(q), str(d)): int(h) for q, d, h in lab[["query_id", "doc_id", "human"]].itertuples(index=False)}
    for strategy in designs.STRATEGIES:
        folder = tmp / strategy
        plan = budget_plan.make(cell, strategy, k, seed, u, signal, allocation)
        files = budget_files.write([plan], labels, folder)
        lines = [ln.split("\t") for ln in files[1].read_text(encoding="utf-8").splitlines()]
        filled = folder / "labels.txt"
        filled.write_text("".join(f"{q} 0 {d} {human[(q, d)]}\n" for q, _, d, _ in lines), encoding="utf-8")
        rows = budget_files.read_plan(files[0])
        est = budget_files.readback([cell], rows, budget_files.read_labels(filled, rows), runs)
        got = est[est["target"] == "mean"].set_index("system").loc[cell.systems, "estimate"].to_numpy()
        e, _ = budget_plan.estimate(plan.design, cell.y, cell.f, plan.selected[None, :], 0.95)
        out.append(
            {
                "dataset": cell.dataset,
                "signal": signal,
                "strategy": strategy,
                "k": k,
                "labelled_queries": int(plan.selected.sum()),
                "labels": len(lines),
                "max_abs_difference": float(np.abs(got - e.point[0]).max()),
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, help="folder with the paper_human grid's mlruns/ (default: run the grid)")
    ap.add_argument("--ks", type=int, nargs="+", help="budgets (default 10 20; --quick 4 6)")
    ap.add_argument("--resamples", type=int, help="samples per design and k (default 200; --quick 30)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--signals", nargs="+", default=["systems"], choices=budget_signals.SIGNALS)
    ap.add_argument("--experiment", default="paper_human", help="the grid's MLflow experiment (with --store)")
    ap.add_argument("--datasets", nargs="+", help="datasets to measure (default: every one of the judge's)")
    ap.add_argument("--judge", default="simulated")
    ap.add_argument(
        "--allocation", default="neyman", choices=("neyman", "proportional"), help="the stratified design's"
    )
    args = ap.parse_args(argv)
    args.ks = args.ks or ([4, 6] if args.quick else [10, 20])
    args.resamples = args.resamples or (30 if args.quick else 200)
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    with tempfile.TemporaryDirectory() as tmp:
        store = args.store
        if store is None:
            store = Path(tmp) / "grid"
            store.mkdir()
            subprocess.run(
                [sys.executable, str(REPO / "run.py"), "-m", "+experiment=paper_human", "progress=false"],
                cwd=store,
                check=True,
                capture_output=True,
            )
        everyone, labels, runs = load(store, args.experiment)
        cells = [c for c in everyone if c.judge == args.judge and (not args.datasets or c.dataset in args.datasets)]
        if not cells:
            raise SystemExit(f"--judge {args.judge} --datasets {args.datasets}: no such calibration cell in {store}")
        signal = {(c.dataset, s): budget_signals.signal(s, c, everyone, labels) for c in cells for s in args.signals}
        rows = [
            r
            for c in cells
            for s in args.signals
            for r in measure(c, args.ks, args.resamples, args.seed, signal[c.dataset, s], s, args.allocation)
        ]
        first = cells[0].dataset
        back = [
            r
            for c in cells
            if c.dataset == first
            for s in args.signals
            for r in read_back(
                c, labels, runs, args.ks[0], args.seed, Path(tmp) / s, signal[c.dataset, s], s, args.allocation
            )
        ]
    table = pd.DataFrame(rows)
    uniform = table[table["strategy"] == "uniform"].set_index(["dataset", "signal", "k"])["width"]
    table["width_vs_uniform"] = [uniform.loc[key] for key in zip(table["dataset"], table["signal"], table["k"])]
    table["width_vs_uniform"] = table["width"] / table["width_vs_uniform"]
    shown = [
        "dataset",
        "signal",
        "strategy",
        "k",
        "width",
        "width_vs_uniform",
        "coverage",
        "predicted_over_measured",
        "signal_error_spearman",
    ]
    markdown = markdown_table(table[shown].round(3).to_dict("records")) + "\n\n" + markdown_table(back)
    write_json(
        "budget_strategies",
        {
            "settings": {
                "ks": args.ks,
                "resamples": args.resamples,
                "seed": args.seed,
                "signals": args.signals,
                "allocation": args.allocation,
                "experiment": args.experiment,
                "judge": args.judge,
                "reference": "human_judged",
                "targets": "every system pair's difference",
            },
            "rows": table.to_dict("records"),
            "read_back": back,
            "markdown": markdown,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
