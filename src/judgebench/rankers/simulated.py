"""A simulated LLM ranker whose preferences the simulated judge shares (known ground truth)."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from judgebench.judges.simulation import family_seed, latent_prior, noise
from judgebench.rankers.base import Ranker, ranking_from_scores


@dataclass
class SimulatedLLMRanker(Ranker):
    """Its latent prior is its family's (:mod:`judgebench.judges.simulation`), shared with simulated judges of that
    family."""

    kind: str = "llm"
    family: str | None = "simulated-2024"
    weight: float = 1.0
    noise: float = 0.3
    seed: int = 7

    def reads_texts(self, dataset) -> bool:
        return False

    def rank(self, dataset, texts) -> pd.DataFrame:
        """score = h + weight * u + noise * eps, with h the human label (0 when unjudged)."""
        pool = dataset.pool[dataset.pool["query_id"].isin(dataset.judged_queries())]
        merged = pool.merge(dataset.qrels, on=["query_id", "doc_id"], how="left")
        h = merged["relevance"].fillna(0).astype(float)
        seed = family_seed(self.family or "")
        pairs = list(zip(merged["query_id"].tolist(), merged["doc_id"].tolist()))
        u = [latent_prior(seed, q, d) for q, d in pairs]
        e = [noise(self.seed, "ranker", q, d) for q, d in pairs]
        merged["score"] = h + self.weight * pd.Series(u) + self.noise * pd.Series(e)
        return ranking_from_scores(merged[["query_id", "doc_id", "score"]])
