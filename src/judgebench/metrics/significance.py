"""Paired significance tests between systems, and judge-vs-human decision agreement.

A judge can preserve the system ordering yet change which differences are
significant; comparing the pairwise decisions (paired t-test on per-query nDCG@10,
the common TREC practice) shows missed, spurious and reversed conclusions.
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd

COLUMNS = ["system_a", "system_b", "mean_a", "mean_b", "t", "p", "p_adj",
           "significant", "better"]
AGREEMENT = ("agree", "missed", "spurious", "reversed")  # and "dropped": a pair only one side tested


def pairwise_ttests(
    per_query: pd.DataFrame,
    alpha: float = 0.05,
    correction: str | None = None,
) -> pd.DataFrame:
    """Paired t-test (scipy ttest_rel) for every unordered pair of systems.

    ``per_query`` has columns system, query_id, value. Each pair is matched on
    query_id (inner join: only queries both systems have count; means are over
    those). Pairs are ordered by the systems' first appearance. A pair with no
    variance in the differences has t = p = nan and is treated as p = 1 (not
    significant). ``correction`` is None or a statsmodels multipletests method
    ("holm", "bonferroni", ...), applied over all pairs.
    """
    # imported here: scipy.stats and statsmodels take ~1 s to import, and a grid cell never tests pairs
    from scipy.stats import ttest_rel
    from statsmodels.stats.multitest import multipletests

    if per_query.duplicated(["system", "query_id"]).any():
        raise ValueError("per_query has duplicate (system, query_id) rows")
    systems = list(dict.fromkeys(per_query["system"]))
    vectors = {s: (list(g["query_id"]), g["value"].to_numpy(dtype=float))
               for s, g in per_query.groupby("system", sort=False)}
    position = {s: {q: i for i, q in enumerate(qs)} for s, (qs, _) in vectors.items()}
    # One scipy call per set of shared queries, not one per pair (a 100-judge grid has thousands of pairs,
    # and scipy's per-call overhead was most of compare's time): the pairs that share the same queries in
    # the same order (the usual case: all of them) are tested as the rows of one 2-d ttest_rel.
    shared: dict[tuple, list[tuple[int, np.ndarray, np.ndarray]]] = {}
    pairs = list(combinations(systems, 2))
    for k, (a, b) in enumerate(pairs):
        qa, pb = vectors[a][0], position[b]
        ia = [i for i, q in enumerate(qa) if q in pb]  # the inner join on query_id, in a's order
        shared.setdefault(tuple(qa[i] for i in ia), []).append((k, vectors[a][1][ia], vectors[b][1][[pb[qa[i]] for i in ia]]))
    t = np.full(len(pairs), np.nan)
    p = np.full(len(pairs), np.nan)
    mean_a, mean_b = np.full(len(pairs), np.nan), np.full(len(pairs), np.nan)
    for queries, group in shared.items():
        ks = [k for k, _, _ in group]
        xa, xb = np.vstack([x for _, x, _ in group]), np.vstack([y for _, _, y in group])
        mean_a[ks], mean_b[ks] = _nanmean_rows(xa), _nanmean_rows(xb)
        if len(queries) >= 2:
            t[ks], p[ks] = ttest_rel(xa, xb, axis=1)
    rows = [{"system_a": a, "system_b": b, "mean_a": float(mean_a[k]), "mean_b": float(mean_b[k]),
             "t": float(t[k]), "p": float(p[k])} for k, (a, b) in enumerate(pairs)]
    out = pd.DataFrame(rows, columns=COLUMNS)
    if out.empty:
        return out
    p_filled = out["p"].fillna(1.0).to_numpy()
    if correction is None:
        out["p_adj"] = p_filled
    else:
        out["p_adj"] = multipletests(p_filled, alpha=alpha, method=correction)[1]
    out["significant"] = (out["p_adj"] < alpha).astype(bool)
    winner = np.where(out["mean_a"] > out["mean_b"], "a", "b")
    # object dtype keeps None (pandas 3 would infer a string dtype and turn it into nan)
    out["better"] = pd.Series([w if s else None for w, s in zip(winner, out["significant"])],
                              index=out.index, dtype=object)
    return out


def _nanmean_rows(x: np.ndarray) -> np.ndarray:
    """Each row's mean over its non-nan values (pandas' Series.mean: nan filled with 0, summed, over the count)."""
    count = (~np.isnan(x)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isnan(x), 0.0, x).sum(axis=1) / count


def _decision(significant: bool, better: object) -> str | None:
    if not significant:
        return None
    if better not in ("a", "b"):
        raise ValueError(f"significant pair without a winner: better={better!r}")
    return str(better)


def _align(table: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Flip rows of ``table`` whose pair is stored as (b, a) in ``reference``."""
    ref = set(zip(reference["system_a"], reference["system_b"]))
    flip = [(b, a) in ref and (a, b) not in ref
            for a, b in zip(table["system_a"], table["system_b"])]
    t = table.copy()
    f = np.array(flip, dtype=bool)
    if f.any():
        t.loc[f, ["system_a", "system_b"]] = t.loc[f, ["system_b", "system_a"]].to_numpy()
        t.loc[f, ["mean_a", "mean_b"]] = t.loc[f, ["mean_b", "mean_a"]].to_numpy()
        t.loc[f, "t"] = -t.loc[f, "t"]
        t["better"] = t["better"].astype(object)
        t.loc[f, "better"] = t.loc[f, "better"].map(lambda x: {"a": "b", "b": "a"}.get(x, x))
    return t


def classify_decisions(judge: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """Merge two :func:`pairwise_ttests` tables on the system pair (a pair stored
    in the other orientation is flipped to the judge's) and add ``agreement``:
    agree / missed (human significant, judge not) / spurious (judge significant,
    human not) / reversed (both significant, opposite winners), or "dropped" for
    a pair only one table has (it is kept and counted, never silently lost).
    Other columns carry the suffixes _judge and _human.
    """
    aligned = _align(human, judge)
    merged = judge.merge(aligned, on=["system_a", "system_b"], how="left",
                         suffixes=("_judge", "_human"), indicator=True)
    keys = set(zip(judge["system_a"], judge["system_b"]))
    only_human = aligned[[p not in keys for p in zip(aligned["system_a"], aligned["system_b"])]]
    merged = pd.concat([merged, only_human[["system_a", "system_b"]].assign(_merge="right_only")], ignore_index=True)
    labels = []
    for sj, bj, sh, bh, side in zip(merged["significant_judge"], merged["better_judge"],
                                    merged["significant_human"], merged["better_human"], merged["_merge"]):
        if side != "both":
            labels.append("dropped")
            continue
        dj, dh = _decision(bool(sj), bj), _decision(bool(sh), bh)
        if dj == dh:
            labels.append("agree")
        elif dj is None:
            labels.append("missed")
        elif dh is None:
            labels.append("spurious")
        else:
            labels.append("reversed")
    merged["agreement"] = labels
    return merged.drop(columns="_merge")
