"""Table 6's intervals of every system's mean nDCG@10 over queries, and the query resamples that self-preference's
bootstrap-t draws.

A mean's interval is Student's t interval over the queries, mean ± t(1 − (1 − level)/2, n − 1) · sd / √n: in
benchmarks/calibration.py it covers 0.945 at 12 queries where the percentile bootstrap of the mean covered 0.913,
and it is at least as close to 95 % at 43 and 54 (docs/protocol.md#calibration).

Kendall's tau gets no bootstrap: tau of the means is a step function of the means and no bootstrap of it covers
(docs/protocol.md#calibration); its interval is the per-query tau's, compare/analyses/ordering_agreement.py.

Contract of the resamples, so that any bootstrap interval can be reproduced by hand: per dataset the queries are
sorted by
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
from scipy.stats import t as student_t

from judgebench.compare.base.artifacts import per_query_matrix
from judgebench.compare.base.reference import own_rows
from judgebench.compare.base.tables import datasets_with_rows

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


def t_interval(values: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """(lo, hi) of Student's t interval of the mean along the last axis, ignoring nan queries; nan where fewer than 2
    queries are scored; zero width where every query scores the same."""
    values = np.asarray(values, dtype=float)
    n = np.isfinite(values).sum(axis=-1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-nan rows and n < 2: nan, as documented
        mean = np.nanmean(values, axis=-1)
        half = student_t.ppf((1 + level) / 2, np.maximum(n - 1, 1)) * np.nanstd(values, axis=-1, ddof=1) / np.sqrt(n)
    half = np.where(n >= 2, half, np.nan)
    return mean - half, mean + half


def mean_intervals(per_query: pd.DataFrame, t1: dict[str, pd.DataFrame], level: float = 0.95) -> pd.DataFrame:
    """Table 6: Student's t interval of every system's mean nDCG@10 per judge over the dataset's queries, clipped
    to [0, 1] (columns MEANS)."""
    mean_rows = []
    for dataset, table, d in datasets_with_rows(per_query, t1):
        systems = list(table.index)
        queries = sorted(d["query_id"].astype(str).unique())
        own = own_rows(d)
        of = own.groupby("judge", sort=False).indices  # each judge's rows: one pass, not a filter per judge
        for judge in [c for c in table.columns if c != "type"]:
            values = per_query_matrix(own.iloc[of.get(judge, [])], systems, queries)
            lo, hi = np.clip(t_interval(values, level), 0.0, 1.0)  # nDCG lies in [0, 1]: clipping loses no coverage
            for s, system in enumerate(systems):
                mean_rows.append(
                    {
                        "dataset": dataset,
                        "judge": judge,
                        "system": system,
                        "mean": table.at[system, judge],
                        "lo": float(lo[s]),
                        "hi": float(hi[s]),
                        "queries": len(queries),
                    }
                )
    return pd.DataFrame(mean_rows, columns=MEANS)
