"""Original vs rewritten text: the numbers both the content-bias job and compare report.

The job has the judge's labels of its sample on each text; compare reads labels of runs back from
MLflow, where runs whose tag text_view is not "original" judged a rewritten corpus. Both count labels
per human level and the share of pairs labelled higher or lower after rewriting with the functions
here: an unbiased judge gives the same distribution on both texts.
"""

from __future__ import annotations

import pandas as pd
from scipy.stats import ttest_rel

from judgebench.identity.text_view import ORIGINAL
from judgebench.metrics.agreement import LEVELS

DISTRIBUTION = ["dataset", "judge", "view", "human", "label", "original", "rewritten"]
SUMMARY = ["dataset", "judge", "view", "human", "pairs", "mean_original", "mean_rewritten", "share_up", "share_down"]


def label_counts(labels: pd.Series) -> dict[int, int]:
    """How many of ``labels`` are each level (a missing label, NaN, is none)."""
    counts = labels.value_counts()
    return {k: int(counts.get(k, 0)) for k in LEVELS}


def shift_shares(original: pd.Series, rewritten: pd.Series) -> tuple[float, float]:
    """Shares of pairs labelled higher and lower on the rewritten text (NaN without pairs)."""
    if not len(original):
        return float("nan"), float("nan")
    return float((rewritten > original).mean()), float((rewritten < original).mean())


def paired_difference(a: pd.Series, b: pd.Series) -> dict:
    """Means of ``a`` (original) and ``b`` (rewritten), their mean difference and a paired t-test."""
    diff = (b - a).astype(float)
    t, p = ttest_rel(b, a) if len(diff) > 1 and diff.std() > 0 else (float("nan"), float("nan"))
    return {
        "mean_original": float(a.mean()),
        "mean_rewritten": float(b.mean()),
        "mean_diff": float(diff.mean()),
        "t": float(t),
        "p": float(p),
        "n": int(len(diff)),
    }


def label_distribution(sample: pd.DataFrame, original: pd.DataFrame, rewritten: pd.DataFrame) -> pd.DataFrame:
    """The job's table: counts of judge labels per human level of ``sample``, original vs rewritten text."""
    rows = []
    for view, labels in (("original", original), ("rewritten", rewritten)):
        merged = sample.merge(
            labels[["query_id", "doc_id", "relevance"]].rename(columns={"relevance": "judge"}),
            on=["query_id", "doc_id"],
        )
        for level in LEVELS:
            judged = merged.loc[merged["relevance"] == level, "judge"]
            if judged.count() == 0:  # no labelled pair at this level: no row, rather than a distribution of zeros
                continue
            rows.append({"view": view, "human": level, **{f"judge_{k}": n for k, n in label_counts(judged).items()}})
    return pd.DataFrame(rows, columns=["view", "human", *(f"judge_{k}" for k in LEVELS)])


def paired(labels: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, judge, rewritten view, query, doc): human, original, rewritten labels."""
    keys = ["dataset", "judge", "query_id", "doc_id"]
    orig = labels[labels["text_view"] == ORIGINAL][[*keys, "human", "relevance"]].rename(
        columns={"relevance": "original"}
    )
    rew = labels[labels["text_view"] != ORIGINAL][[*keys, "text_view", "relevance"]]
    rew = rew.rename(columns={"relevance": "rewritten", "text_view": "view"})
    return orig.merge(rew, on=keys, how="inner")


def distribution(labels: pd.DataFrame) -> pd.DataFrame:
    """Compare's table: share of each judge label per human level, original vs rewritten (each human level sums to
    1)."""
    p = paired(labels)
    rows = []
    for (dataset, judge, view, human), g in p.groupby(["dataset", "judge", "view", "human"], sort=True):
        original, rewritten = label_counts(g["original"]), label_counts(g["rewritten"])
        for level in LEVELS:
            rows.append(
                {
                    "dataset": dataset,
                    "judge": judge,
                    "view": view,
                    "human": human,
                    "label": level,
                    "original": original[level] / len(g),
                    "rewritten": rewritten[level] / len(g),
                }
            )
    return pd.DataFrame(rows, columns=DISTRIBUTION)


def summary(labels: pd.DataFrame) -> pd.DataFrame:
    """Per human level: pairs, mean label original / rewritten, share of pairs labelled higher / lower after
    rewriting."""
    p = paired(labels)
    rows = []
    for (dataset, judge, view, human), g in p.groupby(["dataset", "judge", "view", "human"], sort=True):
        share_up, share_down = shift_shares(g["original"], g["rewritten"])
        rows.append(
            {
                "dataset": dataset,
                "judge": judge,
                "view": view,
                "human": human,
                "pairs": len(g),
                "mean_original": g["original"].mean(),
                "mean_rewritten": g["rewritten"].mean(),
                "share_up": share_up,
                "share_down": share_down,
            }
        )
    return pd.DataFrame(rows, columns=SUMMARY)
