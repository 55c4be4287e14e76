"""Batches of prompts for a local model: by a token budget on a GPU, by a row count on the CPU.

Why: a fixed row count (the configs' ``batch_size: 8``) left two thirds of an H200 idle on the UMBRELA judge
(issue 46: 34 prompts/s at batch 8, 102 at 128), while a large fixed count runs a small GPU out of memory on
long prompts. A token budget bounds what a forward holds (rows x the longest row, padding included), so
one default fills a large GPU and stays safe on a small one: :func:`auto_batch_tokens` derives it from the
memory left free after the weights were loaded (the same free memory the fit check of
:mod:`judgebench.llm.local.model_loading` read before loading). Prompts are sorted by length first, so a batch
holds prompts of similar length and little of what it computes is padding (:func:`padding_waste`).

On the CPU there is no memory to fill and a forward's time grows with its tokens: without an explicit
``batch_tokens`` the batches are ``batch_size`` rows, as before.
"""

from __future__ import annotations

from typing import Any

MAX_ROWS = 512  # rows of one forward under a token budget (beyond this, larger batches do not run faster)
MAX_WASTE = 0.08  # under a token budget, the padding share a batch may reach before the next row starts a new one
ACTIVATION_SHARE = 0.5  # of the GPU memory free after loading, what one forward's activations may take
MIN_TOKENS, MAX_TOKENS = 2048, 262_144  # the auto budget's bounds
SAFETY = 2.0  # the per-token estimate below counts one layer's live tensors once; allocator slack on top


def batches(
    lengths: list[int], max_rows: int, max_tokens: int | None, max_waste: float | None = None
) -> list[list[int]]:
    """Positions grouped into batches, shortest first: each batch at most ``max_rows`` rows and, with a
    budget, at most ``max_tokens`` padded tokens (rows x its longest row); a longer row than the budget
    goes alone. With ``max_waste``, a row that would make more than that share of the batch padding starts
    the next batch. Deterministic: equal lengths keep their input order."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    out: list[list[int]] = []
    real = 0  # real tokens of the open batch
    for i in order:
        n, rows = lengths[i], len(out[-1]) + 1 if out else 1
        fits = bool(out) and rows <= max_rows and (max_tokens is None or rows * n <= max_tokens)
        if fits and max_waste is not None:
            fits = padding_waste(real + n, rows * n) <= max_waste
        if fits:
            out[-1].append(i)
            real += n
        else:
            out.append([i])
            real = n
    return out


def padding_waste(real_tokens: int, padded_tokens: int) -> float:
    """Share of the tokens computed that were padding (0 when nothing was computed)."""
    return 1.0 - real_tokens / padded_tokens if padded_tokens else 0.0


def bytes_per_token(config: Any, dtype_bytes: int) -> int:
    """Activation bytes one token holds during a forward (one layer's live tensors: residual, norm, q/k/v/o,
    the MLP's gate, up and activation), plus its keys and values in every layer (the shared-prefix path runs
    with a cache); times :data:`SAFETY`. An estimate for the budget, not an accounting."""
    hidden = getattr(config, "hidden_size", None) or getattr(config, "d_model", None) or 4096
    inter = getattr(config, "intermediate_size", None) or getattr(config, "d_ff", None) or 4 * hidden
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "num_layers", None) or 32
    heads = getattr(config, "num_attention_heads", None) or getattr(config, "num_heads", None) or 32
    kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or getattr(config, "d_kv", None) or hidden // heads
    live = 6 * hidden + 3 * inter
    kv = 2 * layers * kv_heads * head_dim
    return int(SAFETY * dtype_bytes * (live + kv))


def auto_batch_tokens(net: Any, device: Any) -> int | None:
    """The token budget for a model on ``device``: :data:`ACTIVATION_SHARE` of the GPU's free memory over
    :func:`bytes_per_token`, within [MIN_TOKENS, MAX_TOKENS]; None off a GPU (batches by row count there)."""
    if getattr(device, "type", str(device)) != "cuda":
        return None
    import torch

    free = int(torch.cuda.mem_get_info(device)[0])
    dtype_bytes = next(net.parameters()).element_size()
    budget = int(free * ACTIVATION_SHARE / bytes_per_token(net.config, dtype_bytes))
    return max(MIN_TOKENS, min(MAX_TOKENS, budget))


def summary(usage: Any, batch_tokens: int | None, batch_size: int) -> str:
    """One log line of a model's :class:`~judgebench.llm.local.transformers_model.ModelUsage`: prompts, forwards, the
    budget and the padding share of what was computed."""
    budget = f"up to {batch_tokens} tokens" if batch_tokens else f"{batch_size} rows"
    return (
        f"{usage.prompts} prompts in {usage.batches} forwards of {budget}, padding {usage.padding_waste:.1%} "
        f"of {usage.padded_tokens} tokens computed"
    )
