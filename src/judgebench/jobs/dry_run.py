"""``dry_run=true``: what a cell (or the content-bias job) would still cost after the cache, asking nothing.

No answer is asked for, rewrites included (only the preflight's free model lookup is sent, checks/preflight.py):
a rewriter reports the documents it would rewrite (a cached rewrite is used as the text view, a missing one
is counted and its judge calls are counted as to make, with tokens
estimated on the original text). Estimates: ~4 characters per token; a rewrite's output as long as its
input (up to the backend's max_output_tokens), a judge answer 8 tokens, thinking its whole allowance (a
budget, or a level's thinking_reserve: an upper bound). A backend in batch mode is priced at its batch price,
and prompts in a saved batch (``<cache_dir>/batches``) are counted as resumed, not as calls to make: the real
run polls that batch and pays nothing for them again. Across the jobs of one process (a local multirun)
distinct calls are summed once, as the cache would make them. A dry run creates nothing in MLflow (it reads
the store, when there is one, to skip finished cells).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import pandas as pd

from judgebench.config.config_dir import CONF_DIR
from judgebench.jobs.common import JobOutcome

_PLANNED: dict[str, tuple[int, float]] = {}  # call key -> (est. tokens, est. cost), across the jobs of a process
_GPU_PLANNED: dict[str, float] = {}  # fingerprint of a local model's prompts still to score -> GPU-hours
_CPU_PLANNED: dict[str, float] = {}  # the same work -> CPU-hours (measured_rates.CPU_CORES cores)


def _remember(calls: list[tuple[str, int, float]]) -> str:
    for key, tokens, cost in calls:
        _PLANNED.setdefault(key, (tokens, cost))
    total_tokens = sum(t for t, _ in _PLANNED.values())
    total_cost = sum(c for _, c in _PLANNED.values())
    return f"grid so far: {len(_PLANNED)} distinct calls, ~{total_tokens} input tokens, ~${total_cost:.4f}"


def plan_rewrites(rewriter, dataset, where: str, doc_ids=None) -> tuple[dict[str, str], set[str]]:
    """(the text view as far as the cache knows it, documents whose rewrite is still to make); prints a line."""
    if not hasattr(rewriter, "plan"):
        return dataset.corpus, set()
    texts, todo = rewriter.plan(dataset, doc_ids)
    docs = len(rewriter._docs(dataset, doc_ids))
    backend = getattr(rewriter, "backend", None)
    resumed = set()
    if backend is not None and backend.mode == "batch":  # in a saved batch: resumed, not paid again (still pending)
        from judgebench.llm.batch_api.batch_store import BatchStore

        saved, _ = BatchStore(Path(rewriter.cache_dir) / "batches").pending(backend.backend)
        resumed = {d for d, key in rewriter._keys(todo).items() if key in saved}
    calls = []
    for d, prompt in todo.items():
        if d in resumed:
            continue
        n_in = len(prompt) // 4
        cost = (
            backend.cost(
                n_in,
                min(n_in, backend.max_output_tokens),
                batch=backend.mode == "batch",
                thinking_tokens=backend.thinking_allowance,
            )
            if backend is not None
            else 0.0
        )
        calls.append((f"rewrite:{rewriter.name}:{d}:{hashlib.sha256(prompt.encode()).hexdigest()[:16]}", n_in, cost))
    kind = "rewrites to make" if backend is not None else "local-model rewrites to run (no request)"
    in_batches = f"{len(resumed)} in saved batches (resumed, not paid again), " if resumed else ""
    prices = " at batch prices" if backend is not None and backend.mode == "batch" else ""
    print(
        f"[dry run] {where} / rewriter {rewriter.name}: {docs} documents, {docs - len(todo)} cached, {in_batches}"
        f"{len(calls)} {kind} (~{sum(c[1] for c in calls)} input tokens, ~${sum(c[2] for c in calls):.4f}{prices}); "
        f"{_remember(calls)}"
    )
    return texts, set(todo)


def _time_limit_min() -> tuple[float, str]:
    """The cell time limit a GPU-hour estimate is held against: this sweep's launcher's, else slurm_gpu's default."""
    try:
        from hydra.core.hydra_config import HydraConfig

        limit = HydraConfig.get().launcher.get("timeout_min")
        if limit:
            return float(limit), "hydra.launcher.timeout_min"
    except (ValueError, AttributeError):  # not under Hydra, or a launcher without a time limit
        pass
    from omegaconf import OmegaConf

    return float(
        OmegaConf.load(CONF_DIR / "hydra" / "launcher" / "slurm_gpu.yaml")["timeout_min"]
    ), "slurm_gpu's timeout_min"


