"""Attention of a batch of prompt tails over ONE copy of their shared prefix's keys and values.

Why: the shared-prefix path (:mod:`judgebench.llm.local.prefix_cache`) used to hand the prefix to the model as a
``DynamicCache`` expanded to the batch; the cache's update concatenates ``[prefix; tail]`` per row, so a batch of
``b`` tails held ``b`` copies of the prefix's keys and values in every layer for the whole forward (issue 46: on
an H200 the sharing cost more than it saved).  Here the tails' forward runs with NO cache: every attention layer
gets the tails' own keys and values (``b`` rows, as computed) and reads the prefix's (batch 1, the memoised ones)
from a keyword argument, and the two parts are merged by their log-sum-exp (cascade attention)::

    softmax over [prefix; tail] = out_prefix * exp(lse_prefix - lse) + out_tail * exp(lse_tail - lse)

The prefix part is one attention call over the single copy of the prefix's keys, with every row's queries of a
key/value head folded into the rows of one long query sequence: nothing of the prefix is repeated per row.  Tails
are right-padded, so the causal mask alone keeps a real token from attending a pad; every prefix token is real and
attended by every query.  Each part runs in torch's fused attention kernel that also returns the log-sum-exp (CPU
flash; CUDA flash or memory-efficient), once it has matched a by-hand float32 computation on a random problem,
else by hand; the merge is in float32.

Supported where the model routes attention through transformers' attention interface, passes its keyword
arguments on to it and takes ``position_ids`` (Llama, Qwen2, Mistral, GPT-2, ... in transformers 5).  Checked at
run time by :func:`run_tails`: every layer must call it exactly once, without a 4-D mask (transformers builds
none for an implementation it has no mask function for), a sliding window,
a softcap or attention sinks; otherwise it says so and the caller falls back to the per-row cache.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

NAME = "judgebench_shared_prefix"  # the attention implementation's registered name
KV_ARG = "judgebench_prefix_kv"  # the keyword argument that carries the prefix's keys/values to every layer
_UNSUPPORTED_KWARGS = ("sliding_window", "softcap", "s_aux")


class Unsupported(Exception):
    """The model's attention cannot be computed here (the caller falls back to the per-row cache)."""


class PrefixKV:
    """Per layer (keys, values) of the prefix, batch 1; records which layers attended it and the key/value bytes
    the attention read (the prefix's storage counted once, plus the tails' own)."""

    def __init__(self, layers: list[tuple[Any, Any]]) -> None:
        self.layers = layers
        self.called: list[int] = []
        self.prefix_bytes = sum(
            {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for kv in layers for t in kv}.values()
        )  # the memory behind them, views or not
        self.tail_bytes = 0

    @property
    def kv_bytes(self) -> int:
        return self.prefix_bytes + self.tail_bytes


def shared_prefix_attention(
    module: Any,
    query: Any,
    key: Any,
    value: Any,
    attention_mask: Any,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Any, None]:
    """transformers' attention-function signature: ``query`` (b, hq, t, d), the tails' ``key``/``value``
    (b, hkv, t, d); returns (b, t, hq, d) as the built-in implementations do."""
    import torch

    shared: PrefixKV | None = kwargs.get(KV_ARG)
    if shared is None:
        raise Unsupported("the prefix's keys/values did not reach the attention layer")
    if attention_mask is not None or dropout or any(kwargs.get(k) is not None for k in _UNSUPPORTED_KWARGS):
        raise Unsupported("the layer uses a mask, dropout, sliding window, softcap or sinks")
    layer = getattr(module, "layer_idx", None)
    if layer is None or not 0 <= layer < len(shared.layers):
        raise Unsupported(f"attention layer index {layer!r} out of the prefix's {len(shared.layers)} layers")
    kp, vp = shared.layers[layer]
    b, hq, t, d = query.shape
    hkv = kp.shape[1]
    if key.shape[1] != hkv or hq % hkv or kp.shape[0] != 1:
        raise Unsupported(f"head counts: {hq} query, {key.shape[1]} tail and {hkv} prefix key/value heads")
    shared.called.append(layer)
    shared.tail_bytes += (key.numel() + value.numel()) * key.element_size()
    g, scale = hq // hkv, scaling if scaling is not None else d**-0.5
    # prefix: every row's queries of a key/value head as the rows of one matrix, against the one copy of the keys
    qf = query.reshape(b, hkv, g, t, d).permute(1, 0, 2, 3, 4).reshape(1, hkv, b * g * t, d)
    op, lse_p = _attend(qf, kp, vp, scale, causal=False)
    op = op.view(hkv, b, g, t, d).permute(1, 0, 2, 3, 4).reshape(b, hq, t, d)
    lse_p = lse_p.view(hkv, b, g, t).permute(1, 0, 2, 3).reshape(b, hq, t)
    # tail: causal over the row's own keys (right padding: a real token never sees a pad)
    kt, vt = (x[:, :, None].expand(b, hkv, g, t, d).reshape(b, hq, t, d) for x in (key, value))
    ot, lse_t = _attend(query, kt, vt, scale, causal=True)
    lse = torch.logaddexp(lse_p, lse_t)
    out = op.float() * torch.exp(lse_p - lse)[..., None] + ot.float() * torch.exp(lse_t - lse)[..., None]
    return out.to(query.dtype).transpose(1, 2).contiguous(), None


