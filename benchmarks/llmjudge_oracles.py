"""The paper's oracle test on the 33 real LLM judges of LLMJudge: one command runs +experiment=llmjudge_oracles
(six oracles x the human labels and the 33 submissions, 204 cells) and compare over it, then prints the judges
ranked by discriminative power against the oracles' construction order (pairs ordered as constructed, reversed,
undecided, separated worse than humans; the oracles-only per-query tau with its t interval; tau and tau_AP of the
means as points) beside kappa, rho(kappa, .) across judges with its interval and permutation p, and the
one-sentence answer.

Everything runs in a fresh temporary directory (MLflow store, cache); the LLMJudge files come from --data (default
JUDGEBENCH_LLMJUDGE_DIR, else ../shared/data/llmjudge beside the repository). --quick runs three submissions.

    python -m benchmarks.llmjudge_oracles [--quick] [--data DIR]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, parser, table, write_json

NAME = "llmjudge_oracles"
QUICK = ["human", "submissions/willia-umbrela1.txt", "submissions/TREMA-nuggets.txt", "submissions/Olz-gpt4o.txt"]


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} ... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument(
        "--data",
        type=Path,
        default=Path(os.environ.get("JUDGEBENCH_LLMJUDGE_DIR") or REPO.parent / "shared" / "data" / "llmjudge"),
        help="the LLMJudge directory (default JUDGEBENCH_LLMJUDGE_DIR, else ../shared/data/llmjudge)",
    )
    args = ap.parse_args(argv)
    import pandas as pd

    env = {k: v for k, v in os.environ.items() if k != "JUDGEBENCH_CACHE_DIR"}
    env.update({"JUDGEBENCH_LLMJUDGE_DIR": str(args.data.resolve()), "HYDRA_FULL_ERROR": "1"})
    with tempfile.TemporaryDirectory(prefix="jb-llmjudge-oracles-") as tmp:
        work = Path(tmp)
        sweep = [
            sys.executable,
            str(REPO / "run.py"),
            "-m",
            "+experiment=llmjudge_oracles",
            "progress=false",
            f"hydra.sweep.dir={work / 'multirun'}",
            *([f"judge.path={','.join(QUICK)}"] if args.quick else []),
        ]
        run_s = _run(sweep, work, env)
        out = work / "compare"
        compare_s = _run([sys.executable, "-m", "judgebench.compare", f"experiment={NAME}", f"out={out}"], work, env)
        table1 = pd.read_csv(out / "table1_llmjudge.csv", index_col=0)
        judges = pd.read_csv(out / "discrimination.csv")
        corr = pd.read_csv(out / "discrimination_correlations.csv")
    from judgebench.compare.analyses.discrimination import answer as one_sentence

    answer = one_sentence("llmjudge", corr, len(judges))
    cells = len(table1) * (len(judges) + 1)
    rows = [
        {
            "rank": i + 1,
            "judge": r.judge,
            "kappa": round(r.kappa_graded, 3),
            "as_constructed": int(r.as_constructed),
            "reversed": int(r.reversed),
            "undecided": int(r.undecided),
            "worse_than_humans": int(r.worse_than_humans),
            "per-query tau oracles": f"{r.query_tau_oracles:.3f} "
            f"[{r.query_tau_oracles_lo:.2f}, {r.query_tau_oracles_hi:.2f}]",
            "tau oracles (means)": f"{r.tau_oracles:.3f}",
            "tau_AP oracles (means)": f"{r.tau_ap_oracles:.3f}",
        }
        for i, r in enumerate(judges.itertuples(index=False))
    ]
    human = {s: round(float(v), 4) for s, v in table1["human"].items()}
    markdown = "\n\n".join(
        [
            table([{"system": s, "human nDCG@10": v} for s, v in human.items()], title="Table 1, human column"),
            table(
                rows,
                title=f"{len(rows)} judges ranked by oracle pairs ordered as constructed (of "
                f"{int(judges['pairs'].max())}; "
                f"humans: {int(judges['human_as_constructed'].max())}), then per-query tau",
            ),
            table(
                [
                    {
                        "kappa vs": r.statistic,
                        "rho": round(r.rho, 3),
                        "rho 95% interval": f"[{r.rho_lo:+.3f}, {r.rho_hi:+.3f}]",
                        "p": round(r.p_value, 4),
                        "p_holm": round(r.p_holm, 4),
                        "judges": int(r.judges),
                        "verdict": r.verdict,
                    }
                    for r in corr.itertuples(index=False)
                ],
                title="rank correlations across judges",
            ),
            answer,
            table(
                [{"cells": cells, "sweep s": round(run_s, 1), "compare s": round(compare_s, 1)}],
                title="time (this machine)",
            ),
        ]
    )
    print(markdown)
    write_json(
        NAME,
        {
            "quick": args.quick,
            "cells": cells,
            "sweep_s": run_s,
            "compare_s": compare_s,
            "human_table1": human,
            "rows": rows,
            "correlations": corr.to_dict(orient="records"),
            "answer": answer,
            "markdown": markdown,
        },
        args.out,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
