"""Oracle perturbations as data: a list of ranks, and which document each one is exchanged with.

Swap[k] degrades a ranking at rank k (docs/protocol.md, "Oracle rankers"). Two readings of the
paper's description are offered, as ``partner``:

- ``mirror`` (default): exchange rank k with rank n-k+1 (n = length of the ranking, 100 for a
  BM25 top-100 pool). Whether the document that comes up is judged depends on the pool.
- ``hole``: exchange rank k with an unjudged document (the lowest-ranked unjudged one not used
  yet), so that under judged-only evaluation rank k is always a hole, whatever the pool. A query
  whose whole ranking is judged (DL19 has one, 168216) takes the first document of the other
  queries' rankings that has no judgment for it; the displaced document goes to the bottom.

Several ranks are applied one after another.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

import pandas as pd

from judgebench.exceptions import ConfigError
from judgebench.rankers.base import scores_from_order

PARTNERS = ("mirror", "hole")


@dataclass(frozen=True)
class Perturbation:
    name: str = "Perfect"
    swaps: tuple[int, ...] = field(default_factory=tuple)
    partner: str = "mirror"

    def __post_init__(self) -> None:
        object.__setattr__(self, "swaps", tuple(int(k) for k in self.swaps))
        bad = [k for k in self.swaps if k < 1]
        if bad:
            raise ConfigError(f"perturbation {self.name}: ranks must be >= 1, got {bad}")
        if self.partner not in PARTNERS:
            raise ConfigError(f"perturbation.partner={self.partner!r}: expected one of {', '.join(PARTNERS)}")

    @property
    def is_identity(self) -> bool:
        return not self.swaps

    def apply(self, run: pd.DataFrame, judged: Collection[tuple[str, str]] | None = None) -> pd.DataFrame:
        """Swap within each query's full ranking; scores are renumbered to keep the new order.
        ``judged``: the (query_id, doc_id) pairs with a human judgment (needed by partner=hole)."""
        if self.is_identity:
            return run
        if self.partner == "hole" and judged is None:
            raise ConfigError(f"perturbation {self.name}: partner=hole needs the judged pairs")
        judged = set(judged or ())
        everyone = list(dict.fromkeys(run.sort_values(["query_id", "rank"], kind="stable")["doc_id"].tolist()))
        parts = []
        for qid, group in run.groupby("query_id", sort=False):
            docs = group.sort_values("rank", kind="stable")["doc_id"].tolist()
            n = len(docs)
            holes = [i for i in range(n - 1, -1, -1) if (qid, docs[i]) not in judged] if self.partner == "hole" else []
            for k in self.swaps:
                if k > n:
                    raise ConfigError(
                        f"perturbation {self.name}: rank {k} is beyond the ranking of query {qid} ({n} documents)"
                    )
                if self.partner == "mirror":
                    j = n - k
                else:
                    holes = [i for i in holes if i != k - 1]
                    if not holes:  # the whole ranking is judged: bring in a document unjudged for this query
                        outside = next((d for d in everyone if (qid, d) not in judged and d not in docs), None)
                        if outside is None:
                            raise ConfigError(
                                f"perturbation {self.name} (partner=hole): no document without a judgment "
                                f"for query {qid} to put at rank {k}"
                            )
                        docs.append(outside)
                        holes = [len(docs) - 1]
                    j = holes.pop(0)
                docs[k - 1], docs[j] = docs[j], docs[k - 1]
            parts.append(pd.DataFrame({"query_id": qid, "doc_id": docs}))
        return scores_from_order(pd.concat(parts, ignore_index=True))
