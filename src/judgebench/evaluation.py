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
  judge's labels are: what a perfect judge scores (the same column for every judge);
- ``human_judged``: the human labels of the pairs *this judge labelled* (the label set less the
  judge's failed calls), normalised the same way: the per-judge reference of every judge-versus-human
  statistic. A failed call leaves a pair out of the judge's qrels, so under judged-only scoring the
  documents below it move up; scored against ``human_labelset`` that move would read as disagreement.
  For a judge without failures it equals ``human_labelset``;
- a judge: its labels on the label set.

``METRIC_VERSION`` is part of every cell's resume key and is stamped on every run: bump it when
a number this module (or the statistics compare builds on it) produces would change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgebench.metrics.ndcg import Missing, per_query_ndcg

METRIC_VERSION = "3"
HUMAN = "human"
HUMAN_LABELSET = "human_labelset"
HUMAN_JUDGED = "human_judged"
REFERENCES = (HUMAN, HUMAN_LABELSET)  # the same for every judge: Table 1's human columns
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
        return per_query_ndcg(
            run, qrels, k=self.cutoff, judged_only=self.judged_only, missing=self.missing, queries=queries
        )


PAPER = Protocol()  # nDCG@10, judged only, missing queries 0


def cut(run: pd.DataFrame, depth: int | None) -> pd.DataFrame:
    """Keep each query's first ``depth`` documents in rank order (None: all): by position, not rank value, so a
    run ranked 10, 20, ... or from 0 keeps ``depth`` documents. Oracle runs are cut to 10 after their
    perturbation and before evaluation, so a swapped-in unjudged document stays a hole under judged-only scoring."""
    if depth is None or run.empty:
        return run
    return run[positions(run) <= depth].reset_index(drop=True)


def positions(run: pd.DataFrame) -> pd.Series:
    """Each row's 1-based position within its query in rank order (ranks are distinct within a query)."""
    return run.groupby("query_id", sort=False)["rank"].rank(method="first").astype("int64")


def restrict(qrels: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """The qrels of the given (query_id, doc_id) pairs only: the human labels of a label set."""
    keys = pairs[KEYS].astype(str).drop_duplicates()
    q = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str))
    return q.merge(keys, on=KEYS, how="inner")[[*KEYS, "relevance"]].reset_index(drop=True)


def references(
    human_qrels: pd.DataFrame, label_set: pd.DataFrame, judged: pd.DataFrame | None = None
) -> dict[str, pd.DataFrame]:
    """The human references of a dataset: all qrels, the human labels of the label set and, given the
    pairs a judge labelled (``judged``), the human labels of those pairs (``human_judged``)."""
    out = {HUMAN: human_qrels, HUMAN_LABELSET: restrict(human_qrels, label_set)}
    if judged is not None:
        out[HUMAN_JUDGED] = restrict(human_qrels, judged)
    return out


def evaluate(
    run: pd.DataFrame, qrels: Mapping[str, pd.DataFrame], queries: Sequence[str], protocol: Protocol = PAPER
) -> pd.DataFrame:
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


# --------------------------------------------------------------------------- fractional gains per label class


def class_weights(
    run: pd.DataFrame, qrels: pd.DataFrame, queries: Sequence[str], levels: int = 4, protocol: Protocol = PAPER
) -> tuple[np.ndarray, np.ndarray]:
    """nDCG split by label class, so that any gain per class can be scored without the engine again.

    Why: pytrec_eval takes integer relevance only, and the label-level correction of a judge gives
    every document the *expected* human gain of its judge label, a fraction. With the judged-only
    protocol the documents that count and their positions depend on which pairs are judged, not on
    the gains, so for gains g (one per class) DCG_q = sum_c g_c * W[q, c] and the ideal DCG fills the
    cut-off with the C[q, c] documents of each class in descending order of g. Returns
    (W, C), shapes (len(queries), levels): W[q, c] the summed discounts 1/log2(i + 1) of the class-c
    documents at judged ranks i <= cutoff in the run's rank order, C[q, c] the class-c qrels of q.
    :func:`ndcg_from_class_gains` with g = (0, 1, ..., levels - 1) equals :func:`evaluate`."""
    if not protocol.judged_only:
        raise ValueError("class_weights follows the judged-only protocol only")
    qids = [str(q) for q in queries]
    pos = {q: i for i, q in enumerate(qids)}
    q = qrels.assign(query_id=qrels["query_id"].astype(str), doc_id=qrels["doc_id"].astype(str))
    q = q[q["query_id"].isin(pos)]
    counts = np.zeros((len(qids), levels))
    np.add.at(counts, (q["query_id"].map(pos).to_numpy(), q["relevance"].astype(int).to_numpy()), 1)
    r = run.assign(query_id=run["query_id"].astype(str), doc_id=run["doc_id"].astype(str))
    judged = r.merge(q[["query_id", "doc_id", "relevance"]], on=KEYS, how="inner").sort_values(
        ["query_id", "rank"], kind="stable"
    )
    place = judged.groupby("query_id", sort=False).cumcount().to_numpy() + 1  # rank among judged documents
    keep = place <= (protocol.cutoff or np.inf)
    weights = np.zeros((len(qids), levels))
    np.add.at(
        weights,
        (judged["query_id"].map(pos).to_numpy()[keep], judged["relevance"].astype(int).to_numpy()[keep]),
        1.0 / np.log2(place[keep] + 1),
    )
    return weights, counts


def ndcg_from_class_gains(
    weights: np.ndarray, counts: np.ndarray, gains: np.ndarray, cutoff: int | None = 10
) -> np.ndarray:
    """Per-query nDCG for gains per class (``gains`` (..., levels), broadcast against the (queries, levels)
    arrays of :func:`class_weights`; result (..., queries)); 0 where the ideal DCG is 0 (trec_eval)."""
    gains = np.asarray(gains, dtype=float)[..., None, :]
    dcg = (gains * weights).sum(axis=-1)
    order = np.argsort(-gains, axis=-1, kind="stable")  # classes by descending gain fill the ideal ranking
    g_sorted = np.take_along_axis(gains, order, axis=-1)
    c_sorted = np.take_along_axis(
        np.broadcast_to(counts, np.broadcast_shapes(counts.shape, gains.shape)), order, axis=-1
    )
    depth = int(counts.sum(axis=1).max(initial=0)) if cutoff is None else cutoff
    disc = np.concatenate([[0.0], np.cumsum(1.0 / np.log2(np.arange(2, depth + 2)))])  # disc[m]: first m discounts
    after = np.minimum(np.cumsum(c_sorted, axis=-1), depth).astype(int)
    before = np.concatenate([np.zeros_like(after[..., :1]), after[..., :-1]], axis=-1)
    ideal = (g_sorted * (disc[after] - disc[before])).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)
