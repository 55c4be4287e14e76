"""Percentile bootstrap over queries: how much a mean nDCG@10 would move with other queries (Table 6).

Kendall's tau gets no bootstrap: tau of the means is a step function of the means and no bootstrap of it covers
(docs/protocol.md#calibration); its interval is the per-query tau's, compare/analyses/ordering_agreement.py.

Contract, so that any interval can be reproduced by hand: per dataset the queries are sorted by
query_id (string order); ``rng = np.random.default_rng(seed)`` is created afresh for each dataset
(so a number does not depend on which other datasets were selected); ``rng.integers(0, n, (B, n))``
draws B resamples of the n queries, and the same resamples serve every system and judge of the
dataset (a paired bootstrap, which tau needs). A statistic is computed on each resample and the
interval is ``np.nanpercentile(stats, [2.5, 97.5])`` (linear interpolation) for level 0.95.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from judgebench.compare.artifacts import per_query_matrix
from judgebench.compare.reference import own_rows

MEANS = ["dataset", "judge", "system", "mean", "lo", "hi", "queries"]


def resample_indices(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """(n_resamples, n) query indices drawn with replacement."""
    return np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))


def percentile_interval(stats: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The percentile interval of the bootstrap statistics, ignoring undefined (nan) resamples."""
    stats = np.asarray(stats, dtype=float)
    if np.isnan(stats).all():
        return math.nan, math.nan
    lo, hi = np.nanpercentile(stats, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def _resampled_means(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """(systems, resamples) means over each resample's queries, ignoring nan queries."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan rows: a system missing under this judge
        return np.nanmean(values[:, idx], axis=2)


def bootstrap(per_query: pd.DataFrame, t1: dict[str, pd.DataFrame], n_resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> pd.DataFrame:
    """Intervals of every system's mean nDCG@10 per judge (columns MEANS)."""
    mean_rows = []
    for dataset, table in t1.items():
        d = per_query[per_query["dataset"] == dataset]
        if d.empty:
            continue
        systems = list(table.index)
        queries = sorted(d["query_id"].astype(str).unique())
        idx = resample_indices(len(queries), n_resamples, seed)
        own = own_rows(d)
        of = own.groupby("judge", sort=False).indices  # each judge's rows: one pass, not a filter per judge
        for judge in [c for c in table.columns if c != "type"]:
            values = per_query_matrix(own.iloc[of.get(judge, [])], systems, queries)
            boot = _resampled_means(values, idx)
            for s, system in enumerate(systems):
                lo, hi = percentile_interval(boot[s], level)
                mean_rows.append({"dataset": dataset, "judge": judge, "system": system, "mean": table.at[system, judge],
                                  "lo": lo, "hi": hi, "queries": len(queries)})
    return pd.DataFrame(mean_rows, columns=MEANS)
