"""Oracle rankers built from the human qrels: the upper bound a judge should recognise."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from judgebench.rankers.base import Ranker, scores_from_order


@dataclass
class OracleRanker(Ranker):
    kind: str = "oracle"
    depth: int | None = 10
    perturbable: bool = True

    def reads_texts(self, dataset) -> bool:
        return False

    def rank(self, dataset, texts) -> pd.DataFrame:
        """Judged pool documents by human label descending (ties in pool order), then the unjudged."""
        pool = dataset.pool.sort_values(["query_id", "rank"], kind="stable")
        pool = pool[pool["query_id"].isin(dataset.judged_queries())]
        merged = pool.merge(dataset.qrels, on=["query_id", "doc_id"], how="left")
        merged["_judged"] = merged["relevance"].notna()
        merged["_label"] = merged["relevance"].fillna(-1)
        merged["_q"] = pd.Categorical(merged["query_id"], dataset.judged_queries())
        ordered = merged.sort_values(
            ["_q", "_judged", "_label", "rank"], ascending=[True, False, False, True], kind="stable"
        )
        return scores_from_order(ordered[["query_id", "doc_id"]])
