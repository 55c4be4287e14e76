"""Label agreement between a judge's qrels and the human (NIST) qrels.

Cohen's kappa corrects raw agreement for chance; we report it on the 4 graded
levels (unweighted) and on the binary TREC DL relevance cut ({0,1} -> 0,
{2,3} -> 1). sklearn.metrics.cohen_kappa_score does the computation.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.metrics import cohen_kappa_score

LEVELS = (0, 1, 2, 3)
_KEYS = ["query_id", "doc_id"]


def _clean(qrels: pd.DataFrame, who: str) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "query_id": qrels["query_id"].astype(str),
            "doc_id": qrels["doc_id"].astype(str),
            "relevance": qrels["relevance"].astype(int),
        }
    )
    if out.duplicated(_KEYS).any():
        raise ValueError(f"{who} qrels have duplicate (query_id, doc_id) pairs")
    return out


def _pairs(judge_qrels: pd.DataFrame, human_qrels: pd.DataFrame) -> pd.DataFrame:
    """Inner join on (query_id, doc_id): columns judge, human."""
    j = _clean(judge_qrels, "judge").rename(columns={"relevance": "judge"})
    h = _clean(human_qrels, "human").rename(columns={"relevance": "human"})
    return h.merge(j, on=_KEYS, how="inner")


def binarize(labels: pd.Series | np.ndarray) -> np.ndarray:
    """TREC DL binary relevance: {0,1} -> 0, {2,3} -> 1."""
    return (np.asarray(labels) >= 2).astype(int)


def _kappa(a: np.ndarray, b: np.ndarray, labels: Sequence[int]) -> float:
    """Cohen's kappa; nan when undefined (no pairs, or both raters one same class)."""
    if len(a) == 0:
        return float("nan")
    if len(np.unique(a)) == 1 and np.array_equal(np.unique(a), np.unique(b)):
        return float("nan")  # p_e == 1: kappa = 0/0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(cohen_kappa_score(a, b, labels=list(labels)))


def label_agreement(judge_qrels: pd.DataFrame, human_qrels: pd.DataFrame) -> dict:
    """kappa_graded, kappa_binary, n_pairs (pairs both labelled), n_missing
    (human pairs the judge did not label)."""
    pairs = _pairs(judge_qrels, human_qrels)
    n_human = len(_clean(human_qrels, "human"))
    h, j = pairs["human"].to_numpy(), pairs["judge"].to_numpy()
    bad = sorted(int(x) for x in (set(np.unique(h)) | set(np.unique(j))) - set(LEVELS))
    if bad:  # sklearn would silently drop pairs with labels outside `labels`
        raise ValueError(f"labels must be in {LEVELS}, got {bad}")
    return {
        "kappa_graded": _kappa(h, j, LEVELS),
        "kappa_binary": _kappa(binarize(h), binarize(j), (0, 1)),
        "n_pairs": int(len(pairs)),
        "n_missing": int(n_human - len(pairs)),
    }


def confusion(
    judge_qrels: pd.DataFrame,
    human_qrels: pd.DataFrame,
    labels: Sequence[int] = LEVELS,
) -> pd.DataFrame:
    """Counts on the shared pairs: rows human level, columns judge level."""
    pairs = _pairs(judge_qrels, human_qrels)
    table = pd.crosstab(pairs["human"], pairs["judge"])
    table = table.reindex(index=list(labels), columns=list(labels), fill_value=0)
    table.index.name, table.columns.name = "human", "judge"
    return table.astype(int)
