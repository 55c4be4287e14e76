"""A judge with a known, configurable bias, to validate the instrument on known truth."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judgebench.judges.base import Judge, JudgeResult
from judgebench.judges.simulation import family_seed, latent_prior, noise


@dataclass
class SimulatedJudge(Judge):
    """Its latent prior is its family's (:mod:`judgebench.judges.simulation`): ``family=simulated-A`` shares the prior
    of every simulated ranker of family ``simulated-A``."""

    name: str = "simulated"
    family: str = "simulated-2024"
    model: str = "latent-prior"
    weight: float = 1.0
    noise: float = 0.3
    leniency: float = 0.0
    seed: int = 11
    reads_texts = False  # a class attribute (ClassVar in Judge), not a config field

    def judge(self, pairs, dataset, texts) -> JudgeResult:
        """label = clip(round(h + leniency + weight * u + noise * eps), 0, 3)."""
        merged = pairs[["query_id", "doc_id"]].merge(dataset.qrels, on=["query_id", "doc_id"], how="left")
        h = merged["relevance"].fillna(0).to_numpy(dtype=float)
        keys = list(zip(merged["query_id"], merged["doc_id"]))
        seed = family_seed(self.family)
        u = np.array([latent_prior(seed, q, d) for q, d in keys])
        e = np.array([noise(self.seed, "judge", q, d) for q, d in keys])
        value = h + self.leniency + self.weight * u + self.noise * e
        merged["relevance"] = np.clip(np.rint(value), 0, 3).astype(int)
        merged["raw"] = [f"latent={v:.4f}" for v in value]
        return JudgeResult(labels=merged[["query_id", "doc_id", "relevance", "raw"]])