def plan_local(component, plan, where: str, gpu_estimate) -> None:
    """Print a local model's work for ``plan`` (prompts, tokens, FLOPs, GPU-hours) and the grid's total so far;
    ``gpu_estimate``: the config's GPU the hours are estimated on (None: the default one)."""
    from judgebench.llm.estimate import work_estimate as we

    spec = component.spec
    source = we.model_source(spec, component.cache_dir)
    size = we.model_size(spec, source)
    throughput = we.GPUThroughput.from_config(gpu_estimate)
    seq2seq = size.seq2seq if size is not None else we.looks_seq2seq(spec)
    work = we.estimate(plan, size, we.TokenCounter(source), spec.max_input_tokens, seq2seq, component.cache, throughput)
    notes = [plan.note] if plan.note else []
    limit, name = _time_limit_min()
    if work.gpu_hours * 60 > limit:
        notes.append(
            f"OVER {name}={limit:g} min: set hydra.launcher.timeout_min={math.ceil(work.gpu_hours * 60 * 1.25)} "
            "(or lower ranker.rerank_depth)"
        )
    _GPU_PLANNED.setdefault(f"{spec.model_id}:{work.fingerprint}", work.gpu_hours)
    _CPU_PLANNED.setdefault(f"{spec.model_id}:{work.fingerprint}", work.cpu_hours)
    print(
        f"[dry run] {where} {spec.model_id}: {we.describe(work, size, throughput, '; '.join(notes))}; "
        f"grid so far: ~{sum(_GPU_PLANNED.values()):.2f} GPU-hours of local models "
        f"(~{sum(_CPU_PLANNED.values()):.2f} CPU-hours)"
    )


def plan_ranking(ranker, dataset, texts: dict[str, str], where: str, gpu_estimate) -> None:
    """A local model ranker's work (other rankers call no model: nothing to print)."""
    if (
        getattr(ranker, "spec", None) is not None
        and hasattr(ranker, "planned_prompts")
        and getattr(ranker, "backend", None) is None
    ):
        plan_local(ranker, ranker.planned_prompts(dataset, texts), f"{where} / ranker", gpu_estimate)


def plan_judging(
    judge,
    pairs: pd.DataFrame,
    dataset,
    texts: dict[str, str],
    pending: set[str],
    where: str,
    local: bool = False,
    gpu_estimate=None,
) -> None:
    """Print what judging `pairs` on `texts` would cost; pairs whose document awaits its rewrite count as to make.
    ``local``: a local model judge's work is estimated too (on ``gpu_estimate``, see :func:`plan_local`)."""
    if hasattr(judge, "planned_prompts") and local:
        plan_local(judge, judge.planned_prompts(pairs, dataset, texts), f"{where} / judge", gpu_estimate)
        return
    if not hasattr(judge, "plan"):
        print(f"[dry run] {where} / {judge.name}: no calls (judge makes no LLM calls)")
        return
    waiting = pairs["doc_id"].isin(pending)
    plan = judge.plan(pairs[~waiting], dataset, texts)
    per_call = plan.est_cost_usd / max(1, len(plan.to_call))
    calls = [(c.key, len(c.prompt) // 4, per_call) for c in plan.to_call]
    for c in judge.render(pairs[waiting], dataset, texts):  # the rewritten text is unknown: estimated on the original
        n_in = len(c.prompt) // 4
        calls.append(
            (
                f"after-rewrite:{c.key}",
                n_in,
                judge.backend.cost(
                    n_in, 8, batch=judge.backend.mode == "batch", thinking_tokens=judge.backend.thinking_allowance
                ),
            )
        )
    n_pairs, to_make = len(pairs), len(calls)
    resumed = f"{plan.in_batches} in saved batches (resumed, not paid again), " if plan.in_batches else ""
    unknown = (
        f" (and {plan.unknown_batches} saved batch(es) listing no prompts, resumed first)"
        if plan.unknown_batches
        else ""
    )
    print(
        f"[dry run] {where} / {judge.name}: {n_pairs} pairs, {n_pairs - to_make - plan.in_batches} cached, {resumed}"
        f"{to_make} calls to make{unknown} (~{sum(c[1] for c in calls)} input tokens, ~${sum(c[2] for c in calls):.4f}"
        f"{' at batch prices' if judge.backend.mode == 'batch' else ''}); {_remember(calls)}"
    )


def dry_run(ranker, dataset, judge, rewriter, system: str, where: str, gpu_estimate=None):
    """A grid cell's dry run (``where``: how its lines name it): its rewrites, its ranking, then its judging of
    the label set."""
    texts, pending = plan_rewrites(rewriter, dataset, where)
    plan_ranking(ranker, dataset, texts, where, gpu_estimate)
    plan_judging(judge, dataset.label_set()[["query_id", "doc_id"]], dataset, texts, pending, where, True, gpu_estimate)
    return JobOutcome("dry-run", system)