def _attend_by_hand(q: Any, k: Any, v: Any, scale: float, causal: bool) -> tuple[Any, Any]:
    """(softmax(q k^T * scale) v, log-sum-exp of the scores): float32 scores, as eager attention's softmax."""
    import torch

    s = torch.matmul(q, k.transpose(-1, -2)).float() * scale
    if causal:
        s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.matmul(torch.exp(s - lse[..., None]).to(v.dtype), v), lse


def _fused_kernel(device: str, dtype: Any) -> Any:
    """torch's fused attention that also returns the log-sum-exp, for this device and dtype, or None: the CPU flash
    kernel, on CUDA the flash kernel (half types) or the memory-efficient one.  Private ops of torch, so each is
    used only once it has matched :func:`_attend_by_hand` on a random problem here (per device and dtype)."""
    import torch

    known: dict = _FUSED
    if (device, dtype) in known:
        return known[device, dtype]
    aten = torch.ops.aten
    kernels = []
    if device == "cpu" and hasattr(aten, "_scaled_dot_product_flash_attention_for_cpu"):
        kernels.append(
            lambda q, k, v, scale, causal: aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, 0.0, causal, scale=scale
            )[:2]
        )
    if device == "cuda":
        if dtype in (torch.float16, torch.bfloat16) and hasattr(aten, "_scaled_dot_product_flash_attention"):
            kernels.append(
                lambda q, k, v, scale, causal: aten._scaled_dot_product_flash_attention(
                    q, k, v, 0.0, causal, False, scale=scale
                )[:2]
            )
        if hasattr(aten, "_scaled_dot_product_efficient_attention"):

            def efficient(q, k, v, scale, causal):
                out, lse = aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.0, causal, scale=scale)[
                    :2
                ]
                return out, lse[..., : q.shape[-2]]  # its log-sum-exp rows are padded to a multiple of 32

            kernels.append(efficient)
    known[device, dtype] = None
    gen = torch.Generator(device=device).manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 64, generator=gen, device=device).to(dtype) for n in (37, 37, 37))
    tol = 1e-4 if dtype == torch.float32 else 3e-2
    for kernel in kernels:
        try:
            ok = all(
                torch.allclose(a.float(), b.float(), atol=tol, rtol=tol)
                for causal in (False, True)
                for a, b in zip(kernel(q, k, v, 0.125, causal), _attend_by_hand(q, k, v, 0.125, causal))
            )
        except (RuntimeError, TypeError, NotImplementedError, ValueError):
            ok = False
        if ok:
            known[device, dtype] = kernel
            break
    return known[device, dtype]


_FUSED: dict = {}  # (device type, dtype) -> the fused kernel that passed its check, or None


def _attend(q: Any, k: Any, v: Any, scale: float, causal: bool) -> tuple[Any, Any]:
    """(attention output in q's dtype, float32 log-sum-exp of each query's scores): fused where torch has a
    kernel for it (checked once), by hand otherwise."""
    kernel = _fused_kernel(q.device.type, q.dtype)
    if kernel is not None:
        try:
            out, lse = kernel(q.contiguous(), k.contiguous(), v.contiguous(), scale, causal)
            return out, lse.float()
        except (RuntimeError, NotImplementedError):  # a shape the kernel does not take (e.g. its head size)
            pass
    return _attend_by_hand(q, k, v, scale, causal)


def _register() -> None:
    from transformers import AttentionInterface

    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, shared_prefix_attention)


@contextmanager
def _attention_switched(net: Any) -> Iterator[None]:
    """Every config of the network (sub-configs included) set to :data:`NAME` for one forward, then restored as
    it was; set on the stored field, not through the recursive setter, so that each keeps its own value."""
    configs = net.__dict__.get("_judgebench_attention_configs")  # found once per network: its modules do not change
    if configs is None:
        configs = net.__dict__["_judgebench_attention_configs"] = {
            id(c): c
            for m in net.modules()
            if (c := getattr(m, "config", None)) is not None and hasattr(c, "_attn_implementation_internal")
        }
    before = {i: c._attn_implementation_internal for i, c in configs.items()}
    try:
        for c in configs.values():
            c._attn_implementation_internal = NAME
        yield
    finally:
        for i, c in configs.items():
            c._attn_implementation_internal = before[i]


def run_tails(net: Any, kv: list[tuple[Any, Any]], kw: dict[str, Any]) -> tuple[Any, PrefixKV]:
    """``net(**kw)`` (input ids, positions, the 2-D padding mask; no cache) with every attention layer reading
    ``kv`` as the
    prefix; (logits, what it read).  Raises :class:`Unsupported` where a layer did not attend it exactly once."""
    import torch

    _register()
    shared = PrefixKV(kv)
    with _attention_switched(net), torch.inference_mode():
        logits = net(**kw, **{KV_ARG: shared}, use_cache=False).logits
    if sorted(shared.called) != list(range(len(kv))):
        raise Unsupported(f"{len(shared.called)} attention calls for {len(kv)} layers")
    return logits, shared
