"""The decoder-judge part of the GPU check (``launch/gpu_check.sh``): ``TransformersJudge`` end to end on DL19
label-set pairs with a random-weight stand-in of the default ``judge=transformers`` model's shape (Qwen2.5-7B),
at several token budgets (0: the default, from the GPU's free memory), with and without the shared prefix, side by side;
at the first budget also the shared prefix as the fallback runs it (``shared-copy``: a ``DynamicCache`` that holds the
prefix's keys/values once per row) beside the default (``shared``: the tails attend one copy of them).

First a plain matmul loop measures the chip's practical ceiling (bf16 8192^3 on a GPU); every judge run is
warmed up (its first pairs, on a separate cache) before it is timed. Per (budget, path): prompts/s, TFLOP/s
(2 x the non-embedding parameters x the tokens the model ran, a shared prefix counted once, plus the output
layer once per prompt), its share of the measured ceiling, the peak memory, the padding share, the largest key/value
bytes one forward of tails read on a shared prefix (``prefix_kv_mib``) and the forwards that copied the prefix per
row, and per budget the share of pairs whose label is the same on the unshared and shared paths.
"""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

import pandas as pd

WARMUP_PAIRS = 16


def matmul_ceiling(device: str, tiny: bool) -> float:
    """TFLOP/s of a square matmul loop (bf16 8192^3 on a GPU; fp32 512^3 on the CPU), after a warm-up."""
    import torch

    gpu = device.startswith("cuda")
    n, dtype, reps = (8192, torch.bfloat16, 20) if gpu and not tiny else (512, torch.float32, 5)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(3):
        a @ b
    if gpu:
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    if gpu:
        torch.cuda.synchronize()
    return 2 * n**3 * reps / (time.perf_counter() - t0) / 1e12


def label_pairs(ds, n: int) -> pd.DataFrame:
    """The first ``n`` label-set pairs (the label set's order: query by query)."""
    return ds.label_set()[["query_id", "doc_id"]].head(n).reset_index(drop=True)


def _judge(model_dir: str, device: str, dtype: str, budget: int, share: bool, cache: Path):
    from judgebench.judges.transformers_judge import TransformersJudge

    spec = {
        "model": model_dir,
        "device": device,
        "dtype": dtype,
        "batch_tokens": budget or None,
        "max_input_tokens": 4096,
    }
    return TransformersJudge(
        name="judge",
        family="open",
        model=model_dir,
        model_spec=spec,
        cache_dir=str(cache),
        progress=False,
        share_prefix=share,
    )


def _loaded(judge, copy: bool):
    """The judge's model; ``copy``: its shared prefix forced onto the per-row cache (the fallback path)."""
    lm = judge.load_model()
    if copy:
        lm.__dict__["_shared_attention"] = False
    return lm


def run_one(
    model_dir: str,
    ds,
    pairs: pd.DataFrame,
    device: str,
    dtype: str,
    budget: int,
    share: bool,
    tmp: Path,
    ceiling: float,
    copy: bool = False,
) -> tuple[dict, list[int]]:
    """Warm up, then time one judge run on an empty cache; (row, labels in pair order)."""
    import torch

    from judgebench.llm.estimate import work_estimate as we

    gpu = device.startswith("cuda")
    path = ("shared-copy" if copy else "shared") if share else "unshared"
    tag = f"{budget or 'auto'}-{path}"
    warm = _judge(model_dir, device, dtype, budget, share, tmp / f"warm-{tag}")
    _loaded(warm, copy)
    warm.judge(pairs.head(WARMUP_PAIRS), ds, ds.corpus)
    judge = _judge(model_dir, device, dtype, budget, share, tmp / f"run-{tag}")
    lm = _loaded(judge, copy)
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    result = judge.judge(pairs, ds, ds.corpus)
    if gpu:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    u = lm.usage
    size = we.size_of(lm.model, "causal", "the loaded model")
    flops = 2 * (size.encoder * u.input_tokens + size.head * u.prompts)
    tflops = flops / seconds / 1e12
    peak = (
        torch.cuda.max_memory_allocated() / 2**30 if gpu else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    )
    labels = result.labels.set_index(["query_id", "doc_id"])["relevance"]
    row = {
        "check": "judge",
        "path": path,
        "batch_tokens": lm.batch_tokens,
        "prompts": int(u.prompts),
        "forwards": int(u.batches),
        "tokens_per_prompt": round(u.input_tokens / max(1, u.prompts), 1),
        "padding_waste": round(u.padding_waste, 4),
        "seconds": round(seconds, 3),
        "prompts_per_s": round(u.prompts / seconds, 1),
        "tflops": float(f"{tflops:.3g}"),
        "share_of_ceiling": round(tflops / ceiling, 3),
        "peak_gib": round(peak, 2),
        "peak_is": "GPU max_memory_allocated" if gpu else "process max RSS",
        "params_b": float(f"{size.total / 1e9:.3g}"),
        "prefix_kv_mib": round(u.prefix_kv_bytes / 2**20, 3),
        "prefix_copy_batches": int(u.prefix_copy_batches),
    }
    return row, [int(labels[(q, d)]) for q, d in zip(pairs["query_id"], pairs["doc_id"])]


