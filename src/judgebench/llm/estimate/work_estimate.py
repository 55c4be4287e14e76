"""What a local model's scoring costs before it runs: prompts, input tokens, FLOPs and GPU-hours (``dry_run=true``).

Why: PRP all pairs on a top-100 pool is n(n-1) = 9,900 prompts a query, 425,700 on DL19; with FLAN-UL2 that is
hours of GPU time, more than a cell's default time limit, and nothing said so before the job was killed.

How (each printed line says which sources it used):

- prompts: what the ranker or judge would score (:meth:`planned_prompts`), those already in the cache left
  out (PRP's sliding and sort variants depend on the answers: an upper bound, not looked up);
- tokens: each prompt's pieces counted by the model's tokenizer when it is on disk, else ~4 characters a
  token; a passage is cut where scoring cuts it (``max_input_tokens``; PRP gives each passage half);
- FLOPs: 2 x parameters x tokens for a forward pass, with the non-embedding parameters of what runs on
  those tokens: a causal model's whole stack on the prompt, an encoder-decoder's encoder on the prompt and its
  decoder on the forced decoder tokens; the output layer once per scored position. The parameters come
  from the model's config built on the meta device when it is on disk, else ``model_spec.params_b`` (of an
  encoder-decoder, the encoder is taken as 40 %: 38-44 % in T5, FLAN-T5 and UL2). Attention's
  length-squared term and a causal model's shared prefixes (:mod:`judgebench.llm.local.prefix_cache`) are left
  out: under 5 % at these lengths, and an upper bound for causal models;
- GPU-hours: FLOPs / the rate measured for the model's shape on the GPU named in ``gpu_estimate.gpu``
  (:mod:`judgebench.llm.estimate.measured_rates`), else / (peak dense TFLOP/s x utilisation), the config's
  ``gpu_estimate``; the printed line says which.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHARS_PER_TOKEN = 4
FIELD_MARK = " x "  # a field's stand-in when the fixed text is counted: its own token, merging with no neighbour
ENCODER_SHARE = 0.4


@dataclass(frozen=True)
class GPUThroughput:
    """One GPU's assumed inference speed: ``peak_tflops`` (dense, in the dtype used) x ``utilisation``."""

    gpu: str = "A100-SXM4-80GB bf16"
    peak_tflops: float = 312.0
    utilisation: float = 0.4

    @classmethod
    def from_config(cls, node: Any) -> GPUThroughput:
        return cls(**dict(node)) if node else cls()

    @property
    def flops_per_s(self) -> float:
        return self.peak_tflops * 1e12 * self.utilisation

    def describe(self) -> str:
        return f"{self.gpu} at {self.peak_tflops:g} TFLOP/s x {self.utilisation:.2f} utilisation"

    def rate_for(self, size: ModelSize | None) -> tuple[float, str]:
        """(FLOP/s, what it is): the rate measured for this model's shape on this GPU
        (:mod:`judgebench.llm.estimate.measured_rates`), else peak x utilisation, marked as assumed."""
        from judgebench.llm.estimate.measured_rates import find

        rate = find(size.total, size.seq2seq, self.gpu) if size is not None else None
        if rate is not None:
            return rate.tflops * 1e12, (
                f"{self.gpu} at the {rate.tflops:g} TFLOP/s measured for the {rate.shape} shape ({rate.source})"
            )
        return self.flops_per_s, f"{self.describe()} (assumed: no rate measured for this shape on this GPU)"


@dataclass(frozen=True)
class ModelSize:
    """Parameters run per input token (``encoder``), per decoder token (``decoder``), per scored position (``head``)."""

    encoder: float
    decoder: float
    head: float
    total: float
    source: str
    seq2seq: bool = False


@dataclass
class PromptPlan:
    """What a component would score: (cache key or None when not known in advance, query, passages) per prompt."""

    prompts: Iterable[tuple[str | None, str, tuple[str, ...]]]
    template: str  # the prompt with every field filled with FIELD_MARK (see :meth:`TokenCounter.fixed`)
    forced_prefix: str = ""
    split_budget: bool = False  # PRP: the passages share the token budget equally
    note: str = ""


@dataclass(frozen=True)
class GPUCost:
    """What a count of tokens costs on a GPU: known only with the model's size (its parameters make the FLOPs)."""

    flops: float
    gpu_hours: float
    rate: str  # the throughput the GPU-hours assume, and whether it was measured
    cpu_hours: float = 0.0  # the same FLOPs on CPU cores (measured_rates.cpu_rate)
    cpu_rate: str = ""


