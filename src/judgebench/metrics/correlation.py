"""Correlation of system orderings: the systems' scores under a judge against their scores under humans.

Kendall's tau-b is the usual TREC measure of whether a judge ranks systems as the human assessors do;
:func:`tau_b` is its one implementation here (vectorised over resamples, so the bootstrap and the
human-budget experiment use the same code as Table 2; a test checks it against scipy.stats.kendalltau).
The other statistics each answer a narrower question and are small frozen
objects with their parameters and source in the docstring (the way ir_measures defines measures);
``ORDERING`` lists them in report order. Each takes two {system: score} mappings and returns nan when
it is undefined, so a table cell reads "missing" instead of a made-up number.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np


def tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b column by column of two (systems, columns) arrays (Kendall 1945; tau-b corrects
    for ties): sum of sign products over pairs / sqrt(untied pairs of x * untied pairs of y); nan where
    undefined (a constant column, or any nan in it). One column per bootstrap resample or per sample."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.ndim == 1:
        return tau_b(x[:, None], y[:, None])
    i, j = np.triu_indices(x.shape[0], k=1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    with np.errstate(invalid="ignore", divide="ignore"):
        out = (sx * sy).sum(axis=0) / np.sqrt(np.abs(sx).sum(axis=0) * np.abs(sy).sum(axis=0))
    out[np.isnan(x).any(axis=0) | np.isnan(y).any(axis=0)] = np.nan
    return out


def kendall_tau(
    a: Mapping[str, float],
    b: Mapping[str, float],
    systems: Iterable[str] | None = None,
) -> float:
    """tau_b over the systems present in both mappings (restricted to ``systems`` when given), nan when
    undefined. Raises ValueError with fewer than 2 common systems."""
    candidates = list(systems) if systems is not None else list(a)
    common = [s for s in dict.fromkeys(candidates) if s in a and s in b]
    if len(common) < 2:
        raise ValueError(
            f"Kendall's tau needs at least 2 systems scored in both orderings, got {len(common)}: {common}"
        )
    return float(tau_b(np.array([a[s] for s in common]), np.array([b[s] for s in common]))[0])


def _common(judge: Mapping[str, float], human: Mapping[str, float]) -> list[str]:
    """Systems scored (not nan) in both, in the judge mapping's order."""
    ok = lambda m, s: s in m and m[s] is not None and not math.isnan(m[s])  # noqa: E731
    return [s for s in judge if ok(judge, s) and ok(human, s)]


def tau_ap(estimated: Mapping[str, float], reference: Mapping[str, float]) -> float:
    """AP rank correlation tau_AP (Yilmaz, Aslam & Robertson, SIGIR 2008, "A new rank correlation
    coefficient for information retrieval"), top-weighted: a swap near the top costs more than one
    near the bottom. With the systems in the order of ``estimated`` (the judge), C(i) the number of
    systems above rank i that ``reference`` (humans) also puts above the system at rank i, and N systems:

        tau_AP = 2 / (N - 1) * sum_{i=2..N} C(i) / (i - 1)  -  1

    It is asymmetric (reference and estimate are not interchangeable) and equals Kendall's tau when
    errors are spread uniformly. The paper assumes no ties; here a pair tied in ``reference`` counts
    1/2, and tied scores in ``estimated`` give the expected value over every order of the tied systems
    (a judge that ties all systems gets 0). Hand-written: no well-kept library implements it (scipy has
    Kendall's and Spearman's coefficients only). nan with fewer than 2 common systems."""
    systems = _common(estimated, reference)
    n = len(systems)
    if n < 2:
        return math.nan
    est = np.array([float(estimated[s]) for s in systems])
    ref = np.array([float(reference[s]) for s in systems])
    # credit[h, g]: is h also above g for the reference (1/2 for a reference tie), counted where the judge puts h in
    # a group above g's; one n x n array, not a Python loop over the pairs (a 300-system leaderboard: 44,850 pairs)
    credit = np.where(ref[:, None] > ref[None, :], 1.0, np.where(ref[:, None] == ref[None, :], 0.5, 0.0))
    above = (credit * (est[:, None] > est[None, :])).sum(axis=0)
    order = np.lexsort((np.arange(n), -est))  # by the judge's score, descending
    levels, group, size = np.unique(-est[order], return_inverse=True, return_counts=True)
    # expected C(i) of slot t of a tied group: the group's mean credit from the systems above it, plus 1/2 per tied
    # system above it in the slot's order (every order of the tied systems equally likely)
    outside = np.bincount(group, weights=above[order]) / size
    first = np.concatenate([[0], np.cumsum(size)[:-1]])
    slot = np.arange(n)
    t = slot - first[group]
    rank = slot + 1
    keep = rank >= 2
    total = float(np.sum((outside[group] + 0.5 * t)[keep] / (rank[keep] - 1)))
    return 2.0 * total / (n - 1) - 1.0


