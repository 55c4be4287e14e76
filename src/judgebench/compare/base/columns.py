"""Table 2's statistic columns: agreement from the labels, system-ordering statistics from Table 1.

One place that knows which statistics Table 2 reports (the metrics packages define them), so the grid
report and the labels-only report carry the same columns, and so do their CSV, LaTeX and MLflow metrics.
"""

from __future__ import annotations

import math

import pandas as pd

from judgebench import label_scale
from judgebench.metrics import AGREEMENT_COLUMNS, ORDERING, label_agreement

SHARES = [c for c in AGREEMENT_COLUMNS if "_share_" in c]  # judge_share_0..3, human_share_0..3
AGREEMENT = [c for c in AGREEMENT_COLUMNS if c not in SHARES]
ORDERING_COLUMNS = ["tau_all", "tau_oracles", *(s.name for s in ORDERING if s.name != "tau_all")]
STATISTICS = [*AGREEMENT, *ORDERING_COLUMNS, *SHARES]  # every number of Table 2 that is a statistic
# How the printed reports split Table 2 (one table of 30 columns reads badly):
# (file suffix, title, statistic columns, count columns).
BLOCKS = (
    ("", "agreement with the human labels", AGREEMENT, ["labelled_pairs", "failed_pairs"]),
    (
        "_orderings",
        "system orderings under the judge vs under humans (nDCG@10)",
        ORDERING_COLUMNS,
        ["reference", "systems"],
    ),
    ("_labels", "label distribution, judge vs human (share of the pairs both labelled)", SHARES, []),
)


def agreement_table(labels: pd.DataFrame) -> pd.DataFrame:
    """Every agreement statistic per (dataset, judge) from labels with columns dataset, judge, query_id,
    doc_id, relevance (the judge's) and human; plus ``pairs`` (pairs both labelled)."""
    rows = []
    for (dataset, judge), lab in labels.groupby(["dataset", "judge"], sort=False):
        human = lab[["query_id", "doc_id", "human"]].rename(columns={"human": "relevance"})
        tag = lab["scale"].iloc[0] if "scale" in lab and len(lab) else None
        scale = label_scale.from_tag(tag if isinstance(tag, str) else None)  # the judge on its own scale
        own = lab["label"] if "label" in lab and lab["label"].notna().all() else lab["relevance"]
        agree = label_agreement(lab[["query_id", "doc_id"]].assign(relevance=own.astype(int)), human, scale)
        rows.append(
            {"dataset": dataset, "judge": judge, **{c: agree[c] for c in AGREEMENT_COLUMNS}, "pairs": agree["n_pairs"]}
        )
    return pd.DataFrame(rows, columns=["dataset", "judge", *AGREEMENT_COLUMNS, "pairs"])


def ordering(judge_col: pd.Series, human_col: pd.Series, systems: list[str], oracles: list[str]) -> dict[str, float]:
    """Every ordering statistic between two system columns of Table 1 (nan cells are not systems)."""
    judge, human = judge_col.reindex(systems).to_dict(), human_col.reindex(systems).to_dict()
    out = {s.name: s(judge, human) for s in ORDERING}
    kendall = next(s for s in ORDERING if s.name == "tau_all")
    out["tau_oracles"] = kendall({k: judge[k] for k in oracles}, human)
    return {c: out[c] for c in ORDERING_COLUMNS}


def agreement_columns(k: pd.DataFrame, key: tuple[str, str]) -> dict[str, float]:
    """The agreement cells of one Table 2 row from :func:`agreement_table` indexed by (dataset, judge)."""
    return {c: (k.at[key, c] if key in k.index else math.nan) for c in AGREEMENT_COLUMNS}
