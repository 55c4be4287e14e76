"""One scoring layer for every local (transformers) judge, ranker and rewriter.

Why one layer: the label/score of a local judge is read from next-token log-probabilities, and the
details that silently break that (left padding without position ids, a candidate that is really two
tokens, an unknown word mapped to ``<unk>``, a prompt truncated through the query, a forced prefix whose
trailing space the tokenizer dropped) are handled here once and tested once.

Weights are held process-wide by their load arguments (:mod:`judgebench.llm.local.model_registry`: one model at
a time by default, the previous one released), so the jobs of a Hydra multirun that run in one process load a
model once and never pile models up; every :class:`TransformersModel` still has its own ``usage`` and
``truncated`` counters, so per-job accounting stays per job. A NaN or infinite score is an error naming the
model, its dtype and device (:class:`~judgebench.exceptions.NonFiniteScores`), never a tie.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from judgebench.exceptions import ConfigError, NonFiniteScores
from judgebench.llm.local import encoding, hub, prompt_encoding, token_batches
from judgebench.llm.local.model_loading import load_weights, resolve_device, resolve_dtype, resolve_kind
from judgebench.llm.local.model_registry import REGISTRY, LoadedModel

log = logging.getLogger(__name__)

Kind = Literal["causal", "seq2seq", "auto"]


@dataclass
class ModelUsage:
    """What the model was asked to do: prompts scored/generated, non-pad input tokens run through the model
    (a shared prefix counted once), forward batches, wall seconds; prompts scored on a shared prefix, prompts
    that asked for one but fell back (the prefix's ids were not a prefix of theirs), and the prefix tokens run."""

    prompts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    batches: int = 0
    seconds: float = 0.0
    prefix_shared: int = 0
    prefix_fallbacks: int = 0
    prefix_tokens: int = 0
    padded_tokens: int = 0  # tokens the forwards computed, padding included (input_tokens are the real ones)
    prefix_kv_bytes: int = 0  # the most key/value bytes one forward of tails on a shared prefix read (prefix_cache)
    prefix_copy_batches: int = 0  # such forwards that held a copy of the prefix per row (the model's fallback)

    @property
    def padding_waste(self) -> float:
        """Share of the computed tokens that were padding."""
        return token_batches.padding_waste(self.input_tokens, self.padded_tokens)

    def as_metrics(self) -> dict[str, float]:
        return {**self.__dict__, "padding_waste": self.padding_waste}


def acquire_weights(
    name: str, gguf_file: str | None, kind: Kind, device: str, dtype: str, user: Any = None
) -> LoadedModel:
    """The process's one copy of these weights (:mod:`judgebench.llm.local.model_registry`), loaded when absent.

    ``device``, ``dtype`` and ``kind`` are resolved first ("auto" and its value share a load); offline
    (HF_HUB_OFFLINE=1) a hub model missing from the cache is an error naming it, before anything loads."""
    hub.require_local(name, gguf_file)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    kind = resolve_kind(name, gguf_file, kind)
    key = (name, gguf_file, kind, device, dtype)
    return REGISTRY.acquire(key, lambda: load_weights(name, name, gguf_file, kind, device, dtype), user=user)


def clear_memo() -> None:
    """Release every loaded model (frees memory between unrelated runs in one process)."""
    REGISTRY.release_all()


class TransformersModel:
    """A causal or seq2seq transformers model with batched, padding-safe next-token scoring.

    ``model`` is a hub name or a local directory; ``gguf_file`` a GGUF file name inside it (or a full
    path, then ``model`` may be omitted).  ``use_chat_template=None`` uses the tokenizer's template when
    it has one.  ``max_input_tokens`` bounds the encoded prompt (template and forced prefix included):
    longer prompts are an error, use :meth:`render` with ``truncate_field`` to shorten the document.
    ``batch_tokens`` bounds a forward's padded tokens (:mod:`judgebench.llm.local.token_batches`; default: from the
    GPU's free memory, none on the CPU); ``batch_size`` is the rows of a batch where no token budget applies.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        gguf_file: str | Path | None = None,
        kind: Kind = "auto",
        device: str = "cpu",
        dtype: str = "auto",
        batch_size: int = 8,
        max_input_tokens: int | None = None,
        use_chat_template: bool | None = None,
        progress: bool = False,
        batch_tokens: int | None = None,
    ):
        if gguf_file is not None and model is None:
            model, gguf_file = Path(gguf_file).parent, Path(gguf_file).name
        if model is None:
            raise ConfigError("TransformersModel needs model= (hub name or directory) or gguf_file=")
        name = str(Path(model).expanduser().resolve()) if Path(str(model)).expanduser().exists() else str(model)
        self.name = name
        self._loaded = acquire_weights(name, str(gguf_file) if gguf_file else None, kind, device, dtype, user=self)
        self._load_args = self._loaded.key
        self.kind, self.device_name, self.dtype = self._loaded.key[2], self._loaded.key[3], self._loaded.key[4]
        self.tokenizer = self._loaded.tokenizer
        self.device = (
            self.model.get_input_embeddings().weight.device
        )  # where inputs go (the first GPU of a split model)
        self.batch_size = max(1, int(batch_size))
        # a token budget per forward (llm/token_batches.py): the one given, else on a GPU what its free memory holds
        self.batch_tokens = (
            int(batch_tokens) if batch_tokens else token_batches.auto_batch_tokens(self.model, self.device)
        )
        self.max_input_tokens = max_input_tokens or self._default_max_tokens()
        has_template = bool(getattr(self.tokenizer, "chat_template", None))
        if use_chat_template and not has_template:
            raise ConfigError(f"use_chat_template=True but the tokenizer of {name} has no chat template")
        self.use_chat_template = has_template if use_chat_template is None else bool(use_chat_template)
        self.progress = progress
        self.usage = ModelUsage()
        self.truncated = 0
        params = inspect.signature(self.model.forward).parameters
        self._has_pos = "position_ids" in params
        self._has_keep = "logits_to_keep" in params

    @property
    def model(self) -> Any:
        """The weights; loaded again when the registry released them for another model."""
        if self._loaded.released:
            self._loaded = acquire_weights(*self._load_args, user=self)
        return self._loaded.net

    def describe(self) -> str:
        return f"{self.name} ({self.dtype} on {self.device_name})"

    def require_finite(self, values: np.ndarray, prompts: list[str], what: str) -> None:
        """Raise NonFiniteScores when any value is NaN or infinite: an overflow read as a tie would silently keep
        pool order."""
        bad = ~np.isfinite(values).all(axis=1) if values.ndim == 2 and values.size else np.zeros(0, dtype=bool)
        if not bad.any():
            return
        first = int(np.flatnonzero(bad)[0])
        advice = (
            "float16 overflows in T5 / UL2 models: set model_spec.dtype=bfloat16 (GPUs with bf16: A100, L4, H100, ...) "
            "or float32"
            if self.dtype == "float16"
            else "set model_spec.dtype=float32 (or bfloat16 on a GPU that has it) and check the model's weights"
        )
        raise NonFiniteScores(
            f"model {self.describe()} gave non-finite {what} (NaN or inf) for {int(bad.sum())} of "
            f"{len(values)} prompts, the first {prompts[first][:60]!r}...: {advice}"
        )

    def _default_max_tokens(self) -> int:
        cfg = self.model.config
        limit = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None) or 512
        tml = getattr(self.tokenizer, "model_max_length", None)
        if tml and tml < 1_000_000:
            limit = min(limit, tml)
        return int(min(limit, 8192))

    # One prompt to the ids it is scored by (:mod:`judgebench.llm.local.prompt_encoding`) and many prompts in one
    # tokenizer call (:mod:`judgebench.llm.local.encoding`): functions that take the model first, these methods as
    # they stand
    encode = prompt_encoding.encode
    token_id = prompt_encoding.token_id
    render = prompt_encoding.render
    render_many = encoding.render_many
    encode_many = encoding.encode_many

    # ----- scoring --------------------------------------------------------------------------------
    def _chunks(self, encoded: list[tuple[list[int], list[int] | None]]) -> list[list[int]]:
        """Batches of input positions, similar lengths together; over-long prompts are an error, never cut here."""
        for i, (ids, _) in enumerate(encoded):
            if len(ids) > self.max_input_tokens:
                raise ValueError(
                    f"prompt {i} is {len(ids)} tokens, over max_input_tokens={self.max_input_tokens}; "
                    "shorten the document with TransformersModel.render(..., truncate_field=...)"
                )
        return self._batches([len(ids) for ids, _ in encoded])  # progress is counted per prompt by the caller

    def _batches(self, lengths: list[int]) -> list[list[int]]:
        """Positions by batch, shortest first: a token budget when one applies, else ``batch_size`` rows."""
        if self.batch_tokens:
            return token_batches.batches(lengths, token_batches.MAX_ROWS, self.batch_tokens, token_batches.MAX_WASTE)
        return token_batches.batches(lengths, self.batch_size, None)

    def batching_summary(self) -> str:
        """One line for the logs: prompts, forwards, the budget and the padding share of what was computed."""
        return token_batches.summary(self.usage, self.batch_tokens, self.batch_size)

    def _pad(self, rows: list[list[int]]) -> tuple[Any, Any]:
        """Pad to a tensor: LEFT for causal models (the next-token position is the last column of every row)."""
        import torch

        lengths = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        width = int(lengths.max())
        cols = np.arange(width)
        # a row's real tokens: the last len(row) columns (left padding) or the first len(row)
        mask = cols >= (width - lengths)[:, None] if self.kind == "causal" else cols < lengths[:, None]
        ids = np.full((len(rows), width), self.tokenizer.pad_token_id, dtype=np.int64)
        ids[mask] = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
        return torch.from_numpy(ids), torch.from_numpy(mask.astype(np.int64))

    def _count(self, n: int, mask: Any, t0: float) -> None:
        self.usage.prompts += n
        self.usage.input_tokens += int(mask.sum())
        self.usage.padded_tokens += int(mask.numel())
        self.usage.batches += 1
        self.usage.seconds += time.perf_counter() - t0

    def _last_logits(
        self,
        prompts: list[str],
        forced_prefix: str,
        system: str | None,
        pick: Any,
        prefixes: list[str | None] | None = None,
        what: str = "scores",
    ) -> np.ndarray:
        """Run every prompt once and collect ``pick(last-position float32 logits (b, V))`` in input order.

        ``prefixes[i]``, a text that ``prompts[i]`` starts with, asks for the prompts that share it to be
        scored from one key/value cache of it (:mod:`judgebench.llm.local.prefix_cache`; causal models only).
        """
        import torch

        from judgebench.llm.local import prefix_cache

        encoded = self.encode_many(prompts, forced_prefix, system)
        out = np.empty((len(prompts), 0), dtype=np.float64)
        lengths = [0] * len(prompts)
        if prefixes is not None and self.kind == "causal":
            self._chunks(encoded)  # the length check, before any work
            lengths = prefix_cache.prefix_lengths(self, prompts, prefixes, [e[0] for e in encoded], system)
            for i, vals in prefix_cache.shared_last_logits(self, [e[0] for e in encoded], lengths, pick).items():
                if out.shape[1] == 0:
                    out = np.empty((len(prompts), vals.shape[0]), dtype=np.float64)
                out[i] = vals
        rest = [i for i, n in enumerate(lengths) if not n]
        for part in self._chunks([encoded[i] for i in rest]) if rest else []:
            chunk = [rest[j] for j in part]
            t0 = time.perf_counter()
            ids, mask = self._pad([encoded[i][0] for i in chunk])
            kw: dict[str, Any] = {
                "input_ids": ids.to(self.device),
                "attention_mask": mask.to(self.device),
                "use_cache": False,
            }
            if self.kind == "causal":
                if self._has_pos:  # explicit positions: left padding must not shift RoPE/learned positions
                    kw["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0).to(self.device)
                if self._has_keep:
                    kw["logits_to_keep"] = 1
            else:  # the forced decoder prefix is the same for every row: no decoder padding
                kw["decoder_input_ids"] = torch.tensor(
                    [encoded[i][1] for i in chunk], dtype=torch.long, device=self.device
                )
            with torch.inference_mode():
                vals = pick(self.model(**kw).logits[:, -1, :].float()).cpu().numpy()
            if out.shape[1] == 0:
                out = np.empty((len(prompts), vals.shape[1]), dtype=np.float64)
            out[chunk] = vals
            self._count(len(chunk), mask, t0)
        self.require_finite(out, prompts, what)
        return out if len(prompts) else np.empty((0, 0))

    def next_token_scores(
        self,
        prompts: list[str],
        candidates: list[str] | list[int],
        forced_prefix: str = "",
        system: str | None = None,
        prefixes: list[str | None] | None = None,
        *,
        normalise: bool = True,
    ) -> np.ndarray:
        """(n, len(candidates)) scores of each candidate token as the next token after the (chat-templated) prompt and
        the forced assistant/decoder prefix: log-probabilities normalised over the FULL vocabulary, or with
        ``normalise=False`` the RAW logits (RankT5 scores by the logit of <extra_id_10> at the first decoder step).

        ``candidates``: strings, each one token (:meth:`token_id`), or token ids. ``prefixes``: see
        :meth:`_last_logits` (same values, less recomputation)."""
        import torch

        ids = [self.token_id(c) if isinstance(c, str) else int(c) for c in candidates]
        cand = torch.tensor(ids, dtype=torch.long, device=self.device)
        if normalise:  # fused: ~1.7x logsumexp
            pick, what = (lambda lg: torch.log_softmax(lg, dim=-1).index_select(1, cand)), "log-probabilities"
        else:
            pick, what = (lambda lg: lg.index_select(1, cand)), "logits"
        res = self._last_logits(prompts, forced_prefix, system, pick, prefixes, what)
        return res.reshape(len(prompts), len(ids))

    def generate(
        self, prompts: list[str], max_new_tokens: int, system: str | None = None, progress: bool | None = None
    ) -> list[str]:
        """Greedy (temperature 0) batched generation; returns the new text only, special tokens removed."""
        import torch
        from transformers import GenerationConfig

        cfg = self.model.generation_config
        gen_cfg = GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=False,
            num_beams=1,
            pad_token_id=self.tokenizer.pad_token_id,
            eos_token_id=cfg.eos_token_id if cfg.eos_token_id is not None else self.tokenizer.eos_token_id,
            decoder_start_token_id=getattr(self.model.config, "decoder_start_token_id", None),
        )
        encoded = self.encode_many(prompts, "", system)
        out = [""] * len(prompts)
        for chunk in self._chunks(encoded):
            t0 = time.perf_counter()
            ids, mask = self._pad([encoded[i][0] for i in chunk])
            with torch.inference_mode():
                gen = self.model.generate(
                    input_ids=ids.to(self.device), attention_mask=mask.to(self.device), generation_config=gen_cfg
                )
            new = gen[:, ids.shape[1] :] if self.kind == "causal" else gen[:, 1:]
            for r, i in enumerate(chunk):
                out[i] = self.tokenizer.decode(new[r], skip_special_tokens=True).strip()
            self.usage.output_tokens += int((new != self.tokenizer.pad_token_id).sum())
            self._count(len(chunk), mask, t0)
        return out
