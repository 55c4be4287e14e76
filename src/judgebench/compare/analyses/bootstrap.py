"""Percentile bootstrap over queries: how much a mean nDCG@10 or a tau would move with other queries.

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
from judgebench.compare.reference import References, own_rows
from judgebench.compare.tables import judge_columns
from judgebench.metrics import tau_b

MEANS = ["dataset", "judge", "system", "mean", "lo", "hi", "queries"]
TAUS = ["dataset", "judge", "reference", "tau_all", "tau_all_lo", "tau_all_hi", "tau_oracles", "tau_oracles_lo", "tau_oracles_hi"]


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


def bootstrap(per_query: pd.DataFrame, t1: dict[str, pd.DataFrame], refs: References, n_resamples: int = 1000, seed: int = 0,
              level: float = 0.95) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(intervals of every system's mean nDCG@10 per judge, intervals of tau all / oracles per judge against
    its human reference, ``refs``)."""
    mean_rows, tau_rows = [], []
    for dataset, table in t1.items():
        d = per_query[per_query["dataset"] == dataset]
        if d.empty:
            continue
        systems = list(table.index)
        oracle = np.array([t == "oracle" for t in table["type"]])
        queries = sorted(d["query_id"].astype(str).unique())
        idx = resample_indices(len(queries), n_resamples, seed)
        own = own_rows(d)
        boot, of = {}, own.groupby("judge", sort=False).indices  # each judge's rows: one pass, not a filter per judge
        for judge in [c for c in table.columns if c != "type"]:
            values = per_query_matrix(own.iloc[of.get(judge, [])], systems, queries)
            boot[judge] = _resampled_means(values, idx)
            for s, system in enumerate(systems):
                lo, hi = percentile_interval(boot[judge][s], level)
                mean_rows.append({"dataset": dataset, "judge": judge, "system": system, "mean": table.at[system, judge],
                                  "lo": lo, "hi": hi, "queries": len(queries)})
        for judge in judge_columns(table):
            row = {"dataset": dataset, "judge": judge, "reference": refs.reference}
            human = refs.column(dataset, judge, systems).to_numpy()
            boot_human = _resampled_means(per_query_matrix(refs.rows(dataset, judge), systems, queries), idx)
            both = table[judge].notna().to_numpy() & ~np.isnan(human)
            for name, keep in (("tau_all", both), ("tau_oracles", both & oracle)):
                row[name] = float(tau_b(table[judge].to_numpy()[keep], human[keep])[0]) if keep.sum() >= 2 else math.nan
                stats = tau_b(boot[judge][keep], boot_human[keep]) if keep.sum() >= 2 else np.array([np.nan])
                row[f"{name}_lo"], row[f"{name}_hi"] = percentile_interval(stats, level)
            tau_rows.append(row)
    return pd.DataFrame(mean_rows, columns=MEANS), pd.DataFrame(tau_rows, columns=TAUS)
