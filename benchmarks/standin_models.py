"""Models that can be built with no network: random-weight T5s of a real model's shape, with a tokenizer trained here.

Why: a GPU node without internet and without prefetched models (``judgebench models download``) cannot load
RankT5 or FLAN-T5, but their speed and memory depend on shapes, not on weight values. A stand-in has the
published architecture of the model it stands for (layers, widths, heads, feed-forward kind, vocabulary
size), random weights in the dtype it will run in, and a BPE tokenizer trained on the dataset's own
passages (so prompts have realistic token counts; T5's sentinels ``<extra_id_N>`` are special tokens). It is
saved with ``save_pretrained`` and loaded through judgebench's ordinary loading path. Its rankings are
noise: throughput and memory are real, nDCG is not.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

# Published architectures (the models' config.json files); `tiny` is for the CPU smoke test.
SHAPES = {
    "t5-base": dict(
        d_model=768, d_ff=3072, num_layers=12, num_heads=12, d_kv=64, feed_forward_proj="relu", tie_word_embeddings=True
    ),
    "flan-t5-large": dict(
        d_model=1024,
        d_ff=2816,
        num_layers=24,
        num_heads=16,
        d_kv=64,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
    ),
    "flan-t5-xl": dict(
        d_model=2048,
        d_ff=5120,
        num_layers=24,
        num_heads=32,
        d_kv=64,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
    ),
    "flan-t5-xxl": dict(
        d_model=4096,
        d_ff=10240,
        num_layers=24,
        num_heads=64,
        d_kv=64,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
    ),
    "tiny": dict(
        d_model=32,
        d_ff=64,
        num_layers=2,
        num_heads=4,
        d_kv=8,
        feed_forward_proj="gated-gelu",
        tie_word_embeddings=False,
    ),
}
T5_VOCAB = 32128
SENTINELS = 100
SPECIALS = ["<pad>", "</s>", "<unk>"]


def train_tokenizer(texts: Iterable[str], path: Path, vocab_size: int) -> None:
    """A T5-like fast tokenizer (Metaspace BPE, </s> appended, 100 sentinels) trained on ``texts``, saved to
    ``path``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    sentinels = [f"<extra_id_{i}>" for i in range(SENTINELS)]
    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size - SENTINELS, special_tokens=SPECIALS, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_special_tokens(sentinels)
    tok.post_processor = processors.TemplateProcessing(
        single="$A </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="<unk>",
        pad_token="<pad>",
        eos_token="</s>",
        additional_special_tokens=sentinels,
    )
    fast.save_pretrained(path)


def build_t5(shape: str, path: Path, texts: list[str], device: str, dtype: str, seed: int = 0) -> Path:
    """Save a random-weight T5 of ``shape`` (see SHAPES) and its trained tokenizer into ``path``; returns ``path``."""
    import torch
    from transformers import AutoTokenizer, T5Config, T5ForConditionalGeneration

    path = Path(path)
    vocab = 2000 if shape == "tiny" else T5_VOCAB
    # the PRP and RankT5 words many times, so that " A", " B" and "Query:" are single tokens as in T5's vocabulary
    words = ["Passage A Passage B Output Passage A or Passage B: Query: Document: relevant query passage"] * 200
    train_tokenizer([*texts, *words], path, vocab)
    tok = AutoTokenizer.from_pretrained(path)
    config = T5Config(
        vocab_size=len(tok),
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=tok.pad_token_id,
        relative_attention_num_buckets=32,
        relative_attention_max_distance=128,
        **SHAPES[shape],
    )
    torch.manual_seed(seed)
    with torch.device(device):
        model = T5ForConditionalGeneration._from_config(
            config, dtype={"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[dtype]
        )
    from judgebench.progress import library_bars_off

    with library_bars_off():
        model.save_pretrained(path)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return path


# Decoder judges: the default `judge=transformers` model is Qwen2.5-7B-Instruct (its config.json); `tiny` for the CPU.
CAUSAL_SHAPES = {
    "qwen2.5-7b": dict(
        hidden_size=3584,
        intermediate_size=18944,
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        vocab_size=152064,
        max_position_embeddings=32768,
        rope_theta=1e6,
        tie_word_embeddings=False,
    ),
    "tiny": dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        vocab_size=None,
        max_position_embeddings=4096,
        tie_word_embeddings=False,
    ),
}
QWEN_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def train_causal_tokenizer(texts: Iterable[str], path: Path, vocab_size: int) -> None:
    """A Qwen-like fast tokenizer (byte-level BPE, ChatML template, <|endoftext|> as pad) trained on ``texts``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=special,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator([*texts, *["##final score: 0 1 2 3"] * 200], trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<|endoftext|>", eos_token="<|im_end|>", additional_special_tokens=special[1:]
    )
    fast.chat_template = QWEN_CHAT_TEMPLATE
    fast.save_pretrained(path)


def build_causal(shape: str, path: Path, texts: list[str], device: str, dtype: str, seed: int = 0) -> Path:
    """Save a random-weight Qwen2 decoder of ``shape`` (see CAUSAL_SHAPES) and its trained tokenizer into ``path``."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    path = Path(path)
    train_causal_tokenizer(texts, path, 2000 if shape == "tiny" else 32000)
    tok = AutoTokenizer.from_pretrained(path)
    dims = dict(CAUSAL_SHAPES[shape])
    dims["vocab_size"] = max(dims["vocab_size"] or 0, len(tok))  # the real vocabulary's size: the LM head's cost
    config = Qwen2Config(pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, **dims)
    torch.manual_seed(seed)
    with torch.device(device):
        model = Qwen2ForCausalLM._from_config(
            config, dtype={"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}[dtype]
        )
    from judgebench.progress import library_bars_off

    with library_bars_off():
        model.save_pretrained(path)
    del model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return path
