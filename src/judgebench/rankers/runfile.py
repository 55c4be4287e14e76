"""Any TREC run file as a system, so published runs sit in the same tables as ours.

A run is evaluated inside the dataset's pool. A document outside it counts under the ``human`` qrels
(all human judgments) but is unjudged for ``human_labelset`` and for every judge (they label the pool),
so the columns of one row would evaluate different document lists. ``outside_pool`` says what to do:
``refuse`` (default: one line naming how many documents fall outside and how to widen the pool),
``restrict`` (drop them, ranks renumbered in the run's order) or ``keep`` (evaluate them anyway,
with a warning: the human column is then not comparable with the judges'). What was kept or dropped is the
ranking's statistics (``outside_pool_kept`` / ``outside_pool_dropped`` of ``outside_pool_of`` documents), logged on
every cell that uses the ranking; compare marks a system that kept any under Table 1.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from judgebench.data.trec import check_queries_known, read_run
from judgebench.exceptions import ConfigError, DataError
from judgebench.rankers.base import Ranker

log = logging.getLogger("judgebench")
OUTSIDE_POOL = ("refuse", "restrict", "keep")


@dataclass
class RunFileRanker(Ranker):
    path: str = ""
    order_by: str | None = None
    outside_pool: str = "refuse"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.outside_pool not in OUTSIDE_POOL:
            raise ConfigError(f"ranker.outside_pool={self.outside_pool!r}: expected one of {', '.join(OUTSIDE_POOL)}")

    def reads_texts(self, dataset) -> bool:
        return False

    def ranking_metrics(self) -> dict[str, float]:
        """How many documents of the run fell outside the pool, and what became of them (nothing when none did)."""
        return dict(getattr(self, "_outside", {}))

    def input_files(self) -> list[Path]:
        """Read when it ranks, hashed into the resume and ranking keys before (an edited run is another system)."""
        return [Path(self.path)]

    def rank(self, dataset, texts) -> pd.DataFrame:
        run = read_run(self.path, order_by=self.order_by)
        check_queries_known(run, dataset.topic_ids or set(dataset.queries), self.path)
        run = run[run["query_id"].isin(dataset.judged_queries())].reset_index(drop=True)
        return self._inside_pool(run, dataset)

    def _inside_pool(self, run: pd.DataFrame, dataset) -> pd.DataFrame:
        pool = dataset.pool[["query_id", "doc_id"]].astype(str).drop_duplicates()
        inside = (
            run[["query_id", "doc_id"]]
            .astype(str)
            .merge(pool.assign(_in=True), on=["query_id", "doc_id"], how="left")["_in"]
        )
        outside = inside.isna().to_numpy()
        self._outside: dict[str, float] = {}
        if not outside.any():
            return run
        n, queries = int(outside.sum()), run.loc[outside, "query_id"].nunique()
        depth = int(dataset.pool.groupby("query_id").size().max())
        what = (
            f"{n} of {len(run)} documents ({queries} quer{'y' if queries == 1 else 'ies'}) are outside dataset "
            f"{dataset.name}'s pool (up to {depth} "
            f"candidates per query)"
        )
        if self.outside_pool == "refuse":
            raise DataError(
                self.path,
                f"{what}: they would count under the human qrels but be unjudged for every judge. Set "
                "ranker.outside_pool=restrict to drop them, widen the pool (dataset.pool=FILE, dataset.pool_depth=N), "
                "or ranker.outside_pool=keep to evaluate them anyway",
            )
        self._outside = {
            f"outside_pool_{'kept' if self.outside_pool == 'keep' else 'dropped'}": n,
            "outside_pool_of": len(run),
        }
        if self.outside_pool == "keep":
            log.warning(
                "%s: %s; kept (ranker.outside_pool=keep): the human column counts them, the judges cannot",
                self.path,
                what,
            )
            return run
        log.info("%s: %s; dropped (ranker.outside_pool=restrict)", self.path, what)
        kept = run[~outside].reset_index(drop=True)
        kept["rank"] = kept.groupby("query_id", sort=False).cumcount() + 1
        return kept