def judge_check(ds, args: Any, device: str, dtype: str, tmp: Path) -> dict:
    """The whole judge check: ceiling, stand-in, (budget x path) rows and the labels' agreement per budget."""
    from benchmarks.standin_models import build_causal

    ceiling = matmul_ceiling(device, args.tiny)
    print(
        f"  judge: matmul ceiling {ceiling:.4g} TFLOP/s "
        f"({'bf16 8192^3' if device.startswith('cuda') and not args.tiny else 'fp32 512^3'})",
        flush=True,
    )
    shape = "tiny" if args.tiny else "qwen2.5-7b"
    t0 = time.perf_counter()
    model_dir = str(build_causal(shape, tmp / f"standin-{shape}", list(ds.corpus.values()), device, dtype))
    print(
        f"  judge: random-weight {shape} stand-in built in {time.perf_counter() - t0:.0f} s "
        "(prompts/s and memory are real, labels are noise)",
        flush=True,
    )
    pairs = label_pairs(ds, args.judge_pairs)
    rows, agreement = [], {}
    for n, budget in enumerate(args.judge_batch_tokens):
        labels, runs = {}, [(False, False), (True, False)] + ([(True, True)] if n == 0 else [])
        for share, copy in runs:
            row, labels[share, copy] = run_one(model_dir, ds, pairs, device, dtype, budget, share, tmp, ceiling, copy)
            rows.append(row)
            print(
                f"  judge [{row['path']:>11}, budget {budget} tokens]: {row['prompts']} prompts in "
                f"{row['forwards']} forwards, "
                f"{row['prompts_per_s']} prompts/s, {row['tflops']} TFLOP/s ({row['share_of_ceiling']:.0%} of the "
                "ceiling), "
                f"{row['tokens_per_prompt']} tokens run/prompt, padding {row['padding_waste']:.1%}, peak "
                f"{row['peak_gib']} GiB, "
                f"prefix keys/values {row['prefix_kv_mib']} MiB a forward at most ({row['prefix_copy_batches']} "
                "copied per row)",
                flush=True,
            )
        same = sum(a == b for a, b in zip(labels[False, False], labels[True, False])) / max(1, len(pairs))
        agreement[str(budget or "auto")] = round(same, 4)
        unshared, shared = rows[-len(runs)], rows[-len(runs) + 1]
        print(
            f"  judge [budget {budget}]: shared/unshared speed "
            f"{shared['prompts_per_s'] / unshared['prompts_per_s']:.2f}x "
            f"(token ratio {unshared['tokens_per_prompt'] / shared['tokens_per_prompt']:.2f}x), "
            f"equal labels {same:.1%}",
            flush=True,
        )
    return {
        "ceiling_tflops": float(f"{ceiling:.4g}"),
        "shape": shape,
        "pairs": len(pairs),
        "rows": rows,
        "equal_labels": agreement,
    }
