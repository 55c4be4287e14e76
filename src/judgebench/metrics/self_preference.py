"""Does a judge favour the rankers of its own model family? Per-query contrasts of nDCG gaps, and their tests.

The worry is circularity (Balog, Metzler and Qin, "Rankers, Judges, and Assistants: Towards Understanding the
Interplay of LLMs in Information Retrieval Evaluation", SIGIR 2025, arXiv:2503.19092): when one LLM, or one of its
family, both ranks and judges, the judge may rate that family's rankings above what humans give them. The unit
is the *gap* of a system under a judge on a query, judge nDCG@10 minus the judge's human reference (its
``human_judged`` by default). Each statistic here turns gap matrices (systems x queries) into one contrast per
query, so that every interval and test resamples queries, the unit TREC-style evaluations generalise over.
Each is a small frozen object with its definition and sources in the docstring (the way ir_measures defines
measures); docs/protocol.md states them too.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np


def family_mean(gaps: np.ndarray) -> np.ndarray:
    """(queries,) mean gap over a family's systems (rows) per query; nan where no system has a value."""
    gaps = np.atleast_2d(np.asarray(gaps, dtype=float))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-nan column: nan, as documented
        return np.nanmean(gaps, axis=0) if gaps.shape[0] else np.full(gaps.shape[1], np.nan)


@dataclass(frozen=True)
class SelfPreference:
    """self_preference(J) = mean gap of J on its own family's systems - mean gap of J on the other families' LLM
    systems, per query: d(q) = mean_{s in own} gap_J(s, q) - mean_{s in other} gap_J(s, q); its mean over the
    queries is the statistic (with every value present, the mean own-family gap minus the mean other-family gap).

    Subtracting the other LLM families' gap removes what J does to every LLM ranker alike (the paper's
    LLM-over-oracle inversion is such a shared gap), leaving what it does to its own family only. Positive: J
    rates its own family's rankings higher, relative to humans, than other LLMs' rankings.
    """

    name: str = "self_preference"

    def __call__(self, own: np.ndarray, other: np.ndarray) -> np.ndarray:
        return family_mean(own) - family_mean(other)


@dataclass(frozen=True)
class FamilyInteraction:
    """The 2 x 2 interaction of two judges A, B (families a, b) and the rankers of both families, per query:
    i(q) = (gap_A(a) - gap_A(b)) - (gap_B(a) - gap_B(b)), gap_J(f) the mean gap of J on family f's systems.

    A difference in differences (the interaction contrast of a two-factor design): a family whose rankings every
    judge over- or under-rates (a real quality difference humans see differently) cancels in each judge's
    difference, and a judge's leniency towards all LLM rankers cancels between the families. What is left is
    each judge favouring its own family; with A and B equally self-preferring by x, i = 2x.
    """

    name: str = "family_interaction"

    def __call__(self, a_on_a: np.ndarray, a_on_b: np.ndarray, b_on_a: np.ndarray, b_on_b: np.ndarray) -> np.ndarray:
        return (family_mean(a_on_a) - family_mean(a_on_b)) - (family_mean(b_on_a) - family_mean(b_on_b))


