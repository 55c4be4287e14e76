"""Paired significance tests between systems, and judge-vs-human decision agreement.

A judge can preserve the system ordering yet change which differences are
significant; comparing the pairwise decisions (paired t-test on per-query nDCG@10,
the common TREC practice) shows missed, spurious and reversed conclusions.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

COLUMNS = ["system_a", "system_b", "mean_a", "mean_b", "t", "p", "p_adj", "significant", "better"]
AGREEMENT = ("agree", "missed", "spurious", "reversed")  # and "dropped": a pair only one side tested


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-adjusted p values over the last axis; nan stays nan and is not counted. The step-down rule of
    statsmodels' ``multipletests(method="holm")`` (a test checks they agree to the bit), in numpy because that
    function runs a full garbage collection on every call (0.2-1 s each in a process holding MLflow, matplotlib and a
    model: compare's significance tests call it per judge and dataset, the calibration benchmark thousands of times).
    The one Holm of the project."""
    p = np.asarray(p, dtype=float)
    ok = np.isfinite(p)
    m = ok.sum(axis=-1, keepdims=True)
    order = np.argsort(np.where(ok, p, np.inf), axis=-1)
    ranked = np.take_along_axis(np.where(ok, p, np.inf), order, axis=-1)
    with np.errstate(invalid="ignore"):  # 0 * inf past the last finite p: nan there, masked below
        scaled = np.maximum.accumulate((m - np.arange(p.shape[-1])) * ranked, axis=-1)
    out = np.empty_like(p)
    np.put_along_axis(out, order, np.minimum(scaled, 1.0), axis=-1)
    return np.where(ok, out, np.nan)


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
    from statsmodels.stats.multitest import multipletests

    if per_query.duplicated(["system", "query_id"]).any():
        raise ValueError("per_query has duplicate (system, query_id) rows")
    systems = list(dict.fromkeys(per_query["system"]))
    # one (systems x queries) matrix, nan where a system has no value; every pair at once from index arrays (300
    # systems are 44,850 pairs: a Python loop over them, or one scipy call each, was most of compare's time)
    wide = per_query.pivot(index="system", columns="query_id", values="value").reindex(systems)
    a, b = np.triu_indices(len(systems), 1)  # the pairs in combinations(systems, 2) order
    mean_a, mean_b, t, p = _paired_tests(wide.to_numpy(dtype=float), a, b)
    names = np.array(systems, dtype=object)
    out = pd.DataFrame(
        {"system_a": names[a], "system_b": names[b], "mean_a": mean_a, "mean_b": mean_b, "t": t, "p": p},
        columns=COLUMNS[:6],
    )
    if out.empty:
        return out.reindex(columns=COLUMNS)
    p_filled = out["p"].fillna(1.0).to_numpy()
    if correction is None:
        out["p_adj"] = p_filled
    else:
        out["p_adj"] = (
            holm(p_filled) if correction == "holm" else multipletests(p_filled, alpha=alpha, method=correction)[1]
        )
    out["significant"] = (out["p_adj"] < alpha).astype(bool)
    winner = np.where(out["mean_a"] > out["mean_b"], "a", "b").astype(object)
    winner[~out["significant"].to_numpy()] = None
    # object dtype keeps None (pandas 3 would infer a string dtype and turn it into nan)
    out["better"] = pd.Series(winner, index=out.index, dtype=object)
    return out


CHUNK = 20_000  # pairs per block: a block's differences are CHUNK x queries floats


def _paired_tests(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, ...]:
    """(mean_a, mean_b, t, p) of scipy's paired t-test of rows ``a`` against rows ``b`` of ``x`` (systems x queries),
    each pair on the queries both have a value for (the inner join on query_id). Pairs with every query shared go
    to one vectorised ``ttest_rel`` per block; the others (a query missing on one side) to ``ttest_rel`` with
    its formula on the shared queries (:func:`_paired_t`; scipy's ``nan_policy="omit"`` loops over the pairs in
    Python). Fewer than 2 shared queries: t = p = nan."""
    from scipy.stats import ttest_rel

    n = len(a)
    mean_a, mean_b, t, p = (np.full(n, np.nan) for _ in range(4))
    for lo in range(0, n, CHUNK):
        ia, ib = a[lo : lo + CHUNK], b[lo : lo + CHUNK]
        xa, xb = x[ia], x[ib]
        shared = ~(np.isnan(xa) | np.isnan(xb))
        xa, xb = np.where(shared, xa, np.nan), np.where(shared, xb, np.nan)
        at = slice(lo, lo + len(ia))
        mean_a[at], mean_b[at] = _nanmean_rows(xa), _nanmean_rows(xb)
        count = shared.sum(axis=1)
        full = shared.all(axis=1) & (count >= 2)
        part = ~shared.all(axis=1) & (count >= 2)
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # a pair without variance: nan, as documented
            tt, pp = np.full(len(ia), np.nan), np.full(len(ia), np.nan)
            if full.any():
                tt[full], pp[full] = ttest_rel(xa[full], xb[full], axis=1)
            if part.any():
                tt[part], pp[part] = _paired_t(xa[part] - xb[part])
        t[at], p[at] = tt, pp
    return mean_a, mean_b, t, p


