"""Pointwise relevance generation (RG): score = P(Yes) / (P(Yes) + P(No)) at the first decoding step."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from judgebench.rankers.prompted import PromptedRanker

RG_PROMPT = "Passage: {passage}\nQuery: {query}\nDoes the passage answer the query? Answer 'Yes' or 'No'"


@dataclass
class RGRanker(PromptedRanker):
    """Scores with the model's next-token log-probabilities of the two answers; both are part of the cache key."""

    method: str = "rg"
    prompt: str = RG_PROMPT
    prompt_version: str = "rg@1"
    yes: str = "Yes"
    no: str = "No"

    def key_params(self) -> dict:
        return {"yes": self.yes, "no": self.no}

    def score_prompts(self, model, prompts, prefixes):
        lp = model.next_token_scores(prompts, [self.yes, self.no], prefixes=prefixes)
        return [{"lp_yes": float(y), "lp_no": float(n), "score": rg_score(y, n)} for y, n in lp]


def rg_score(lp_yes: float, lp_no: float) -> float:
    """Softmax over the two answers only: exp(y) / (exp(y) + exp(n)), computed stably."""
    return float(1.0 / (1.0 + math.exp(float(np.clip(lp_no - lp_yes, -700, 700)))))
