"""Any TREC run file as a system, so published runs sit in the same tables as ours."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from judgebench.data.trec import check_queries_known, read_run
from judgebench.rankers.base import Ranker


@dataclass
class RunFileRanker(Ranker):
    path: str = ""
    order_by: str | None = None

    def rank(self, dataset, texts) -> pd.DataFrame:
        run = read_run(self.path, order_by=self.order_by)
        check_queries_known(run, dataset.topic_ids or set(dataset.queries), self.path)
        return run[run["query_id"].isin(dataset.judged_queries())].reset_index(drop=True)
