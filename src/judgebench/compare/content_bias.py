"""Content bias: does a judge label the same passage differently once an LLM has rewritten it?

Runs whose tag text_view is not "original" judged a rewritten corpus. On the (query, doc) pairs a
judge labelled in both views we compare, per human level, the distribution of the judge's labels
on the original and on the rewritten text: an unbiased judge gives the same distribution.
"""

from __future__ import annotations

import pandas as pd

from judgebench.compare.collect import ORIGINAL
from judgebench.metrics.agreement import LEVELS

DISTRIBUTION = ["dataset", "judge", "view", "human", "label", "original", "rewritten"]
SUMMARY = ["dataset", "judge", "view", "human", "pairs", "mean_original", "mean_rewritten", "share_up", "share_down"]


def paired(labels: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, judge, rewritten view, query, doc): human, original, rewritten labels."""
    keys = ["dataset", "judge", "query_id", "doc_id"]
    orig = labels[labels["text_view"] == ORIGINAL][[*keys, "human", "relevance"]].rename(columns={"relevance": "original"})
    rew = labels[labels["text_view"] != ORIGINAL][[*keys, "text_view", "relevance"]]
    rew = rew.rename(columns={"relevance": "rewritten", "text_view": "view"})
    return orig.merge(rew, on=keys, how="inner")


def distribution(labels: pd.DataFrame) -> pd.DataFrame:
    """Share of each judge label per human level, original vs rewritten (each human level sums to 1)."""
    p = paired(labels)
    rows = []
    for (dataset, judge, view, human), g in p.groupby(["dataset", "judge", "view", "human"], sort=True):
        for level in LEVELS:
            rows.append({"dataset": dataset, "judge": judge, "view": view, "human": human, "label": level,
                         "original": float((g["original"] == level).mean()), "rewritten": float((g["rewritten"] == level).mean())})
    return pd.DataFrame(rows, columns=DISTRIBUTION)


def summary(labels: pd.DataFrame) -> pd.DataFrame:
    """Per human level: pairs, mean label original / rewritten, share of pairs labelled higher / lower after rewriting."""
    p = paired(labels)
    rows = []
    for (dataset, judge, view, human), g in p.groupby(["dataset", "judge", "view", "human"], sort=True):
        rows.append({"dataset": dataset, "judge": judge, "view": view, "human": human, "pairs": len(g),
                     "mean_original": g["original"].mean(), "mean_rewritten": g["rewritten"].mean(),
                     "share_up": float((g["rewritten"] > g["original"]).mean()),
                     "share_down": float((g["rewritten"] < g["original"]).mean())})
    return pd.DataFrame(rows, columns=SUMMARY)
