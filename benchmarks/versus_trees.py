"""LLMJudge vs a bare AsyncOpenAI loop in several checkouts (and cache layouts), alternating, one run.

Each measurement runs in a fresh interpreter with the checkout's ``src`` first on the path (the measuring
code, bare client included, is this checkout's, so every tree is measured the same way): its own fake
server (50 ms), then for each concurrency the bare client and LLMJudge on the same pairs. The ratio is taken
inside each measurement, so load that comes and goes on a shared machine hits both sides; rounds alternate
the checkouts and the median ratio is reported.

    python -m benchmarks.versus_trees --trees main=/work/main branch=.:files segments=.:segments [--rounds 5]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from benchmarks.common import REPO, parser, table, write_json


def measure(n: int, concurrency: list[int], latency: float) -> dict:
    os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-for-the-fake-server")
    from benchmarks.common import synthetic_dataset
    from benchmarks.throughput import judge_pairs
    from benchmarks.versus import bare_client, render_prompts

    try:
        from judgebench.testing.fake_process import FakeLLMServer
    except ModuleNotFoundError:  # a checkout from before the fake server was split
        from judgebench.testing.fake_llm_server import FakeLLMServer

    dataset = synthetic_dataset(n)
    pairs = dataset.label_set()[["query_id", "doc_id"]]
    prompts = render_prompts(dataset, pairs)
    out = {}
    with FakeLLMServer(latency_s=latency) as srv:
        bare_client(srv.openai_base_url, prompts[:20], 4)
        for c in concurrency:
            srv.reset()
            bare = bare_client(srv.openai_base_url, prompts, c)
            bare = bare[0] if isinstance(bare, tuple) else bare  # (wall, CPU) since the transports were measured
            srv.reset()
            judged = judge_pairs(srv.openai_base_url, dataset, pairs, c, None)
            assert judged["labels"] == len(prompts), judged
            out[str(c)] = {"bare_s": bare, "judge_s": judged["seconds"], "ratio": bare / judged["seconds"]}
    return out


def _run_in(tree: Path, layout: str, args) -> dict | None:
    env = {k: v for k, v in os.environ.items() if k != "JUDGEBENCH_CACHE_LAYOUT"}
    env["PYTHONPATH"] = f"{tree}/src:{REPO}"  # the checkout's judgebench, this checkout's measuring code
    if layout:
        env["JUDGEBENCH_CACHE_LAYOUT"] = layout
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.versus_trees",
        "--child",
        "--pairs",
        str(args.pairs),
        "--latency",
        str(args.latency),
        "--concurrency",
        *map(str, args.concurrency),
    ]
    for _ in range(3):  # a connect timeout on an overloaded machine ends a bare run (no retries): measure again
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
        lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
        if lines:
            return json.loads(lines[-1][len("RESULT ") :])
        print(f"  {tree}: measurement failed: {(done.stderr.strip().splitlines() or ['?'])[-1][:200]}", flush=True)
    return None


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument(
        "--trees", nargs="+", default=["this=."], help="label=checkout[:layout] (layout: files or segments)"
    )
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse_hidden())
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(measure(args.pairs, args.concurrency, args.latency)), flush=True)
        return {}
    if args.quick:
        args.pairs, args.concurrency, args.rounds, args.latency = 40, [8], 1, 0.01
    trees = []
    for spec in args.trees:
        label, _, rest = spec.partition("=")
        path, _, layout = rest.partition(":")
        trees.append((label, Path(path).resolve(), layout))
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in trees}
    for r in range(args.rounds):
        for label, path, layout in trees:
            got = _run_in(path, layout, args)
            if got:
                runs[label].append(got)
                print(f"round {r} {label}: " + ", ".join(f"c={c} {v['ratio']:.3f}" for c, v in got.items()), flush=True)
    rows = [
        {
            "tree": label,
            "concurrency": c,
            "median_judge_vs_bare": round(statistics.median(o[str(c)]["ratio"] for o in outs), 3),
            "ratios": [round(o[str(c)]["ratio"], 3) for o in outs],
        }
        for label, outs in runs.items()
        if outs
        for c in args.concurrency
    ]
    md = table(
        rows,
        ["tree", "concurrency", "median_judge_vs_bare", "ratios"],
        f"LLMJudge / bare AsyncOpenAI, {round(args.latency * 1000)} ms, {args.pairs} pairs "
        f"(median of {args.rounds} alternating rounds)",
    )
    result = {
        "settings": {k: v for k, v in vars(args).items() if k not in ("out", "child")},
        "rows": rows,
        "runs": runs,
        "markdown": md,
    }
    write_json("versus_trees", result, args.out)
    return result


def argparse_hidden() -> str:
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