@dataclass
class Work:
    """A dry run's count for one component: prompts asked and found in the cache, the tokens still to run
    through encoder and decoder, a fingerprint of the keys still to score (so a printed estimate says which
    work it counted), where the token counts and model size came from, and what it costs on a GPU."""

    prompts: int = 0
    cached: int = 0
    input_tokens: int = 0
    decoder_tokens: int = 0
    fingerprint: str = ""
    sources: list[str] = field(default_factory=list)
    cost: GPUCost | None = None  # None: the model's size is unknown, so are its FLOPs

    @property
    def gpu_hours(self) -> float:
        """The GPU-hours, 0 when they are unknown (a grid's total counts what it can)."""
        return self.cost.gpu_hours if self.cost is not None else 0.0

    @property
    def cpu_hours(self) -> float:
        """The same work on CPU cores, 0 when the FLOPs are unknown."""
        return self.cost.cpu_hours if self.cost is not None else 0.0

    @property
    def to_score(self) -> int:
        return self.prompts - self.cached


def model_source(spec: Any, cache_dir: str | Path) -> str:
    """Where the model would load from without converting or downloading anything (the alias: its converted copy)."""
    from judgebench.llm.local.offline_aliases import offline_model

    offline = offline_model(spec.model)
    return str(offline.converted_dir(cache_dir)) if offline is not None else str(spec.model)


def _on_disk_kwargs(source: str) -> dict:
    from judgebench.llm.local.hub import hub_cache_dir

    return {} if Path(source).expanduser().exists() else {"local_files_only": True, "cache_dir": str(hub_cache_dir())}


def config_on_disk(source: str, gguf_file: str | None = None) -> Any:
    """The model's config from a directory or the hub cache, never the network; None when not there."""
    try:
        from transformers import AutoConfig

        extra = {"gguf_file": gguf_file} if gguf_file else {}
        return AutoConfig.from_pretrained(source, **extra, **_on_disk_kwargs(source))
    except Exception:  # not on disk: the configured size is used
        return None


def looks_seq2seq(spec: Any) -> bool:
    """Without a config: model_spec.kind, else the T5 family by its name (T5, FLAN-T5, RankT5, UL2)."""
    if spec.kind != "auto":
        return spec.kind == "seq2seq"
    name = str(spec.model).lower()
    return "t5" in name or "ul2" in name


def model_size(spec: Any, source: str) -> ModelSize | None:
    """From the config on disk (exact), else from ``model_spec.params_b``; None when neither is there."""
    from judgebench.llm.local.model_loading import empty_model

    config = config_on_disk(source, spec.gguf_file)
    if config is not None:
        kind = "seq2seq" if config.is_encoder_decoder else "causal"
        return size_of(empty_model(config, kind), kind, "its config")
    if not spec.params_b:
        return None
    total = float(spec.params_b) * 1e9
    if looks_seq2seq(spec):
        return ModelSize(
            total * ENCODER_SHARE,
            total * (1 - ENCODER_SHARE),
            0.0,
            total,
            f"model_spec.params_b={spec.params_b:g}, encoder {ENCODER_SHARE:.0%}",
            seq2seq=True,
        )
    return ModelSize(total, 0.0, 0.0, total, f"model_spec.params_b={spec.params_b:g}")


def size_of(net: Any, kind: str, source: str) -> ModelSize:
    """Non-embedding parameter counts of a (meta-device) model."""

    def count(module: Any) -> float:
        return float(sum(p.numel() for p in module.parameters()))

    embed = count(net.get_input_embeddings())
    out = net.get_output_embeddings()
    head = count(out) if out is not None else embed
    total = count(net)
    if kind == "seq2seq":
        enc = count(net.get_encoder()) - embed  # T5's encoder and decoder hold the shared embedding
        dec = count(net.get_decoder()) - embed
        return ModelSize(enc, dec, head, total, source, seq2seq=True)
    tied = out is not None and out.weight is net.get_input_embeddings().weight
    body = total - embed - (0.0 if tied else head)
    return ModelSize(body, 0.0, head, total, source)


