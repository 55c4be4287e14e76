"""Pointwise rankers that read one decoding step of a local model after a filled-in prompt (RG, RankT5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from judgebench.llm.local.prefix_cache import text_before
from judgebench.rankers.model_ranker import PointwiseRanker


@dataclass
class PromptedRanker(PointwiseRanker):
    """Fills ``prompt`` for each (query, passage) and scores the rendered prompts in one batch.

    Subclasses say what they read from the model (``score_prompts``) and which settings besides the
    prompt decide a score (``key_params``, part of the cache key). ``prefixes`` are the texts before each
    passage: a causal model scores the prompts that share one from one key/value cache of it
    (:mod:`judgebench.llm.local.prefix_cache`; RG's prompt starts with the passage, so what it shares is the chat
    template's system turn and ``Passage:``).
    """

    def score_batch(self, payloads: list[tuple[str, ...]]) -> list[dict]:
        """(query, passage[, prompt]) payloads; a prompt given (filled for the cache key) is not filled again."""
        model = self.load_model()
        fields = [{"query": p[0], "passage": p[1]} for p in payloads]
        given = [p[2] if len(p) > 2 else None for p in payloads]
        prompts = [r[0] for r in model.render_many(self.prompt, fields, "passage", prompts=given)]
        # an encoder reads the whole prompt: only a causal model shares prefixes
        # (one per query: what precedes the passage)
        prefixes: list[str | None] = [None] * len(fields)
        if model.kind == "causal":
            before: dict[str, str] = {}
            for i, f in enumerate(fields):
                if f["query"] not in before:
                    before[f["query"]] = text_before(self.prompt, f, "passage")
                prefixes[i] = before[f["query"]]
        return self.score_prompts(model, prompts, prefixes)

    def score_prompts(self, model: Any, prompts: list[str], prefixes: list[str | None]) -> list[dict]:
        raise NotImplementedError
