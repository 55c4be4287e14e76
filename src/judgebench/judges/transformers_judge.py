"""A local transformers judge: the UMBRELA prompt, the grade read from the digit distribution.

It cannot fail to parse; the expected grade and the full distribution are kept with each label.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from judgebench.cache import CallCache
from judgebench.judges.base import Judge, JudgeResult, JudgeUsage
from judgebench.judges.umbrela_scoring import UMBRELA_PREFIX, umbrela_label_distribution
from judgebench.llm.local.models import as_spec, cached_model_scores, transformers_key_maker
from judgebench.llm.local.prefix_cache import text_before
from judgebench.llm.prompts import load_prompt

log = logging.getLogger("judgebench")


@dataclass
class TransformersJudge(Judge):
    model_spec: Any = None  # judgebench.llm.local.models.ModelSpec fields
    prompt: str = "umbrela_bing"
    system: str | None = None
    cache_dir: str = ".cache/judgebench"
    progress: bool = True
    # score each query's passages from one key/value cache of the text before them (llm/local/prefix_cache.py); False
    # runs every prompt whole (the same labels: the GPU check compares the two paths' speed and labels)
    share_prefix: bool = True
    _model: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.spec = as_spec(self.model_spec)
        self.template = load_prompt(self.prompt)
        self.cache = CallCache(Path(self.cache_dir) / "calls")

    def load_model(self):
        if self._model is None:
            self._model = self.spec.load(self.cache_dir, self.progress)
        return self._model

    def judge(self, pairs: pd.DataFrame, dataset, texts: dict[str, str]) -> JudgeResult:
        keys, items = [], []
        key_of = self.key_maker()
        for q, d in zip(pairs["query_id"], pairs["doc_id"]):
            # the template text is the prompt; truncation (if any) happens inside scoring and is recorded
            prompt = self.template.render(query=dataset.queries[q], passage=texts[d])
            key = key_of(prompt)
            keys.append(key)
            items.append((key, (dataset.queries[q], texts[d], prompt)))  # the prompt is not filled again to score
        records, scored = cached_model_scores(
            self.spec, self.cache, items, self._score, self.progress, f"judging ({self.name})"
        )
        rows = []
        for (q, d), key in zip(zip(pairs["query_id"], pairs["doc_id"]), keys):
            rec = records[key]
            rows.append(
                (
                    q,
                    d,
                    int(rec["label"]),
                    json.dumps({"expected": rec["expected"], "probs": rec["probs"], "truncated": rec["truncated"]}),
                )
            )
        usage = JudgeUsage(calls_made=scored, calls_cached=len(set(keys)) - scored)
        usage.truncated = sum(1 for key in keys if records[key].get("truncated"))
        if usage.truncated:
            log.warning(
                "judge %s: %d of %d passages were truncated to fit the model's context (max_input_tokens=%s)",
                self.name,
                usage.truncated,
                len(keys),
                self.spec.max_input_tokens or "the model's limit",
            )
        if self._model is not None:
            usage.input_tokens = self._model.usage.input_tokens
            if scored:
                log.info("judge %s: %s", self.name, self._model.batching_summary())
        return JudgeResult(labels=pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "raw"]), usage=usage)

    def key_maker(self):
        """prompt -> cache key (the model, the template's version, the forced prefix, the system prompt)."""
        return transformers_key_maker(
            self.spec, "umbrela-digits", self.template.version, prefix=UMBRELA_PREFIX, system=self.system
        )

    def planned_prompts(self, pairs: pd.DataFrame, dataset, texts: dict[str, str]):
        """What judging ``pairs`` would score, for the dry run's estimate
        (:mod:`judgebench.llm.estimate.work_estimate`)."""
        from judgebench.llm.estimate.work_estimate import FIELD_MARK, PromptPlan

        def prompts():
            key_of = self.key_maker()
            for q, d in zip(pairs["query_id"], pairs["doc_id"]):
                yield (
                    key_of(self.template.render(query=dataset.queries[q], passage=texts[d])),
                    dataset.queries[q],
                    (texts[d],),
                )

        return PromptPlan(prompts(), self.template.render(query=FIELD_MARK, passage=FIELD_MARK), UMBRELA_PREFIX)

    def _score(self, payloads: list[tuple[str, ...]]) -> list[dict]:
        """Records for (query, passage[, the prompt filled for the key]) payloads."""
        model = self.load_model()
        fields = [{"query": p[0], "passage": p[1]} for p in payloads]
        rendered = model.render_many(
            self.template.text,
            fields,
            "passage",
            forced_prefix=UMBRELA_PREFIX,
            system=self.system,
            prompts=[p[2] if len(p) > 2 else None for p in payloads],
        )
        # every passage of a query shares the instructions and the query: scored once from their key/value cache
        prefixes = None
        if self.share_prefix:
            before: dict[str, str] = {}  # what precedes the passage depends on the query alone: filled once a query
            prefixes = [
                before.get(f["query"]) or before.setdefault(f["query"], text_before(self.template.text, f, "passage"))
                for f in fields
            ]
        labels, expected, probs = umbrela_label_distribution(model, [r[0] for r in rendered], self.system, prefixes)
        return [
            {
                "label": int(lab),
                "expected": round(float(e), 6),
                "probs": [round(float(x), 6) for x in pr],
                "truncated": bool(r[1]),
            }
            for lab, e, pr, r in zip(labels, expected, probs, rendered)
        ]
