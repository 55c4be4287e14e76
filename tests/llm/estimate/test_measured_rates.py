"""The dry run's GPU-hours use the rate measured for a model's shape on the named GPU, and say so; other shapes
and GPUs keep peak x utilisation, marked as assumed."""

import pytest

from judgebench.llm.estimate import work_estimate as we
from judgebench.llm.estimate.measured_rates import RATES, find


def plan(n: int) -> we.PromptPlan:
    return we.PromptPlan([(None, "what is a river bank", ("a passage " * 50,)) for _ in range(n)], "Q: x P: x")


def size(total: float, seq2seq: bool) -> we.ModelSize:
    return we.ModelSize(
        encoder=0.9 * total,
        decoder=0.1 * total if seq2seq else 0.0,
        head=0.05 * total,
        total=total,
        source="test",
        seq2seq=seq2seq,
    )


@pytest.mark.parametrize(
    "gpu,total,seq2seq,measured",
    [
        ("H200-SXM bf16", 7.62e9, False, 422.0),  # the Qwen2.5-7B judge shape
        ("NVIDIA H200", 7.0e9, False, 422.0),  # within 20 % of its parameters
        ("H200", 11.3e9, True, 125.0),  # FLAN-T5-XXL (params_b of its config file)
        ("H200", 7.62e9, True, None),  # an encoder-decoder of that size was not measured
        ("A100-SXM4-80GB bf16", 7.62e9, False, None),  # no rate measured on an A100
        ("H200", 3.0e9, False, None),
    ],
)
def test_estimate_uses_the_measured_rate(gpu, total, seq2seq, measured):
    counter = we.TokenCounter("/nonexistent/model")
    gpu_cfg = we.GPUThroughput(gpu=gpu, peak_tflops=989.0, utilisation=0.4)
    work = we.estimate(plan(100), size(total, seq2seq), counter, None, seq2seq, set(), gpu_cfg)
    per_s = (measured or 989.0 * 0.4) * 1e12
    assert work.gpu_hours == pytest.approx(work.cost.flops / per_s / 3600, rel=1e-9)
    text = we.describe(work, size(total, seq2seq), gpu_cfg)
    if measured:
        rate = find(total, seq2seq, gpu)
        assert rate is not None and rate.tflops == measured
        assert f"at the {measured:g} TFLOP/s measured for the {rate.shape} shape (" in text and "H200" in rate.source
    else:
        assert "(assumed: no rate measured for this shape on this GPU)" in text


def test_every_rate_names_its_source():
    assert all(r.source and r.tflops > 0 and r.params_b > 0 for r in RATES)


@pytest.mark.parametrize("total, measured", [(0.135e9, True), (0.14e9, True), (7.62e9, False)])
def test_the_estimate_gives_cpu_hours_beside_the_gpu_ones(total, measured):
    """SmolLM2-135M's 228.5 GFLOP/s on 2 cores (benchmarks/results/local_judge_prefix.json) for its shape; another
    shape says it assumed that rate."""
    import json
    from pathlib import Path

    bench = json.loads((Path(__file__).parents[3] / "benchmarks/results/local_judge_prefix.json").read_text())
    row = next(r for r in bench["rows"] if r["path"] == "unshared")
    counter = we.TokenCounter("/nonexistent/model")
    gpu_cfg = we.GPUThroughput(gpu="A100", peak_tflops=312.0, utilisation=0.4)
    work = we.estimate(plan(100), size(total, False), counter, None, False, set(), gpu_cfg)
    assert work.cpu_hours == pytest.approx(work.cost.flops / (row["gflop_per_s"] * 1e9) / 3600, rel=1e-9)
    text = we.describe(work, size(total, False), gpu_cfg)
    assert f", or ~{work.cpu_hours:.3g} CPU-hours on 2 CPU cores at" in text, text
    cpu = text.split(", or ~")[1]
    assert ("measured for SmolLM2-135M" in cpu) and (("assumed" in cpu) != measured), cpu
