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


@dataclass(frozen=True)
class SignFlipTest:
    """Two-sided paired randomization (sign-flip) test that the per-query contrasts d(q) have mean 0.

    Its assumption is stronger than a zero mean: under the null each query's contrast is *symmetric* about 0
    (as likely to be d(q) as -d(q): the two conditions exchangeable within a query), so every assignment of signs
    is equally likely; the p value is the share of assignments whose |mean| reaches the observed |mean|
    (``scipy.stats.permutation_test``, one sample, ``permutation_type="samples"``: it flips signs). Exact (all 2^n
    assignments) for n <= ``exact_max`` queries, else ``samples`` random assignments from
    ``np.random.default_rng(seed)``, p = (1 + hits) / (1 + samples). Fisher, "The Design of Experiments" (1935);
    recommended for IR evaluation by Smucker, Allan and Carterette, "A Comparison of Statistical Significance
    Tests for Information Retrieval Evaluation", CIKM 2007. Queries with an undefined contrast (nan) are left out.
    """

    exact_max: int = 16
    samples: int = 10_000
    seed: int = 0

    def __call__(self, d: np.ndarray) -> float:
        from scipy.stats import permutation_test  # scipy.stats takes ~1 s to import; a grid cell never tests

        d = np.asarray(d, dtype=float)
        d = d[~np.isnan(d)]
        n = len(d)
        if n == 0:
            return math.nan
        if not np.any(d):
            return 1.0
        resamples = 2**n if n <= self.exact_max else self.samples
        res = permutation_test((d,), lambda x, axis: np.abs(np.mean(x, axis=axis)), permutation_type="samples",
                               vectorized=True, n_resamples=resamples, alternative="greater",
                               rng=np.random.default_rng(self.seed))
        return float(res.pvalue)


@dataclass(frozen=True)
class StudentizedBootstrap:
    """Paired bootstrap-t interval of the mean per-query contrast, over resamples of the queries.

    ``idx`` (B, n) are the compare bootstrap's draws (compare/analyses/bootstrap.py: queries sorted, one generator per
    dataset, the same resamples for every judge). Each resample b gives t_b = (mean_b - mean) / se_b, se the
    standard error s / sqrt(n); the interval is [mean - t_(1+level)/2 * se, mean - t_(1-level)/2 * se]. Why not the
    percentile interval of the means, as for Table 6: over a dozen queries (the toy set) it is too narrow (its
    width shrinks with sqrt((n-1)/n) and it ignores the skew of s), and on simulated nulls it covered 0 in about
    92 % of seeds; the studentized interval is second-order accurate (Efron and Tibshirani, "An Introduction to the
    Bootstrap", 1993, ch. 12; Hall, "The Bootstrap and Edgeworth Expansion", 1992). Resamples with se_b = 0 are
    left out; undefined (nan) queries are left out of every mean.
    """

    level: float = 0.95

    def __call__(self, d: np.ndarray, idx: np.ndarray) -> tuple[float, float]:
        d = np.asarray(d, dtype=float)
        valid = d[~np.isnan(d)]
        if len(valid) < 2 or idx.size == 0:
            return math.nan, math.nan
        mean, se = valid.mean(), valid.std(ddof=1) / math.sqrt(len(valid))
        if se == 0:
            return float(mean), float(mean)
        values = d[idx]
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            k = np.sum(~np.isnan(values), axis=1)
            se_b = np.nanstd(values, axis=1, ddof=1) / np.sqrt(k)
            tiny = 1e-12 * max(1.0, float(np.abs(valid).max()))  # a resample of one repeated value: se 0 up to rounding
            t = (np.nanmean(values, axis=1) - mean) / np.where(se_b > tiny, se_b, np.nan)
        if np.isnan(t).all():
            return math.nan, math.nan
        t_lo, t_hi = np.nanpercentile(t, [100 * (1 - self.level) / 2, 100 * (1 + self.level) / 2])
        return float(mean - t_hi * se), float(mean - t_lo * se)


STATISTICS = (SelfPreference(), FamilyInteraction())
