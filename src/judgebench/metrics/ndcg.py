"""nDCG@k with TREC conventions, computed by ir_measures (pytrec_eval backend).

Why a wrapper: trec_eval (and so ir_measures/pytrec_eval) orders a query's documents
by *score* descending and breaks ties by doc_id descending (string order); it ignores
the rank column. Our runs carry their order in ``rank`` (LLM rerankers re-use score
lists, BM25 has exact score ties), so when ``rank`` is present we replace the score by
``-rank``, which reproduces the rank order exactly. It also gives queries missing
from the run an explicit value (0 by default) instead of silently shrinking the mean.

Gains are the graded labels (linear gain, trec_eval ``ndcg_cut``), discount
1/log2(rank + 1); the ideal DCG uses all of the query's qrels, retrieved or not.
With ``judged_only=True`` documents without a judgment are removed from the ranking
before the cut-off (trec_eval ``-J``).
"""

from __future__ import annotations

import logging
from typing import Literal

import ir_measures
import pandas as pd

log = logging.getLogger(__name__)

Missing = Literal["zero", "drop"]
Order = Literal["auto", "rank", "score"]


def _prepare_run(run: pd.DataFrame, order: Order) -> pd.DataFrame:
    """Return query_id/doc_id/score with scores whose descending order is the run order."""
    use_rank = order == "rank" or (order == "auto" and "rank" in run.columns)
    if use_rank and "rank" not in run.columns:
        raise ValueError("order='rank' needs a 'rank' column in the run")
    if not use_rank and "score" not in run.columns:
        raise ValueError("run needs a 'score' column (or a 'rank' column)")
    out = pd.DataFrame({"query_id": run["query_id"].astype(str), "doc_id": run["doc_id"].astype(str)})
    # score = -rank: rank 1 gets the highest score; trec_eval then keeps rank order.
    out["score"] = -run["rank"].astype(float) if use_rank else run["score"].astype(float)
    if out.duplicated(["query_id", "doc_id"]).any():
        raise ValueError("run has duplicate (query_id, doc_id) rows")
    return out


def _prepare_qrels(qrels: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "query_id": qrels["query_id"].astype(str),
            "doc_id": qrels["doc_id"].astype(str),
            "relevance": qrels["relevance"].astype(int),
        }
    )


def _nested(query_ids: pd.Series, doc_ids: pd.Series, values: pd.Series) -> dict[str, dict[str, float | int]]:
    """{query: {doc: value}}, ir_measures' dict-of-dict form, in first-seen query order. Handing it frames makes
    it walk them row by row, which costs seconds per cell on TREC DL with pandas' Arrow-backed strings."""
    out: dict[str, dict] = {}
    for qid, did, value in zip(query_ids.tolist(), doc_ids.tolist(), values.tolist()):
        out.setdefault(qid, {})[did] = value
    return out


def per_query_ndcg(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    k: int | None = 10,
    judged_only: bool = True,
    missing: Missing = "zero",
    order: Order = "auto",
    queries: list[str] | None = None,
) -> pd.DataFrame:
    """Per-query nDCG@k: columns query_id, value; one row per qrels query (or per ``queries``).

    ``missing="zero"`` scores qrels queries absent from the run as 0 (logged, and
    listed in ``result.attrs["missing"]``); ``"drop"`` leaves them out. Run queries
    without qrels are dropped (trec_eval). ``order="auto"`` uses ``rank`` when the run
    has that column, else ``score`` (trec_eval tie-break: doc_id descending).
    ``k=None`` gives nDCG over the whole ranking. ``queries`` fixes the query set: a query of it
    that the run or the qrels lack is "missing" (a query without qrels has nothing to gain).
    """
    if missing not in ("zero", "drop"):
        raise ValueError(f"missing must be 'zero' or 'drop', got {missing!r}")
    q = _prepare_qrels(qrels)
    r = _prepare_run(run, order)
    measure = ir_measures.nDCG(judged_only=judged_only)
    if k is not None:
        measure = measure @ k
    qrels_by_query = _nested(q["query_id"], q["doc_id"], q["relevance"])
    run_by_query = _nested(r["query_id"], r["doc_id"], r["score"])
    # Pin the pytrec_eval provider: trec_eval semantics (gains, -J, tie-break) by contract.
    results = ir_measures.pytrec_eval.iter_calc([measure], qrels_by_query, run_by_query)
    got = {m.query_id: float(m.value) for m in results}

    qids = list(qrels_by_query) if queries is None else [str(x) for x in dict.fromkeys(queries)]
    in_run = set(run_by_query) & set(qrels_by_query)
    absent = [qid for qid in qids if qid not in in_run]
    if absent:
        log.warning(
            "%d queries absent from the run or the qrels (%s): %s",
            len(absent),
            "scored 0" if missing == "zero" else "dropped",
            absent,
        )
    keep = qids if missing == "zero" else [qid for qid in qids if qid in in_run]
    # A run query whose documents are all unjudged gets 0 as well (nothing gained).
    out = pd.DataFrame({"query_id": keep, "value": [got.get(qid, 0.0) for qid in keep]})
    out.attrs["missing"] = absent
    return out
