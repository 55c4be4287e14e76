"""An LLM rewriter: "Please rewrite the following text:\\n{text}", temperature 0, every rewrite cached.

It produces a text view of the corpus (the original texts with the chosen documents rewritten);
rankers and judges then read that view, and its name tags every run that used it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from judgebench.cache.store import CallCache
from judgebench.exceptions import ConfigError
from judgebench.identity import text_view
from judgebench.llm.batch_api.batch import run_batch
from judgebench.llm.local.models import as_spec, cached_scores, transformers_key
from judgebench.llm.prompts import PromptTemplate
from judgebench.llm.remote.calls import Call, api_call_key, run_cached

REWRITE_PROMPT = "Please rewrite the following text:\n{text}"


@dataclass
class LLMRewriter:
    name: str
    backend: Any = None  # an API backend, or
    model_spec: Any = None  # a local model
    prompt: str = REWRITE_PROMPT
    max_new_tokens: int = 160
    cache_dir: str = ".cache/judgebench"
    progress: bool = True
    # Which documents a grid cell rewrites: the pool's top-k per query (None: the whole pool).
    pool_depth: int | None = None
    base_url: str | None = None  # copied into the backend by the config
    # Share of requested rewrites that may fail (those documents keep their original text); null: max_failed_share.
    max_failed_share: float | None = None
    _model: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if (self.backend is None) == (self.model_spec is None):
            raise ConfigError(f"rewriter {self.name}: give exactly one of backend (API) or model_spec (local model)")
        self.spec = as_spec(self.model_spec) if self.model_spec is not None else None
        self.template = PromptTemplate("rewrite", self.prompt, ("text",))
        self.cache = CallCache(Path(self.cache_dir) / "calls")
        self.failed: dict[str, str] = {}
        self.made = 0
        self.requested = 0  # documents asked to be rewritten (the denominator of the failure share)

    @property
    def view(self) -> str:
        return text_view.rewritten(self.name)

    def rewrite(self, dataset, doc_ids: Iterable[str] | None = None) -> dict[str, str]:
        """The corpus with `doc_ids` (default: the pool, or its top pool_depth) rewritten.
        A document whose rewrite failed keeps its original text and is listed in `failed`."""
        docs = self._docs(dataset, doc_ids)
        self.requested += len(docs)
        rewritten = self.rewrite_texts({d: dataset.corpus[d] for d in docs})
        return {**dataset.corpus, **rewritten}

    def _docs(self, dataset, doc_ids: Iterable[str] | None) -> list[str]:
        if doc_ids is None:
            pool = dataset.pool if self.pool_depth is None else dataset.pool[dataset.pool["rank"] <= self.pool_depth]
            doc_ids = pool["doc_id"].unique()
        return list(dict.fromkeys(doc_ids))

    def _keys(self, prompts: dict[str, str]) -> dict[str, str]:
        if self.backend is not None:
            return {d: api_call_key(self.backend, "rewrite@1", p, None) for d, p in prompts.items()}
        return {
            d: transformers_key(self.spec, "rewrite", "rewrite@1", p, max_new_tokens=self.max_new_tokens)
            for d, p in prompts.items()
        }

    def plan(self, dataset, doc_ids: Iterable[str] | None = None) -> tuple[dict[str, str], dict[str, str]]:
        """For a dry run, asking nothing: (the corpus with the cached rewrites applied, {doc: prompt} still to
        rewrite)."""
        docs = self._docs(dataset, doc_ids)
        prompts = {d: self.template.render(text=dataset.corpus[d]) for d in docs}
        texts, todo = dict(dataset.corpus), {}
        for d, key in self._keys(prompts).items():
            rec = self.cache.get(key)
            text = rec.get("text") if isinstance(rec, dict) else None
            if isinstance(text, str) and text.strip():
                texts[d] = text.strip()
            elif rec is None:
                todo[d] = prompts[d]
        return texts, todo

    def rewrite_texts(self, texts: dict[str, str]) -> dict[str, str]:
        prompts = {d: self.template.render(text=t) for d, t in texts.items()}
        if self.backend is not None:
            calls = {d: Call(api_call_key(self.backend, "rewrite@1", p, None), p) for d, p in prompts.items()}
            todo = sum(1 for c in calls.values() if c.key not in self.cache)
            meta = {"backend": self.backend.backend, "model": self.backend.model}
            if (
                self.backend.mode == "batch"
            ):  # the provider's batch API, at batch prices (llm/batch_api/batch.py), as judges do
                records, failures = run_batch(
                    self.backend,
                    self.cache,
                    list(calls.values()),
                    meta=meta,
                    state_dir=Path(self.cache_dir) / "batches",
                    progress=self.progress,
                    desc=f"rewriting ({self.name})",
                )
            else:
                records, failures = run_cached(
                    self.backend,
                    self.cache,
                    list(calls.values()),
                    meta=meta,
                    progress=self.progress,
                    desc=f"rewriting ({self.name})",
                    unit="docs",
                )
            self.made += todo
            out = {}
            for d, c in calls.items():
                rec = records.get(c.key)
                text = (rec or {}).get("text", "").strip()
                if text:
                    out[d] = text
                else:
                    self.failed[d] = failures.get(c.key, ("empty", "empty rewrite"))[1]
            return out
        items = [
            (transformers_key(self.spec, "rewrite", "rewrite@1", p, max_new_tokens=self.max_new_tokens), p)
            for p in prompts.values()
        ]
        records, self.made = cached_scores(
            self.cache,
            items,
            self._generate,
            meta=self.spec.cache_meta(),
            chunk=max(4, self.spec.batch_size),
            progress=self.progress,
            desc=f"rewriting ({self.name})",
            unit="docs",
        )
        out = {}
        for d, (key, _) in zip(prompts, items):
            text = records[key]["text"].strip()
            if text:
                out[d] = text
            else:
                self.failed[d] = "empty rewrite"
        return out

    def _generate(self, prompts: list[str]) -> list[dict]:
        if self._model is None:
            self._model = self.spec.load(self.cache_dir, self.progress)
        return [{"text": t} for t in self._model.generate(prompts, self.max_new_tokens)]
