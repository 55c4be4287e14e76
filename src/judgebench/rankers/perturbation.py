"""Oracle perturbations as data: a list of ranks to swap with their mirror position.

Swap[k] exchanges the document at rank k with the one at rank n-k+1 (n = length of the
ranking, 100 for a BM25 top-100 pool). Several ranks are applied one after another.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from judgebench.rankers.base import scores_from_order


@dataclass(frozen=True)
class Perturbation:
    name: str = "Perfect"
    swaps: tuple[int, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        object.__setattr__(self, "swaps", tuple(int(k) for k in self.swaps))
        bad = [k for k in self.swaps if k < 1]
        if bad:
            raise ValueError(f"perturbation {self.name}: ranks must be >= 1, got {bad}")

    @property
    def is_identity(self) -> bool:
        return not self.swaps

    def apply(self, run: pd.DataFrame) -> pd.DataFrame:
        """Swap within each query's full ranking; scores are renumbered to keep the new order."""
        if self.is_identity:
            return run
        parts = []
        for qid, group in run.groupby("query_id", sort=False):
            docs = list(group.sort_values("rank", kind="stable")["doc_id"])
            n = len(docs)
            for k in self.swaps:
                if k > n:
                    raise ValueError(
                        f"perturbation {self.name}: rank {k} is beyond the ranking of query {qid} ({n} documents)"
                    )
                docs[k - 1], docs[n - k] = docs[n - k], docs[k - 1]
            parts.append(pd.DataFrame({"query_id": qid, "doc_id": docs}))
        return scores_from_order(pd.concat(parts, ignore_index=True))


def cut(run: pd.DataFrame, depth: int | None) -> pd.DataFrame:
    return run if depth is None else run[run["rank"] <= depth].reset_index(drop=True)
