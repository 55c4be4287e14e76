"""Per-query pooled Kendall's tau-b: how often, query by query, the judge orders two systems as humans do; with a
delta-method t interval and test over queries.

Why not an interval for tau of the means: tau_b(judge means, human means) estimates the tau of the population mean
orderings, a step function of the means, and it is biased wherever systems lie within about two standard errors of
each other; no bootstrap of it covers (benchmarks/calibration.py and docs/protocol.md#calibration). The quantity
here is smooth in the query distribution, so a plain delta-method interval covers it:

per query q, over every pair of systems both scored on q, a_q = pairs the judge and the humans order the same way
(strictly) minus pairs they order oppositely, b_q = pairs the judge does not tie, c_q = pairs the humans do not tie;
Q = E a / sqrt(E b * E c), estimated by Q^ = mean a / sqrt(mean b * mean c) (a ratio of means: queries with many
untied pairs weigh more). Its influence function per query,
psi_q = (a_q - mean a) / sqrt(mean b mean c) - Q^ / 2 * [(b_q - mean b) / mean b + (c_q - mean c) / mean c],
gives se = sd(psi) / sqrt(n) and the interval Q^ +- t_{(1+level)/2, n-1} se, clipped to [-1, 1]; undefined where
mean b * mean c = 0. The test of Q = 0 is the same t ratio (two-sided). Everything is numpy over the pairs
(``np.triu_indices``) and over any leading axes (judges, simulation replications), in chunks of pairs so that 300
systems (44,850 pairs) x 100 queries stays within a few tens of MB.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

CHUNK = 4096  # pairs per block: (block, queries) float arrays stay small at leaderboard scale


def pair_counts(judge: np.ndarray, human: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, c), each (..., queries), from (..., systems, queries) scores; a pair with a nan on either side on a
    query counts nowhere on that query."""
    judge, human = np.asarray(judge, dtype=float), np.asarray(human, dtype=float)
    i, j = np.triu_indices(judge.shape[-2], k=1)
    shape = judge.shape[:-2] + judge.shape[-1:]
    a, b, c = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    for start in range(0, len(i), CHUNK):
        ii, jj = i[start : start + CHUNK], j[start : start + CHUNK]
        dj = judge[..., ii, :] - judge[..., jj, :]
        dh = human[..., ii, :] - human[..., jj, :]
        both = ~(np.isnan(dj) | np.isnan(dh))
        sj, sh = np.where(both, np.sign(dj), 0.0), np.where(both, np.sign(dh), 0.0)
        a += (sj * sh).sum(axis=-2)
        b += np.abs(sj).sum(axis=-2)
        c += np.abs(sh).sum(axis=-2)
    return a, b, c


@dataclass(frozen=True)
class QueryTau:
    """Arrays of the leading shape: the estimate, its interval, the two-sided p of Q = 0, and the queries used."""

    tau: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    p_value: np.ndarray
    queries: int


def query_tau(judge: np.ndarray, human: np.ndarray, level: float = 0.95) -> QueryTau:
    """The per-query pooled tau-b of (..., systems, queries) judge and human scores, with its delta-method t
    interval over the queries (module docstring); nan where undefined."""
    a, b, c = pair_counts(judge, human)
    n = a.shape[-1]
    ma, mb, mc = a.mean(axis=-1), b.mean(axis=-1), c.mean(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.sqrt(mb * mc)
        tau = np.where(scale > 0, ma / scale, np.nan)
        psi = (a - ma[..., None]) / scale[..., None] - tau[..., None] / 2 * (
            (b - mb[..., None]) / mb[..., None] + (c - mc[..., None]) / mc[..., None]
        )
        se = psi.std(axis=-1, ddof=1) / np.sqrt(n) if n > 1 else np.full(tau.shape, np.nan)
        half = stats.t.ppf((1 + level) / 2, n - 1) * se if n > 1 else np.full(tau.shape, np.nan)
        tiny = 1e-12
        ratio = np.abs(tau) / np.where(se > tiny, se, np.nan)
        p = np.where(se > tiny, 2 * stats.t.sf(ratio, max(n - 1, 1)), np.where(np.abs(tau) > tiny, 0.0, 1.0))
    p = np.where(np.isnan(tau), np.nan, p)
    return QueryTau(tau, np.clip(tau - half, -1, 1), np.clip(tau + half, -1, 1), p, n)