class TokenCounter:
    """Token counts of texts: the model's tokenizer when it is on disk, else characters / 4."""

    def __init__(self, source: str) -> None:
        self.tokenizer = None
        try:
            from transformers import AutoTokenizer

            from judgebench.progress import library_bars_off

            with library_bars_off():
                self.tokenizer = AutoTokenizer.from_pretrained(source, **_on_disk_kwargs(source))
        except Exception:  # not on disk: the stated estimate
            self.tokenizer = None
        self.source = (
            "its tokenizer"
            if self.tokenizer is not None
            else f"~{CHARS_PER_TOKEN} characters a token (tokenizer not on disk)"
        )
        self._memo: dict[str, int] = {}

    def count(self, text: str) -> int:
        n = self._memo.get(text)
        if n is None:
            if self.tokenizer is not None:
                n = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
            else:
                n = math.ceil(len(text) / CHARS_PER_TOKEN)
            self._memo[text] = n
        return n

    def fixed(self, template: str) -> int:
        """Tokens of the prompt's fixed text, special tokens included: the template with each field a marker word,
        less the markers (an empty field would let the text around it merge: '""' is one token, '"x"' three)."""
        marks = template.count(FIELD_MARK)
        if self.tokenizer is not None:
            return len(self.tokenizer(template)["input_ids"]) - marks * len(
                self.tokenizer(FIELD_MARK.strip(), add_special_tokens=False)["input_ids"]
            )
        return self.count(template.replace(FIELD_MARK, " ")) + 1


def estimate(
    plan: PromptPlan,
    size: ModelSize | None,
    counter: TokenCounter,
    max_input_tokens: int | None,
    seq2seq: bool,
    cache: Any,
    throughput: GPUThroughput,
) -> Work:
    """Count the prompts, the cached ones, the tokens still to run and their FLOPs (see the module docstring).

    ``cache`` is anything with ``in`` (a CallCache); a prompt without a key is counted as still to score."""
    work = Work()
    limit = max_input_tokens or 10**9
    decoder_prefix = (1 + counter.count(plan.forced_prefix)) if (seq2seq and plan.forced_prefix) else 1
    fixed = counter.fixed(plan.template) + (
        0 if seq2seq or not plan.forced_prefix else counter.count(plan.forced_prefix)
    )
    digest = hashlib.sha256()
    for key, query, passages in plan.prompts:
        work.prompts += 1
        if key is not None and key in cache:
            work.cached += 1
            continue
        if key is not None:
            digest.update(key.encode())
        head = fixed + counter.count(query)
        if plan.split_budget:
            cap = max(1, (limit - head - 4) // max(1, len(passages)))
            n = head + sum(min(counter.count(p), cap) for p in passages)
        else:
            n = head + sum(counter.count(p) for p in passages)
        work.input_tokens += min(n, limit)
        work.decoder_tokens += decoder_prefix if seq2seq else 0
    work.fingerprint = digest.hexdigest()
    if size is not None:
        scored = work.decoder_tokens if seq2seq else work.to_score
        flops = 2 * (size.encoder * work.input_tokens + size.decoder * work.decoder_tokens + size.head * scored)
        per_s, rate = throughput.rate_for(size)
        from judgebench.llm.estimate.measured_rates import cpu_rate

        cpu_per_s, cpu = cpu_rate(size.total, seq2seq)
        work.cost = GPUCost(flops, flops / per_s / 3600, rate, flops / cpu_per_s / 3600, cpu)
    work.sources = [counter.source, size.source if size is not None else "size unknown (set model_spec.params_b)"]
    return work


def describe(work: Work, size: ModelSize | None, throughput: GPUThroughput, note: str = "") -> str:
    params = f"{size.total / 1e9:.2f}B params from {size.source}" if size is not None else work.sources[1]
    cost = (
        f"~{work.cost.flops:.2e} FLOPs, ~{work.cost.gpu_hours:.3g} GPU-hours on "
        f"{work.cost.rate or throughput.describe()}"
        + (f", or ~{work.cost.cpu_hours:.3g} CPU-hours on {work.cost.cpu_rate}" if work.cost.cpu_rate else "")
        if work.cost is not None
        else "FLOPs and GPU-hours unknown"
    )
    extra = f"; {note}" if note else ""
    return (
        f"{work.prompts:,} prompts, {work.cached:,} cached, {work.to_score:,} to score "
        f"(~{work.input_tokens / 1e6:.2f}M input tokens by "
        f"{work.sources[0]}; {params}): {cost}{extra}"
    )
