"""The evaluation core: every nDCG@10 judgebench reports is computed here, against named qrels.

Why one module: a judge and the humans must be scored on equal terms, or every gap, tau and
significance class compares two normalisers instead of two sets of labels. The protocol (cut-off,
judged-only, the query set, missing queries, the depth cut of oracle runs) and the qrels of each
reference live here; the pipeline, compare's virtual judges and the content-bias job call
:func:`evaluate`, nothing else calls the engine (``metrics.ndcg``, ir_measures/pytrec_eval).

The references (docs/protocol.md gives the reasons and the figures):

- ``human``: all human qrels of the query; the ideal DCG counts relevant documents outside the
  pool, so the Perfect oracle scores below 1 (the paper's Table 1 column, kept for fidelity);
- ``human_labelset``: the human labels of the label set (pool ∩ qrels), normalised exactly as a
  judge's labels are: what a perfect judge scores, and the default reference of every
  judge-versus-human statistic;
- a judge: its labels on the label set.

``METRIC_VERSION`` is part of every cell's resume key and is stamped on every run: bump it when
a number this module (or the statistics compare builds on it) produces would change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from judgebench.metrics.ndcg import Missing, per_query_ndcg

METRIC_VERSION = "2"
HUMAN = "human"
HUMAN_LABELSET = "human_labelset"
REFERENCES = (HUMAN, HUMAN_LABELSET)
KEYS = ["query_id", "doc_id"]


@dataclass(frozen=True)
class Protocol:
    """nDCG@cutoff with trec_eval conventions (linear gains, 1/log2(rank+1)).

    judged_only: documents without a judgment under the qrels at hand are removed before the
    cut-off (trec_eval -J; ir_measures ``nDCG(judged_only=True)@10``).
    missing: a query of the evaluated set that the run or the qrels lack scores 0 ("zero") or
    is left out ("drop"); with "zero" every reference averages over the same queries.
    """

    cutoff: int | None = 10
    judged_only: bool = True
    missing: Missing = "zero"

    def per_query(self, run: pd.DataFrame, qrels: pd.DataFrame, queries: Sequence[str] | None = None) -> pd.DataFrame:
        """query_id, value: one row per query of ``queries`` (default: the qrels' queries)."""
        return per_query_ndcg(run, qrels, k=self.cutoff, judged_only=self.judged_only, missing=self.missing, queries=queries)


PAPER = Protocol()  # nDCG@10, judged only, missing queries 0


def cut(run: pd.DataFrame, depth: int | None) -> pd.DataFrame:
    """Keep ranks 1..depth (None: all). Oracle runs are cut to 10 after their perturbation and
    before evaluation, so a swapped-in unjudged document stays a hole under judged-only scoring."""
    return run if depth is None else run[run["rank"] <= depth].reset_index(drop=True)


def restrict(qrels: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """The qrels of the given (query_id, doc_id) pairs only: the human labels of a label set."""
    keys = pairs[KEYS].astype(str).drop_duplicates()
    q = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str))
    return q.merge(keys, on=KEYS, how="inner")[[*KEYS, "relevance"]].reset_index(drop=True)


def references(human_qrels: pd.DataFrame, label_set: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The two human references of a dataset: all qrels, and the human labels of the label set."""
    return {HUMAN: human_qrels, HUMAN_LABELSET: restrict(human_qrels, label_set)}


def evaluate(run: pd.DataFrame, qrels: Mapping[str, pd.DataFrame], queries: Sequence[str],
             protocol: Protocol = PAPER) -> pd.DataFrame:
    """Per-query values of one run under each named qrels: columns query_id, then one per name.

    Every name is evaluated over the same ``queries`` (the dataset's judged queries), so means
    are comparable across references and judges."""
    out = pd.DataFrame({"query_id": [str(q) for q in queries]})
    for name, q in qrels.items():
        pq = protocol.per_query(run, q, out["query_id"].tolist())
        out = out.merge(pq.rename(columns={"value": name}), on="query_id", how="left")
    return out


def means(per_query: pd.DataFrame) -> dict[str, float]:
    """Column means of an :func:`evaluate` frame (nan for a column without values)."""
    return {c: float(per_query[c].mean()) for c in per_query.columns if c != "query_id"}
