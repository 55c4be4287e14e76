"""Mean estimators from a judge's values on all n queries and human values on a sample of k of them.

Each estimator is a small frozen object (the way ir_measures defines measures) with its source in the
docstring. Shapes: ``y`` human and ``f`` judge values, (m, n) for m estimands (systems, or system
pairs for differences); ``mask`` (R, n) boolean, one row per sample of k queries drawn without
replacement (only the masked entries of ``y`` are read). Each returns an :class:`Estimate` of arrays
(R, m):

- ``point``: the estimate of the mean of y over the n queries;
- ``var``: its design variance under simple random sampling of k of the n queries, with the
  finite-population correction (1 - k/n) (Cochran, *Sampling Techniques*, 1977, ch. 2): the variance
  of the estimate around the n-query mean, 0 when every query is labelled;
- ``var_query``: the variance of the n-query mean itself around the mean of the query distribution
  (s_y^2 / n, s_y from the sample), so that ``var + var_query`` is what a significance test between
  systems is about (the two terms add: the sampling error has mean 0 given the n queries). At k = n
  it is the paired t-test's variance, so the human decisions are reproduced exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Estimate:
    point: np.ndarray
    var: np.ndarray
    var_query: np.ndarray

    @property
    def var_test(self) -> np.ndarray:
        return self.var + self.var_query


def _masked_sum(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return w @ x.T if x.ndim == 2 else np.einsum("rn,rmn->rm", w, x)


def moments(x: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Masked mean and sample variance (ddof 1) of every row of x per sample: arrays (R, m). x is (m, n),
    the same values for every sample, or (R, m, n), its own values per sample (e.g. residuals of a fit)."""
    k = mask.sum(axis=1, keepdims=True).astype(float)
    w = mask.astype(float)
    mean = _masked_sum(x, w) / k
    var = (_masked_sum(x * x, w) - k * mean**2) / np.maximum(k - 1, 1)
    return mean, np.maximum(var, 0.0)


def covariance(x: np.ndarray, z: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Masked sample covariance (ddof 1) of the rows of x and z (m, n) per sample: (R, m)."""
    k = mask.sum(axis=1, keepdims=True).astype(float)
    w = mask.astype(float)
    return (w @ (x * z).T - (w @ x.T) * (w @ z.T) / k) / np.maximum(k - 1, 1)


def _fpc(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    k = mask.sum(axis=1, keepdims=True).astype(float)
    return k, 1.0 - k / mask.shape[1]


@dataclass(frozen=True)
class JudgeOnly:
    """The judge's mean over all n queries, with the usual variance s_f^2 / n over queries (what a
    report gives today). It uses no human label, so nothing in it measures the judge's bias."""

    name: str = "judge_only"

    def __call__(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> Estimate:
        shape = (mask.shape[0], f.shape[0])
        var = np.broadcast_to(f.var(axis=1, ddof=1) / f.shape[1], shape)  # already about the query distribution
        return Estimate(np.broadcast_to(f.mean(axis=1), shape), var, np.zeros(shape))


@dataclass(frozen=True)
class HumanOnly:
    """The human mean over the k sampled queries: (1 - k/n) s_y^2 / k (Cochran 1977, eq. 2.16)."""

    name: str = "human_only"

    def __call__(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> Estimate:
        k, fpc = _fpc(mask)
        mean, var = moments(y, mask)
        return Estimate(mean, fpc * var / k, var / mask.shape[1])


@dataclass(frozen=True)
class PPI:
    """Prediction-powered inference (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered
    inference", Science 382, 2023; for IR evaluation Oosterhuis, Jagerman, Qin, Wang, Bendersky,
    "Reliable confidence intervals for information retrieval evaluation using generative AI", KDD 2024):
    the judge's mean over all n queries plus the mean rectifier y - f over the k sampled ones. Here the
    judged set is the whole population, so this is the survey-sampling difference estimator and its
    variance is (1 - k/n) s_{y-f}^2 / k (the f-term of PPI's variance vanishes)."""

    name: str = "ppi"

    def __call__(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> Estimate:
        k, fpc = _fpc(mask)
        rect, var = moments(y - f, mask)
        return Estimate(f.mean(axis=1) + rect, fpc * var / k, moments(y, mask)[1] / mask.shape[1])


@dataclass(frozen=True)
class PPIPlusPlus:
    """Power-tuned PPI (Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference",
    arXiv:2311.01453, 2024): lambda * mean_n(f) + mean_k(y - lambda f), lambda estimated from the sample.
    With the whole population judged, the variance (1 - k/n) s^2_{y - lambda f} / k is minimised by
    lambda = cov(y, f) / var(f) (their lambda* with the unlabelled share N/(n+N) -> 1; not clipped):
    lambda = 1 is PPI, lambda = 0 human only. A judge with no variance on the sample leaves lambda
    undetermined (0/0): it gets PPI's lambda = 1, both have the same estimated variance there."""

    name: str = "ppi++"

    def lam(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> np.ndarray:
        var_f = moments(f, mask)[1]
        return np.where(var_f > 1e-15, covariance(y, f, mask) / np.where(var_f > 1e-15, var_f, 1.0), 1.0)

    def __call__(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> Estimate:
        k, fpc = _fpc(mask)
        lam = self.lam(y, f, mask)
        mean_y, var_y = moments(y, mask)
        mean_f, var_f = moments(f, mask)
        var = np.maximum(var_y - 2 * lam * covariance(y, f, mask) + lam**2 * var_f, 0.0)
        return Estimate(lam * f.mean(axis=1) + mean_y - lam * mean_f, fpc * var / k, var_y / mask.shape[1])


BASELINES = (JudgeOnly(), HumanOnly(), PPI(), PPIPlusPlus())
