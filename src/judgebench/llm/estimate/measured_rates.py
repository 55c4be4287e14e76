"""Measured inference rates of local models, per model shape and GPU (or CPU), for the dry run's GPU- and CPU-hours.

Why: ``peak x utilisation`` (the config's ``gpu_estimate``, 0.4 of an A100 by default) is a guess, and the
rates measured on a real chip differ by two orders of magnitude between model shapes (an H200 ran a
Qwen2.5-7B-shaped judge at 56 % of its matmul ceiling and a t5-base RankT5 at 0.3 %). Where a rate was
measured for the model's shape on the GPU named in ``gpu_estimate.gpu``, the estimate uses it and says so;
otherwise it keeps ``peak x utilisation`` and says that it assumed.

Each rate is FLOPs counted as :mod:`judgebench.llm.estimate.work_estimate` counts them (whole prompts, a shared prefix
not subtracted) over the wall time of the package's own scoring path, so the estimate's FLOPs divided by it
give that path's time. Shapes are matched by total parameters (within :data:`MATCH`) and encoder-decoder or not.
"""

from __future__ import annotations

from dataclasses import dataclass

MATCH = 0.2  # relative difference of total parameters within which a model has a measured shape


@dataclass(frozen=True)
class MeasuredRate:
    shape: str
    params_b: float
    seq2seq: bool
    gpu: str  # matched as a word of gpu_estimate.gpu, case-insensitive
    tflops: float
    source: str


H200_RUN = (
    "launch/gpu_check.sh on one H200 (torch 2.11, transformers 5.17, bf16, random-weight stand-ins, DL19), 2026-12-04"
)
RATES = (
    MeasuredRate("Qwen2.5-7B", 7.62, False, "H200", 422.0, f"UMBRELA judge unshared, batch 128; {H200_RUN}"),
    MeasuredRate("FLAN-T5-XXL", 11.1, True, "H200", 125.0, f"PRP all pairs, batch 128; {H200_RUN}"),
    MeasuredRate("FLAN-T5-large", 0.78, True, "H200", 25.4, f"PRP all pairs, batch 128; {H200_RUN}"),
    MeasuredRate("t5-base", 0.22, True, "H200", 2.3, f"RankT5, batch 128, before issue 46's hot-path work; {H200_RUN}"),
)


def find(params: float, seq2seq: bool, gpu: str) -> MeasuredRate | None:
    """The measured rate for a model of ``params`` total parameters on ``gpu``, or None."""
    words = {w.strip("-_").upper() for w in gpu.replace("-", " ").replace("_", " ").split()}
    for rate in RATES:
        if (
            rate.seq2seq == seq2seq
            and rate.gpu.upper() in words
            and abs(params / 1e9 - rate.params_b) <= MATCH * rate.params_b
        ):
            return rate
    return None


# The CPU hours beside the GPU ones: a reader without a GPU asks how long the same work takes on the machine at hand.
CPU_RUN = "benchmarks/local_judge_prefix.py on 2 cores (torch 2.13 cpu, fp32, batch 8, unshared prompts), 2026-12-02"
CPU_RATES = (MeasuredRate("SmolLM2-135M", 0.135, False, "CPU", 0.2285, f"UMBRELA judge; {CPU_RUN}"),)
CPU_CORES = 2  # the cores the CPU rates were measured on


def cpu_rate(params: float, seq2seq: bool) -> tuple[float, str]:
    """(FLOP/s on CPU_CORES cores, what it is): the rate measured for this shape, else the nearest measured one,
    said to be assumed (a larger model runs its matmuls at least as efficiently, so it is no optimistic guess)."""
    for rate in CPU_RATES:
        if rate.seq2seq == seq2seq and abs(params / 1e9 - rate.params_b) <= MATCH * rate.params_b:
            return (
                rate.tflops * 1e12,
                f"{CPU_CORES} CPU cores at the {rate.tflops * 1e3:g} GFLOP/s measured for {rate.shape}",
            )
    near = min(CPU_RATES, key=lambda r: abs(r.params_b - params / 1e9))
    return near.tflops * 1e12, (
        f"{CPU_CORES} CPU cores at {near.tflops * 1e3:g} GFLOP/s (assumed: measured for {near.shape} only)"
    )
