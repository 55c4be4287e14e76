"""The device check of the local-model code path: RankT5 and PRP on FLAN-T5 over a few DL19 queries, then the
UMBRELA judge on a Qwen2.5-7B-shaped decoder (benchmarks/gpu_check_judge.py), on one GPU.

Run it through ``launch/gpu_check.sh`` (which says what it needs). For each check it loads the model through
judgebench's own loading path (device_map, the dtype asked, the model registry), ranks the queries' pools
(RankT5 pointwise over the top ``--rankt5-depth``, PRP all pairs over the top ``--prp-depth``) with an empty
call cache, and prints prompts/s, the peak GPU memory (weights included), the FLOP rate reached (FLOPs counted
as the dry run counts them) and nDCG@10 against the human qrels. Last, it releases every model and prints the
GPU memory still allocated (the registry must free it).

Models: a hub model found in the Hugging Face cache (``HF_HOME``, prefetched with ``judgebench models download``)
is used, offline; otherwise a random-weight stand-in of the same shape (benchmarks/standin_models.py) is built
here: its prompts/s and memory are real, its nDCG is noise and is marked so.

    launch/gpu_check.sh [--queries 5] [--prp-model google/flan-t5-xxl] [--out result.json]
    launch/gpu_check.sh --cpu --tiny    # the same code path on tiny stand-ins and the toy data, on the CPU
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

REFUSED = 2
RANKT5_MODELS = ("Soyoung97/RankT5-base",)
PRP_MODELS = ("google/flan-t5-xxl", "google/flan-t5-xl", "google/flan-t5-large")
SHAPE_OF = {
    "Soyoung97/RankT5-base": "t5-base",
    "google/flan-t5-xxl": "flan-t5-xxl",
    "google/flan-t5-xl": "flan-t5-xl",
    "google/flan-t5-large": "flan-t5-large",
}
H200_BF16_PEAK_TFLOPS = 989.0  # dense bf16 (H100/H200 SXM); the dry run's default assumes A100: 312 x 0.4


def refuse(message: str) -> int:
    print(f"gpu_check: {message}", file=sys.stderr)
    return REFUSED


def parse(argv: list[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="launch/gpu_check.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--cpu", action="store_true", help="run on the CPU in float32 (the smoke test); default: refuse without a GPU"
    )
    ap.add_argument(
        "--tiny", action="store_true", help="tiny random stand-ins and the bundled toy data: seconds, any machine"
    )
    ap.add_argument("--queries", type=int, default=5, help="DL19 queries to rank (default 5)")
    ap.add_argument(
        "--rankt5-depth", type=int, default=100, help="RankT5 re-ranks this much of each pool (default 100)"
    )
    ap.add_argument(
        "--prp-depth",
        type=int,
        default=20,
        help="PRP all pairs over this much of each pool (default 20: 380 prompts a query)",
    )
    ap.add_argument(
        "--rankt5-model", help=f"hub id or directory (default {RANKT5_MODELS[0]} when cached, else a stand-in)"
    )
    ap.add_argument(
        "--prp-model",
        help=f"hub id or directory (default: the first cached of {', '.join(PRP_MODELS)}, else a flan-t5-xxl stand-in)",
    )
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument(
        "--judge-pairs", type=int, help="DL19 label-set pairs for the judge check (default 1024; --tiny: 24)"
    )
    ap.add_argument(
        "--judge-batch-tokens",
        type=int,
        nargs="+",
        help="token budgets of the judge check, 0 = the default from free memory "
        "(default 16384 65536 0; --tiny: 512 4096)",
    )
    ap.add_argument("--skip-judge", action="store_true", help="leave out the decoder-judge check")
    ap.add_argument(
        "--data-dir",
        help="TREC DL files with passages/ "
        "(default JUDGEBENCH_TREC_DL_DIR, ../shared/data/trec-dl, shared/data/trec-dl)",
    )
    ap.add_argument(
        "--peak-tflops",
        type=float,
        default=H200_BF16_PEAK_TFLOPS,
        help="the GPU's dense peak, for the utilisation printed",
    )
    ap.add_argument("--out", type=Path, help="also write the results as JSON here")
    return ap.parse_args(argv)


def dataset(args: argparse.Namespace):
    """The first ``--queries`` judged DL19 queries with their pools, qrels and passages (toy data with --tiny)."""
    from judgebench.data.datasets import Dataset, load_toy

    if args.tiny:
        full = load_toy()
    else:
        from judgebench.data.trec_dl import DEFAULT_FILES, load_trec_dl

        repo = Path(__file__).resolve().parents[1]
        candidates = [
            args.data_dir,
            os.environ.get("JUDGEBENCH_TREC_DL_DIR"),
            repo.parent / "shared/data/trec-dl",
            repo / "shared/data/trec-dl",
        ]
        found = [Path(c) for c in candidates if c and (Path(c) / DEFAULT_FILES[2019]["passages"]).is_file()]
        if not found:
            raise SystemExit(
                refuse(
                    f"no DL19 passages ({DEFAULT_FILES[2019]['passages']}) under --data-dir, JUDGEBENCH_TREC_DL_DIR, "
                    "../shared/data/trec-dl or shared/data/trec-dl"
                )
            )
        full = load_trec_dl("dl19", 2019, data_dir=str(found[0]))
    keep = full.judged_queries()[: args.queries]
    pool = full.pool[full.pool["query_id"].isin(keep)]
    corpus = {d: full.corpus[d] for d in pool["doc_id"].unique()}
    return Dataset(
        full.name, {q: full.queries[q] for q in keep}, full.qrels[full.qrels["query_id"].isin(keep)], corpus, pool
    )


def choose_model(asked: str | None, defaults: tuple[str, ...], tiny: bool) -> tuple[str | None, str]:
    """(hub id or directory to load, how it was found); (None, shape) when a stand-in must be built."""
    from huggingface_hub import try_to_load_from_cache

    from judgebench.llm.local.hub import hub_cache_dir

    if tiny:
        return None, "tiny"
    for name in [asked] if asked else list(defaults):
        if Path(name).is_dir():
            return name, "directory"
        if isinstance(try_to_load_from_cache(name, "config.json", cache_dir=str(hub_cache_dir())), str):
            return name, "HF cache"
    return None, SHAPE_OF.get(asked or defaults[0], "flan-t5-xxl")


def run_check(kind: str, model: str, label: str, ds, args, device: str, dtype: str, cache_dir: Path) -> dict:
    """Load, rank, measure one check; returns its row."""
    import torch

    from judgebench.evaluation import HUMAN, evaluate, means
    from judgebench.llm.estimate import work_estimate as we
    from judgebench.rankers.prp import PRPRanker
    from judgebench.rankers.rankt5 import RankT5Ranker

    spec = {"model": model, "device": device, "dtype": dtype, "batch_size": args.batch_size, "max_input_tokens": 512}
    common = dict(model_spec=spec, cache_dir=str(cache_dir / kind), progress=False)
    if kind == "rankt5":
        ranker = RankT5Ranker(name="RankT5", rerank_depth=args.rankt5_depth, **common)
    else:
        ranker = PRPRanker(name="PRP", variant="allpairs", rerank_depth=args.prp_depth, **common)
    gpu = device.startswith("cuda")
    if gpu:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    lm = ranker.load_model()
    load_s = time.perf_counter() - t0
    plan = ranker.planned_prompts(ds, ds.corpus)
    size = we.size_of(lm.model, lm.kind, "the loaded model")
    work = we.estimate(
        plan,
        size,
        we.TokenCounter(str(Path(model).expanduser() if Path(model).exists() else model)),
        lm.max_input_tokens,
        lm.kind == "seq2seq",
        ranker.cache,
        we.GPUThroughput(),
    )
    t1 = time.perf_counter()
    run = ranker.rank(ds, ds.corpus)
    if gpu:
        torch.cuda.synchronize()
    score_s = time.perf_counter() - t1
    peak = (
        torch.cuda.max_memory_allocated() / 2**30 if gpu else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    )
    ndcg = means(evaluate(run, {HUMAN: ds.qrels}, ds.judged_queries()))[HUMAN]
    tflops = work.cost.flops / score_s / 1e12
    return {
        "check": kind,
        "model": model if label != "stand-in" else f"random {Path(model).name}",
        "weights": label,
        "dtype": lm.dtype,
        "device": lm.device_name,
        "queries": len(ds.judged_queries()),
        "prompts": ranker.scored_now,
        "planned_prompts": work.prompts,
        "input_tokens": work.input_tokens,
        "load_s": round(load_s, 1),
        "score_s": round(score_s, 2),
        "prompts_per_s": round(ranker.scored_now / score_s, 1),
        "peak_gib": round(peak, 2),
        "peak_is": "GPU max_memory_allocated" if gpu else "process max RSS",
        "tflops": float(f"{tflops:.3g}"),
        "utilisation": round(tflops / args.peak_tflops, 3) if gpu else None,
        "ndcg10": round(ndcg, 4),
        "ndcg_meaningful": label != "stand-in",
        "params_b": float(f"{size.total / 1e9:.3g}"),
        "run": run[["query_id", "doc_id", "rank"]].values.tolist(),
    }


def main(argv: list[str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else argv)
    try:
        import torch
    except ImportError:
        return refuse("this python has no torch")
    if not args.cpu and not torch.cuda.is_available():
        return refuse(
            f"no CUDA GPU visible to torch {torch.__version__} (CUDA build: {torch.version.cuda or 'no'}); "
            "run it on a GPU node, or `launch/gpu_check.sh --cpu --tiny` for the CPU smoke test"
        )
    device, dtype = ("cpu", "float32") if args.cpu else ("cuda", "bfloat16")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a check never downloads: models come from HF_HOME or are stand-ins
    from benchmarks.standin_models import build_t5
    from judgebench.llm.local.hub import hub_cache_dir
    from judgebench.llm.local.model_registry import REGISTRY

    ds = dataset(args)
    gpu_name = torch.cuda.get_device_name(0) if device == "cuda" else "CPU"
    import transformers

    print(
        f"gpu_check: {gpu_name}, torch {torch.__version__}, transformers {transformers.__version__}, {dtype}; "
        f"{len(ds.judged_queries())} {ds.name} queries; HF cache {hub_cache_dir()}",
        flush=True,
    )
    rows, failed = [], 0
    with tempfile.TemporaryDirectory(prefix="gpu_check-") as tmp:
        for kind, asked, defaults in (
            ("rankt5", args.rankt5_model, RANKT5_MODELS),
            ("prp", args.prp_model, PRP_MODELS),
        ):
            model, how = choose_model(asked, defaults, args.tiny)
            if model is None:
                why = "--tiny" if args.tiny else "no model in the HF cache"
                print(
                    f"  {kind}: {why}: building a random-weight {how} stand-in "
                    "(prompts/s and memory are real, nDCG is noise)",
                    flush=True,
                )
                t0 = time.perf_counter()
                model = str(build_t5(how, Path(tmp) / f"standin-{how}", list(ds.corpus.values()), device, dtype))
                print(f"  {kind}: stand-in built in {time.perf_counter() - t0:.0f} s", flush=True)
                how = "stand-in"
            try:
                rows.append(run_check(kind, model, how, ds, args, device, dtype, Path(tmp) / "cache"))
            except Exception as exc:  # noqa: BLE001 - report the check and go on with the next
                failed += 1
                print(
                    f"  {kind}: FAILED {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", flush=True
                )
                continue
            r = rows[-1]
            util = f" ({r['utilisation']:.0%} of {args.peak_tflops:g})" if r["utilisation"] is not None else ""
            ndcg = f"{r['ndcg10']:.4f}" + ("" if r["ndcg_meaningful"] else " (random weights: noise)")
            print(
                f"  {kind}: {r['model']} [{r['weights']}, {r['params_b']}B params, {r['dtype']} on {r['device']}]: "
                f"{r['prompts']} prompts in {r['score_s']} s = {r['prompts_per_s']} prompts/s, load {r['load_s']} s, "
                f"peak {r['peak_gib']} GiB ({r['peak_is']}), {r['tflops']} TFLOP/s{util}, nDCG@10 {ndcg}",
                flush=True,
            )
        REGISTRY.release_all()
        judge = None
        if not args.skip_judge:
            from benchmarks.gpu_check_judge import judge_check

            args.judge_pairs = args.judge_pairs or (24 if args.tiny else 1024)
            args.judge_batch_tokens = args.judge_batch_tokens or ([512, 4096] if args.tiny else [16384, 65536, 0])
            try:
                judge = judge_check(ds, args, device, dtype, Path(tmp) / "judge")
            except Exception as exc:  # noqa: BLE001 - report the check and go on
                failed += 1
                print(
                    f"  judge: FAILED {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", flush=True
                )
            REGISTRY.release_all()
        held = torch.cuda.memory_allocated() / 2**30 if device == "cuda" else None
    print(
        f"gpu_check: after releasing every model: {len(REGISTRY)} loaded"
        + (f", {held:.3f} GiB still allocated on the GPU" if held is not None else ""),
        flush=True,
    )
    if args.out:
        args.out.write_text(
            json.dumps(
                {"device": gpu_name, "rows": rows, "judge": judge, "failed": failed, "gpu_gib_after_release": held}
            )
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