@dataclass(frozen=True)
class KendallTau:
    """Kendall's tau-b between the judge's and the humans' system scores (Kendall 1945; tau-b corrects
    for ties), the TREC standard for "same system ordering" (Voorhees 2000). ``top``: only the ``top``
    systems with the highest human scores (ties at the cut kept in the mapping's order), the question
    a leaderboard asks: does the judge order the best systems correctly? nan when fewer than 2
    (or fewer than ``top``) systems are scored by both. :func:`tau_b` computes it."""

    name: str
    top: int | None = None

    def __call__(self, judge: Mapping[str, float], human: Mapping[str, float]) -> float:
        systems = _common(judge, human)
        if self.top is not None:
            if len(systems) < self.top:
                return math.nan
            systems = sorted(systems, key=lambda s: -float(human[s]))[: self.top]  # stable: ties keep order
        if len(systems) < 2:
            return math.nan
        return kendall_tau(judge, human, systems)


@dataclass(frozen=True)
class TauAP:
    """tau_AP of the judge's ordering with the humans' as reference; see :func:`tau_ap`."""

    name: str

    def __call__(self, judge: Mapping[str, float], human: Mapping[str, float]) -> float:
        return tau_ap(judge, human)


@dataclass(frozen=True)
class SpearmanRho:
    """Spearman's rank correlation rho (Spearman 1904): Pearson's r of the two rank vectors (ties get
    their mean rank), reported beside Kendall's tau in the LLMJudge overview. nan with fewer than 2
    common systems or a constant ordering. scipy.stats.spearmanr computes it."""

    name: str

    def __call__(self, judge: Mapping[str, float], human: Mapping[str, float]) -> float:
        systems = _common(judge, human)
        if len(systems) < 2:
            return math.nan
        with warnings.catch_warnings():  # a constant ordering: scipy warns and returns nan
            warnings.simplefilter("ignore")
            from scipy.stats import spearmanr  # scipy.stats costs ~1 s to import; a grid cell never needs it

            return float(spearmanr([judge[s] for s in systems], [human[s] for s in systems]).statistic)


# Agreement among the top systems (Clarke & Dietz: LLM judges fail where it matters, among the best): tau among the
# k best systems under the humans, k = 5 and 10. With fewer than k systems there is no top k to single out: nan, and
# Table 2 says so (TOP_K_RULE); never tau over all systems under a top-k name, never 0.
TOP_K = (5, 10)
TOP_K_RULE = (
    "tau_topK is Kendall's τ-b among the K systems best under the human reference (K = 5, 10), a point estimate "
    "(no interval); it reads missing where fewer than K systems are scored by both, since the top K would then be "
    "every system (tau_all says that)"
)
ORDERING = (
    KendallTau("tau_all"),
    TauAP("tau_ap"),
    SpearmanRho("rho_all"),
    *(KendallTau(f"tau_top{k}", top=k) for k in TOP_K),
)
ORDERING_COLUMNS = [s.name for s in ORDERING]
