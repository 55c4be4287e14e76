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

``ppi++`` is PPI++ with a leave-one-out cross-fitted lambda clipped to [0, 1]; ``ppi++_insample`` is the
plug-in fitted on the same k queries it corrects (optimistic at small k; kept for the comparison).
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


def _slots(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each sample's queries in query order, (R, kmax) indices into the n queries, and which of those
    slots hold a sampled query (R, kmax): the per-query work of a cross-fit is (R, m, k), not (R, m, n)."""
    kmax = int(mask.sum(axis=1).max())
    idx = np.argsort(~mask, axis=1, kind="stable")[:, :kmax]
    return idx, np.take_along_axis(mask, idx, axis=1)


def _own_fold(x: np.ndarray, folds: int | None) -> np.ndarray:
    """Per slot of x (R, m, kmax, zero where empty): the sum of x over the slot's fold (slot i in fold i mod folds)."""
    if folds is None or folds >= x.shape[-1]:
        return x
    out = np.empty_like(x)
    for j in range(folds):
        out[..., j::folds] = x[..., j::folds].sum(axis=-1, keepdims=True)
    return out


@dataclass(frozen=True)
class PPIPlusPlus:
    """Power-tuned PPI (Angelopoulos, Duchi, Zrnic, "PPI++: Efficient prediction-powered inference",
    arXiv:2311.01453, 2024) with a cross-fitted, clipped lambda: each sampled query is corrected with a
    lambda fitted on the *other* sampled queries (the cross-fitting of Zrnic, Candès, "Cross-prediction-
    powered inference", PNAS 121, 2024), clipped to [0, 1], the range from human only (0) to PPI (1).

    lambda = cov(y, f) / var(f) on the fitting queries (PPI++'s lambda* with the unlabelled share
    N/(n+N) -> 1, the whole population being judged); a judge with no variance there leaves it 0/0 and
    gets PPI's 1. The sampled queries keep their human values; the mean of the n - k others is estimated
    as sum_j (k_j/k) [lambda_j mean_rest(f) + mean_{fold j}(y - lambda_j f)]. In all:
    mean_k(y) + (1 - k/n) mean_i lambda_i (mean_rest(f) - f_i), so k = n gives the human mean exactly.
    Variance (1 - k/n) s_e^2 / k of the residuals e_i = y_i - lambda_i (f_i - mean_k(f)) (the judge
    centred on the sample: a shift of the judge's scale changes nothing); with one lambda for all it is
    PPI++'s (1 - k/n) s^2_{y - lambda f} / k.

    Parameters:
    - ``folds``: None (default) leave-one-out, each sampled query its own fold (lambda_i from the other
      k - 1); K >= 2: the i-th sampled query in query order (0-based) goes to fold i mod K, so the folds
      are a function of the sample alone, no randomness of their own; 1: no cross-fitting, lambda fitted
      on the whole sample, the queries it corrects included (PPI++'s plug-in, ``ppi++_insample``).
    - ``clip``: clip lambda to [0, 1] (default True; the authors' ppi_py package has the same option).

    Why leave-one-out: under simple random sampling, given the other k - 1 sampled queries (which fix
    lambda_i) the held-out query and the unsampled ones are exchangeable, so the estimate is exactly
    design-unbiased for the n-query mean, clipped or not; K-fold with the deterministic assignment above
    is only nearly so, and at k = 5 two folds fit lambda on 2 or 3 queries. lambda has a closed form, so
    k fits cost no more than one. The in-sample plug-in minimises the very variance it reports and, on a
    few queries, lets lambda run far outside [0, 1]: its intervals are optimistic at small k (Mani, Xu,
    Lipton, Oberst, "No free lunch: non-asymptotic analysis of prediction-powered inference",
    arXiv:2505.20178, 2025, find the same of single-sample PPI++)."""

    name: str = "ppi++"
    folds: int | None = None
    clip: bool = True

    def __post_init__(self):
        if self.folds is not None and self.folds < 1:
            raise ValueError(f"folds={self.folds!r}: expected None (leave-one-out) or a whole number >= 1")

    def _fit(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray):
        """lambda per slot (R, m, kmax), the sampled y and judge (centred on its n-query mean) per slot,
        the slot indices and the slot mask (_slots)."""
        idx, ok = _slots(mask)
        w = np.broadcast_to(ok[:, None, :], (mask.shape[0], y.shape[0], idx.shape[1]))
        ys = np.where(w, np.moveaxis(y[:, idx], 0, 1), 0.0)  # empty slots (rows with fewer queries) add nothing
        fs = np.where(w, np.moveaxis((f - f.mean(axis=1, keepdims=True))[:, idx], 0, 1), 0.0)
        w = w.astype(float)
        sums = [w, ys, fs, ys * fs, fs * fs]
        if self.folds == 1:
            fit = [s.sum(axis=-1, keepdims=True) for s in sums]
        else:
            fit = [s.sum(axis=-1, keepdims=True) - _own_fold(s, self.folds) for s in sums]
        c, sy, sf, syf, sff = fit
        c = np.maximum(c, 1.0)
        den = sff - sf * sf / c
        good = den > 1e-12 * np.maximum(sff, 1e-300)
        lam = np.where(good, (syf - sy * sf / c) / np.where(good, den, 1.0), 1.0)
        if self.clip:
            lam = np.clip(lam, 0.0, 1.0)
        return np.broadcast_to(lam, ys.shape), ys, fs, idx, ok

    def lam(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(R, m, n): the lambda that corrects each sampled query (nan where the query is not sampled)."""
        lam, _, _, idx, ok = self._fit(y, f, mask)
        out = np.full((mask.shape[0], y.shape[0], mask.shape[1]), np.nan)
        np.put_along_axis(
            out, np.broadcast_to(idx[:, None, :], lam.shape), np.where(ok[:, None, :], lam, np.nan), axis=2
        )
        return out

    def __call__(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> Estimate:
        k, fpc = _fpc(mask)
        n = mask.shape[1]
        lam, ys, fs, _, ok = self._fit(y, f, mask)
        sf = fs.sum(axis=-1)  # (R, m): sum of the centred judge over the sample, so the rest sums to -sf
        mean_y, var_y = moments(y, mask)
        point = mean_y - (lam * (sf[..., None] + (n - k[..., None]) * fs) * ok[:, None, :]).sum(axis=-1) / (n * k)
        e = ys - lam * (fs - (sf / k)[..., None])
        var_e = moments(e, ok)[1]
        return Estimate(point, fpc * var_e / k, var_y / n)


BASELINES = (JudgeOnly(), HumanOnly(), PPI(), PPIPlusPlus(), PPIPlusPlus("ppi++_insample", folds=1, clip=False))
