"""Pointwise relevance generation (RG): score = P(Yes) / (P(Yes) + P(No)) at the first decoding step."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from judgebench.llm.models import cached_scores, local_key
from judgebench.rankers.local_base import ModelRanker

RG_PROMPT = "Passage: {passage}\nQuery: {query}\nDoes the passage answer the query? Answer 'Yes' or 'No'"


@dataclass
class RGRanker(ModelRanker):
    prompt: str = RG_PROMPT
    yes: str = "Yes"
    no: str = "No"

    def rank(self, dataset, texts):
        head, tail = self.head_and_tail(dataset)
        scores = self.score_pairs(list(zip(head["query_id"], head["doc_id"])), dataset, texts)
        return self.combine(head.assign(score=scores), tail)

    def score_pairs(self, pairs, dataset, texts) -> list[float]:
        items = []
        for q, d in pairs:
            query, passage = dataset.queries[q], texts[d]
            items.append((self._key(query, passage), (query, passage)))
        records, self.scored_now = cached_scores(
            self.cache, items, self._score, meta={"backend": "transformers", "model": self.spec.model_id},
            chunk=max(8, self.spec.batch_size * 4), progress=self.progress, desc=f"rg ({self.name})",
        )
        return [records[k]["score"] for k, _ in items]

    def _key(self, query: str, passage: str) -> str:
        prompt = self.prompt.format(query=query, passage=passage)
        return local_key(self.spec.model_id, "rg", "rg@1", prompt, yes=self.yes, no=self.no)

    def _score(self, payloads):
        model = self.local_model()
        prompts = [model.render(self.prompt, {"query": q, "passage": p}, "passage")[0] for q, p in payloads]
        lp = model.next_token_logprobs(prompts, [self.yes, self.no])
        return [{"lp_yes": float(y), "lp_no": float(n), "score": rg_score(y, n)} for y, n in lp]


def rg_score(lp_yes: float, lp_no: float) -> float:
    """Softmax over the two answers only: exp(y) / (exp(y) + exp(n)), computed stably."""
    return float(1.0 / (1.0 + math.exp(float(np.clip(lp_no - lp_yes, -700, 700)))))