def symmetric_bootstrap_t(
    d: np.ndarray, idx: np.ndarray, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, p) of the mean of ``d`` (..., n) per-query contrasts by the symmetric bootstrap-t over the query
    resamples ``idx`` (B, n): t_b = |mean_b - mean| / se_b, c = the ``level`` quantile of t_b, interval mean +- c se,
    p = (1 + #{t_b >= |mean| / se}) / (1 + B) (two-sided test of mean 0). Vectorised over the leading axes (the
    calibration benchmark's replications); nan queries are left out of every mean; nan where fewer than 2 values."""
    d = np.asarray(d, dtype=float)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        k = np.sum(~np.isnan(d), axis=-1)
        mean = np.nanmean(d, axis=-1)
        se = np.nanstd(d, axis=-1, ddof=1) / np.sqrt(k)
        values = d[..., idx]  # (..., B, n)
        kb = np.sum(~np.isnan(values), axis=-1)
        se_b = np.nanstd(values, axis=-1, ddof=1) / np.sqrt(kb)
        tiny = 1e-12 * np.maximum(1.0, np.nanmax(np.abs(d), axis=-1, initial=0.0))[..., None]
        t = np.abs(np.nanmean(values, axis=-1) - mean[..., None]) / np.where(se_b > tiny, se_b, np.nan)
        c = np.nanquantile(t, level, axis=-1)
        observed = np.abs(mean) / np.where(se > tiny[..., 0], se, np.nan)
        used = np.sum(~np.isnan(t), axis=-1)
        p = (1 + np.sum(t >= observed[..., None], axis=-1)) / (1 + used)
        p = np.where(se > tiny[..., 0], p, np.where(np.abs(mean) > tiny[..., 0], 0.0, 1.0))
    bad = (k < 2) | (used == 0) if np.ndim(k) else np.asarray((k < 2) | (used == 0))
    lo, hi = mean - c * se, mean + c * se
    zero = ~(se > tiny[..., 0])
    lo, hi = np.where(zero, mean, lo), np.where(zero, mean, hi)
    return tuple(np.where(bad, np.nan, x) for x in (lo, hi, p))


def t_interval(d: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, p) of the mean of ``d`` (..., n) by Student's t: mean +- t_{(1+level)/2, k-1} s / sqrt(k) and the
    two-sided one-sample t test of 0, k the non-nan values; nan where k < 2."""
    from scipy import stats

    d = np.asarray(d, dtype=float)
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        k = np.sum(~np.isnan(d), axis=-1)
        mean, se = np.nanmean(d, axis=-1), np.nanstd(d, axis=-1, ddof=1) / np.sqrt(k)
        df = np.maximum(k - 1, 1)
        half = stats.t.ppf((1 + level) / 2, df) * se
        p = np.where(
            se > 0, 2 * stats.t.sf(np.abs(mean) / np.where(se > 0, se, 1.0), df), np.where(mean != 0, 0.0, 1.0)
        )
    bad = k < 2
    return tuple(np.where(bad, np.nan, x) for x in (mean - half, mean + half, p))


def guarded_bootstrap_t(
    d: np.ndarray, idx: np.ndarray, level: float = 0.95
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lo, hi, p): the union of the symmetric bootstrap-t and the t interval, and the larger of their two p values
    (:class:`GuardedBootstrapT`); vectorised over the leading axes of ``d``."""
    b_lo, b_hi, b_p = symmetric_bootstrap_t(d, idx, level)
    t_lo, t_hi, t_p = t_interval(d, level)
    return np.fmin(b_lo, t_lo), np.fmax(b_hi, t_hi), np.fmax(b_p, t_p)


@dataclass(frozen=True)
class GuardedBootstrapT:
    """The interval and test of a mean per-query contrast: the union of the symmetric paired bootstrap-t interval and
    Student's t interval, and the larger of their two-sided p values (so 0 lies outside the interval exactly when both
    tests reject, and the p never contradicts the interval).

    ``idx`` (B, n) are the compare bootstrap's draws (compare/analyses/bootstrap.py: queries sorted, one generator per
    dataset, the same resamples for every judge). The symmetric bootstrap-t (:func:`symmetric_bootstrap_t`; Hall, "On
    symmetric bootstrap confidence intervals", JRSS B 1988) keeps its level under skewed contrasts, where the sign-flip
    test (it assumes symmetry) and the t test reject 6-7 % at 43 queries, and under heavy tails, where the equal-tailed
    bootstrap-t covered 0.92; over a handful of queries its resampling distribution is degenerate (3 queries: p near
    1/B), which the t interval guards. A test that rejects only when both do has a size at most the smaller of the two;
    benchmarks/calibration.py measures both coverage and size (docs/protocol.md#calibration).
    """

    level: float = 0.95

    def __call__(self, d: np.ndarray, idx: np.ndarray) -> tuple[float, float, float]:
        if idx.size == 0:
            return math.nan, math.nan, math.nan
        lo, hi, p = guarded_bootstrap_t(d, idx, self.level)
        return float(lo), float(hi), float(p)


STATISTICS = (SelfPreference(), FamilyInteraction())
