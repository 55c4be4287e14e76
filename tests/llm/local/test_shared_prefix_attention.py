"""The one-copy attention over a shared prefix equals a plain softmax attention over [prefix; tail] per row.

The reference is written out here with torch only: each row's keys are the prefix's (repeated for it) followed by
its own, grouped-query heads repeated to the query heads, a causal mask on the tail, float64.
"""

from __future__ import annotations

import pytest
import torch

from judgebench.llm.local import shared_prefix_attention as spa


class Layer:
    def __init__(self, idx: int) -> None:
        self.layer_idx = idx


def reference(q, kp, vp, kt, vt, scale):
    b, hq, t, d = q.shape
    g = hq // kt.shape[1]
    k = torch.cat([kp.expand(b, -1, -1, -1), kt], dim=2).repeat_interleave(g, dim=1).double()
    v = torch.cat([vp.expand(b, -1, -1, -1), vt], dim=2).repeat_interleave(g, dim=1).double()
    s = q.double() @ k.transpose(-1, -2) * scale
    p = kp.shape[2]
    future = torch.ones(t, t, dtype=torch.bool).triu(1)
    s[..., p:] = s[..., p:].masked_fill(future, float("-inf"))
    return (torch.softmax(s, dim=-1) @ v).transpose(1, 2)  # (b, t, hq, d)


@pytest.mark.parametrize("fused", [True, False], ids=["fused-kernel", "by-hand"])
def test_one_copy_attention_equals_softmax_over_prefix_and_tail(fused, monkeypatch):
    if not fused:
        monkeypatch.setitem(spa._FUSED, ("cpu", torch.float32), None)
    elif spa._fused_kernel("cpu", torch.float32) is None:
        pytest.skip("this torch has no fused CPU attention kernel with a log-sum-exp")
    gen = torch.Generator().manual_seed(0)
    b, hq, hkv, p, t, d = 3, 6, 2, 11, 7, 16
    q = torch.randn(b, hq, t, d, generator=gen)
    kt, vt = torch.randn(b, hkv, t, d, generator=gen), torch.randn(b, hkv, t, d, generator=gen)
    kp, vp = torch.randn(1, hkv, p, d, generator=gen), torch.randn(1, hkv, p, d, generator=gen)
    shared = spa.PrefixKV([(kp, vp), (kp * 2, vp)])
    out, _ = spa.shared_prefix_attention(Layer(0), q, kt, vt, None, scaling=0.3, **{spa.KV_ARG: shared})
    assert out.shape == (b, t, hq, d)
    assert (out.double() - reference(q, kp, vp, kt, vt, 0.3)).abs().max() <= 1e-5
    out1, _ = spa.shared_prefix_attention(Layer(1), q, kt, vt, None, scaling=0.3, **{spa.KV_ARG: shared})
    assert (out1.double() - reference(q, kp * 2, vp, kt, vt, 0.3)).abs().max() <= 1e-5  # the layer's own prefix
    assert shared.called == [0, 1]
    # the prefix counted once (two layers, keys and values), the tails as computed
    assert shared.kv_bytes == 4 * (3 * hkv * p * d) + 4 * 2 * 2 * b * hkv * t * d


def test_a_layer_it_cannot_compute_is_refused_not_guessed():
    q, k = torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4)
    shared = spa.PrefixKV([(torch.zeros(1, 2, 5, 4), torch.zeros(1, 2, 5, 4))])
    with pytest.raises(spa.Unsupported, match="sliding window"):
        spa.shared_prefix_attention(Layer(0), q, k, k, None, sliding_window=4, **{spa.KV_ARG: shared})
    with pytest.raises(spa.Unsupported, match="did not reach"):
        spa.shared_prefix_attention(Layer(0), q, k, k, None)
    assert shared.called == []
