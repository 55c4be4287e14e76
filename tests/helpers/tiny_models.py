"""Tiny random transformers models for tests (a few thousand parameters, saved to a temp dir, ~1 s).

* :func:`tiny_causal` - a 2-layer Llama (or GPT-2) with a WordLevel tokenizer and a chat template.
* :func:`tiny_seq2seq` - a 1-layer T5 whose vocabulary holds T5 sentinels (``<extra_id_0..11>``).
* :func:`tiny_controlled_causal` - a 1-layer Llama whose next-token logits are KNOWN in closed form:

      logit[t] = bias[t] + slope[t] * f,   f = (# marker tokens in the input) / (# input tokens)

  for every prompt (all other tokens get logit 0), so a test can predict exact log-probabilities and an
  input-dependent ranking ("documents with more ``good`` score higher").  It is built from weights only,
  so it goes through ``save_pretrained``/``from_pretrained`` like a real model:

  - every embedding is ``M*e0`` (M = 1000), the marker's is ``M*e0 + e1``;
  - q/k projections are zero, so attention is uniform over the (unpadded) causal window; v reads ``e1`` and o
    writes it to ``e3``: the last position's residual gains ``f*e3``; the MLP's down projection is zero;
  - RMSNorm weights ``M/sqrt(d)`` make both norms the identity up to a relative 1e-6 (the ``M*e0``
    component dominates the RMS);
  - ``lm_head[t] = bias[t]/M * e0 + slope[t] * e3``.

  A padding or attention-mask bug changes ``f``, so this model also catches batching bugs exactly.

  With ``recency=r > 0`` the attention is no longer uniform: q (head 0, dim 3) and k (head 0, dim 1) are
  constants ``a``, ``b`` with ``a*b/2 = r/theta`` (``theta`` the slowest RoPE frequency), so RoPE makes the
  score of the key ``d`` positions back ``-(r/theta) * sin(theta * d)`` (about ``-r*d``) and

      f = sum_t w_t * [token t is the marker],   w = softmax_t(-(r/theta) * sin(theta * (T-1-t)))

  a marker near the end counts much more than one far back: the model knows WHERE the marker is
  (PRP's "Passage B" is nearer the end than "Passage A"), and a wrong position id changes ``f``.

Tiny vocabularies do not contain arbitrary words: a word missing from them silently becomes ``<unk>``,
so pass what a test needs in ``vocab_extra`` (the builders assert the label words are not unk).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

BASE_WORDS = [
    "yes",
    "no",
    "Yes",
    "No",
    "true",
    "false",
    "0",
    "1",
    "2",
    "3",
    "A",
    "B",
    "good",
    "bad",
    "the",
    "a",
    "of",
    "is",
    "in",
    "to",
    "and",
    "what",
    "how",
    "query",
    "Query",
    "passage",
    "Passage",
    "document",
    "Document",
    "relevant",
    "Relevant",
    "score",
    "final",
    "##",
    ":",
    "?",
    ".",
    ",",
    "!",
    "answer",
    "Answer",
    "cat",
    "dog",
    "sun",
    "moon",
    "water",
    "fire",
    "tree",
    "river",
    "city",
    "music",
]
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)
CAUSAL_SPECIAL = ["<unk>", "<pad>", "<s>", "</s>", "<|system|>", "<|user|>", "<|assistant|>"]
SEQ2SEQ_SPECIAL = ["<pad>", "</s>", "<unk>"]
CONTROL_M = 1000.0


def _vocab(special: list[str], extra: list[str] | tuple[str, ...], tail: list[str] = ()) -> dict[str, int]:
    words = list(dict.fromkeys([*special, *BASE_WORDS, *extra, *tail]))
    return {w: i for i, w in enumerate(words)}


def _save_tokenizer(
    path: Path,
    vocab: dict[str, int],
    special: list[str],
    unk: str,
    pad: str,
    eos: str,
    bos: str | None,
    chat_template: str | None,
    append_eos: bool,
) -> None:
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if append_eos:  # like T5: every encoder input ends with </s>
        tok.post_processor = processors.TemplateProcessing(single=f"$A {eos}", special_tokens=[(eos, vocab[eos])])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token=unk,
        pad_token=pad,
        eos_token=eos,
        bos_token=bos,
        additional_special_tokens=[s for s in special if s not in (unk, pad, eos, bos)],
    )
    if chat_template:
        fast.chat_template = chat_template
    fast.save_pretrained(path)
    for word in ("yes", "no", "0", "1", "2", "3", "A", "B", "good"):
        assert fast.convert_tokens_to_ids(word) != fast.unk_token_id, word


def tiny_causal(
    tmp_path: Path,
    vocab_extra: list[str] | tuple[str, ...] = (),
    seed: int = 0,
    name: str | None = None,
    arch: str = "llama",
) -> Path:
    """A random 2-layer causal LM with a chat template; weights large enough that padding bugs show.

    ``arch="gpt2"`` has learned ABSOLUTE positions, so left padding without explicit position ids changes
    its logits (Llama's RoPE is shift-invariant and would hide that bug).  ``arch="mistral"``: Llama's shape with
    a sliding window (longer than any test prompt, so it changes no logit) that the shared prefix's attention refuses.
    """
    import torch
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
    )

    path = Path(tmp_path) / (name or f"tiny-{arch}")
    vocab = _vocab(CAUSAL_SPECIAL, vocab_extra)
    _save_tokenizer(path, vocab, CAUSAL_SPECIAL, "<unk>", "<pad>", "</s>", "<s>", CHAT_TEMPLATE, False)
    ids = {"pad_token_id": vocab["<pad>"], "bos_token_id": vocab["<s>"], "eos_token_id": vocab["</s>"]}
    if arch == "gpt2":
        cfg, cls = (
            GPT2Config(
                vocab_size=len(vocab), n_embd=16, n_layer=2, n_head=2, n_positions=512, initializer_range=0.5, **ids
            ),
            GPT2LMHeadModel,
        )
    else:
        shape = dict(
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=512,
            initializer_range=0.5,
            tie_word_embeddings=False,
            **ids,
        )
        cfg, cls = (
            (MistralConfig(sliding_window=400, **shape), MistralForCausalLM)
            if arch == "mistral"
            else (LlamaConfig(**shape), LlamaForCausalLM)
        )
    torch.manual_seed(seed)
    cls(cfg).save_pretrained(path)
    return path


def tiny_seq2seq(
    tmp_path: Path,
    vocab_extra: list[str] | tuple[str, ...] = (),
    seed: int = 0,
    name: str = "tiny-t5",
    n_sentinels: int = 12,
) -> Path:
    """A random 1-layer T5; ``<extra_id_0>``..``<extra_id_{n-1}>`` are in the vocabulary (RankT5 reads
    ``<extra_id_10>``)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    path = Path(tmp_path) / name
    sentinels = [f"<extra_id_{i}>" for i in range(n_sentinels)]
    vocab = _vocab(SEQ2SEQ_SPECIAL, vocab_extra, sentinels)
    _save_tokenizer(path, vocab, SEQ2SEQ_SPECIAL + sentinels, "<unk>", "<pad>", "</s>", None, None, True)
    cfg = T5Config(
        vocab_size=len(vocab),
        d_model=16,
        d_kv=8,
        d_ff=32,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=32,
        initializer_factor=4.0,
        pad_token_id=vocab["<pad>"],
        eos_token_id=vocab["</s>"],
        decoder_start_token_id=vocab["<pad>"],
    )
    torch.manual_seed(seed)
    T5ForConditionalGeneration(cfg).save_pretrained(path)
    return path


def tiny_controlled_causal(
    tmp_path: Path,
    bias: dict[str, float],
    slope: dict[str, float] | None = None,
    marker: str = "good",
    vocab_extra: list[str] | tuple[str, ...] = (),
    name: str = "tiny-controlled",
    recency: float = 0.0,
) -> Path:
    """A Llama whose logits are ``bias[t] + slope[t] * (marker fraction of the input)`` (see the module docstring).

    The spec is saved as ``control.json`` beside the weights; :func:`controlled_logits` evaluates it.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(tmp_path) / name
    vocab = _vocab(CAUSAL_SPECIAL, vocab_extra)
    _save_tokenizer(path, vocab, CAUSAL_SPECIAL, "<unk>", "<pad>", "</s>", "<s>", CHAT_TEMPLATE, False)
    d, m = 8, CONTROL_M
    cfg = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=d,
        intermediate_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        pad_token_id=vocab["<pad>"],
        bos_token_id=vocab["<s>"],
        eos_token_id=vocab["</s>"],
        rms_norm_eps=1e-6,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(cfg)
    slope = slope or {}
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        emb = model.model.embed_tokens.weight
        emb[:, 0] = m
        emb[vocab[marker], 1] = 1.0
        layer = model.model.layers[0]
        layer.self_attn.v_proj.weight[0, 1] = 1.0  # head 0, dim 0 <- marker indicator
        layer.self_attn.o_proj.weight[3, 0] = 1.0  # residual dim 3 <- mean of the indicator = f
        theta = float(model.model.rotary_emb.inv_freq[-1])  # head_dim 4: dims (1, 3) rotate at this frequency
        qk = math.sqrt(2 * recency / theta)
        layer.self_attn.q_proj.weight[3, 0] = qk / m
        layer.self_attn.k_proj.weight[1, 0] = qk / m
        for norm in (layer.input_layernorm, layer.post_attention_layernorm, model.model.norm):
            norm.weight.fill_(m / math.sqrt(d))
        for word, b in bias.items():
            model.lm_head.weight[vocab[word], 0] = b / m
        for word, s in slope.items():
            model.lm_head.weight[vocab[word], 3] = s
    model.save_pretrained(path)
    spec = {
        "bias": {str(vocab[w]): b for w, b in bias.items()},
        "slope": {str(vocab[w]): s for w, s in slope.items()},
        "marker_id": vocab[marker],
        "vocab_size": len(vocab),
        "recency": recency,
        "theta": theta,
    }
    (path / "control.json").write_text(json.dumps(spec))
    return path


def controlled_logits(path: Path, input_ids: list[int]) -> np.ndarray:
    """The exact next-token logits (vocab_size,) the controlled model gives for ``input_ids`` (unpadded)."""
    spec = json.loads((Path(path) / "control.json").read_text())
    back = np.arange(len(input_ids))[::-1]  # distance of each position from the last one
    score = (
        -(spec["recency"] / spec["theta"]) * np.sin(spec["theta"] * back)
        if spec["recency"]
        else np.zeros(len(input_ids))
    )
    w = np.exp(score - score.max())
    f = float((w / w.sum()) @ (np.asarray(input_ids) == spec["marker_id"]))
    out = np.zeros(spec["vocab_size"])
    for t, b in spec["bias"].items():
        out[int(t)] += b
    for t, s in spec["slope"].items():
        out[int(t)] += s * f
    return out


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max()
    return x - np.log(np.exp(x).sum())