def _paired_t(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of differences ``d`` (nan: query not shared): ttest_rel's t = mean / (sd / sqrt(n)) with n - 1 degrees
    of freedom and its two-sided p (Student, 1908), as scipy computes it for the rows without nan."""
    from scipy.special import stdtr

    n = (~np.isnan(d)).sum(axis=1)
    mean = _nanmean_rows(d)
    sd = np.sqrt(np.nansum((d - mean[:, None]) ** 2, axis=1) / (n - 1))
    t = mean / (sd / np.sqrt(n))
    return t, 2 * stdtr(n - 1, -np.abs(t))


def _nanmean_rows(x: np.ndarray) -> np.ndarray:
    """Each row's mean over its non-nan values (pandas' Series.mean: nan filled with 0, summed, over the count)."""
    count = (~np.isnan(x)).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(np.isnan(x), 0.0, x).sum(axis=1) / count


def _pair_keys(frame: pd.DataFrame, flip: bool = False) -> pd.MultiIndex:
    """The (system_a, system_b) pairs of ``frame`` as an index (``flip``: as (system_b, system_a))."""
    first, second = ("system_b", "system_a") if flip else ("system_a", "system_b")
    return pd.MultiIndex.from_arrays([frame[first].to_numpy(), frame[second].to_numpy()])


def _align(table: pd.DataFrame, reference: pd.DataFrame) -> pd.DataFrame:
    """Flip rows of ``table`` whose pair is stored as (b, a) in ``reference``."""
    ref = _pair_keys(reference)
    f = np.asarray(_pair_keys(table, flip=True).isin(ref) & ~_pair_keys(table).isin(ref), dtype=bool)
    t = table.copy()
    if f.any():
        t.loc[f, ["system_a", "system_b"]] = t.loc[f, ["system_b", "system_a"]].to_numpy()
        t.loc[f, ["mean_a", "mean_b"]] = t.loc[f, ["mean_b", "mean_a"]].to_numpy()
        t.loc[f, "t"] = -t.loc[f, "t"]
        t["better"] = t["better"].astype(object)
        t.loc[f, "better"] = t.loc[f, "better"].map(lambda x: {"a": "b", "b": "a"}.get(x, x))
    return t


def _decisions(significant: pd.Series, better: pd.Series) -> np.ndarray:
    """Per pair: "a" or "b" (the significant winner) or "" (not significant); a significant pair without a
    winner is a ValueError."""
    sig = significant.fillna(False).to_numpy(dtype=bool)
    won = better.to_numpy(dtype=object)
    bad = sig & ~np.isin(won, ["a", "b"])
    if bad.any():
        raise ValueError(f"significant pair without a winner: better={won[bad][0]!r}")
    return np.where(sig, won, "").astype(str)


def classify_decisions(judge: pd.DataFrame, human: pd.DataFrame) -> pd.DataFrame:
    """Merge two :func:`pairwise_ttests` tables on the system pair (a pair stored
    in the other orientation is flipped to the judge's) and add ``agreement``:
    agree / missed (human significant, judge not) / spurious (judge significant,
    human not) / reversed (both significant, opposite winners), or "dropped" for
    a pair only one table has (it is kept and counted, never silently lost).
    Other columns carry the suffixes _judge and _human.
    """
    aligned = _align(human, judge)
    merged = judge.merge(
        aligned, on=["system_a", "system_b"], how="left", suffixes=("_judge", "_human"), indicator=True
    )
    only_human = aligned[~_pair_keys(aligned).isin(_pair_keys(judge))]
    merged = pd.concat([merged, only_human[["system_a", "system_b"]].assign(_merge="right_only")], ignore_index=True)
    both = (merged["_merge"] == "both").to_numpy()
    dj = _decisions(merged["significant_judge"].where(both, False), merged["better_judge"])
    dh = _decisions(merged["significant_human"].where(both, False), merged["better_human"])
    merged["agreement"] = np.select(
        [~both, dj == dh, dj == "", dh == ""], ["dropped", "agree", "missed", "spurious"], "reversed"
    ).astype(object)
    return merged.drop(columns="_merge")
