"""Which queries humans label: sampling designs for the PPI difference estimator, each unbiased by construction.

A design is a frozen object (the way ir_measures defines measures) built from a per-query signal ``u`` (n,)
(an estimate of |human - judge| made from the judge's own values, no human label) and a budget k; it draws
samples (masks (R, n)), estimates means from them (shapes as in :mod:`judgebench.metrics.ppi`: ``y``, ``f``
(m, n)) and predicts the variance of its estimate from a pilot (y, f on all n queries):

- ``uniform``: simple random sampling of k of the n queries (today's experiment); PPI's estimate
  mean(f) + mean_k(y - f), variance (1 - k/n) s_d^2 / k (Cochran, *Sampling Techniques*, 1977, ch. 2).
- ``stratified``: the queries sorted by ``u`` and cut into H strata of near-equal size; n_h queries
  drawn at random in stratum h, n_h proportional to N_h (``proportional``) or to N_h S_h (``neyman``,
  S_h from a pilot, else the stratum's mean ``u``), each n_h >= 2. Estimate sum_h W_h [mean_h(f) +
  mean_{n_h}(y - f)], W_h = N_h / n; variance sum_h W_h^2 (1 - n_h/N_h) s_{d,h}^2 / n_h (Cochran ch. 5),
  k - H degrees of freedom (the survey convention; Satterthwaite's, on 2 queries a stratum, falls to about
  1 and blows the interval up). Inclusion probability n_h / N_h.
- ``active``: Poisson sampling, query i labelled independently with probability pi_i = (1 - mix) pi*_i +
  mix k/n, pi* proportional to u and capped at 1 so that sum pi = k (expected budget k): the active
  inference of Zrnic & Candès, "Active Statistical Inference", ICML 2024, with their mixing towards
  uniform. Estimate mean(f) + (1/n) sum_i [c_i + xi_i (d_i - c_i) / pi_i], d = y - f, c_i the mean d of
  the *other* sampled queries: c_i does not depend on xi_i, so the estimate is exactly unbiased for any
  centring, and the centring removes the judge's mean bias from the variance (without it a judge
  that is off by a constant inflates the Horvitz-Thompson variance). Variance ((k - 1)/k)(1/n^2)
  sum_sampled (1 - pi_i) / pi_i^2 (d_i - c_i)^2, which under equal pi is uniform's formula exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from judgebench.metrics.ppi import PPI, Estimate

STRATEGIES = ("uniform", "stratified", "active")


def _weighted_var(y: np.ndarray, mask: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(R, m) variance of y over the queries, each sampled query weighted 1/pi (w (R, n) zero elsewhere)."""
    tot = np.maximum(w.sum(axis=1, keepdims=True), 1e-300)
    mean = (w @ y.T) / tot
    return np.maximum((w @ (y * y).T) / tot - mean**2, 0.0)


@dataclass(frozen=True)
class Uniform:
    """k of n queries at random, PPI's difference estimator (metrics.ppi.PPI)."""

    k: int
    n: int
    name: str = "uniform"

    @property
    def pi(self) -> np.ndarray:
        return np.full(self.n, min(self.k, self.n) / self.n)

    def draw(self, n_samples: int, seed: int) -> np.ndarray:
        """The human-budget experiment's contract: rng [seed, k], the first k of a permutation per row."""
        n, k = self.n, self.k
        if k >= n:
            return np.ones((1, n), dtype=bool)
        rng = np.random.default_rng([seed, k])
        order = rng.permuted(np.tile(np.arange(n), (n_samples, 1)), axis=1)[:, :k]
        mask = np.zeros((n_samples, n), dtype=bool)
        np.put_along_axis(mask, order, True, axis=1)
        return mask

    def estimate(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> tuple[Estimate, np.ndarray]:
        """The estimate and its degrees of freedom (R, m)."""
        e = PPI()(y, f, mask)
        return e, np.broadcast_to(mask.sum(axis=1, keepdims=True) - 1.0, e.point.shape)

    def predicted_var(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        k = min(self.k, self.n)
        return (1 - k / self.n) * (y - f).var(axis=1, ddof=1) / k


def allocate(k: int, sizes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Whole numbers n_h summing to k, 2 <= n_h <= N_h (1 where N_h is 1), as close to k w_h / sum w as
    the bounds allow (largest remainders)."""
    sizes = np.asarray(sizes, dtype=int)
    low = np.minimum(2, sizes)
    if k <= low.sum():
        return low
    if k >= sizes.sum():
        return sizes.copy()
    w = np.asarray(weights, dtype=float)
    w = np.where(w > 0, w, 1e-12)
    out = low.copy()
    while out.sum() < k:  # one at a time to the stratum furthest below its share (ties: the first)
        share = k * w / w.sum()
        room = out < sizes
        gap = np.where(room, share - out, -np.inf)
        out[int(np.argmax(gap))] += 1
    return out


@dataclass(frozen=True)
class Stratified:
    """H strata of queries by the signal (sorted, cut into near-equal groups), SRS of n_h in each."""

    strata: np.ndarray  # (n,) stratum of each query, 0..H-1
    alloc: np.ndarray  # (H,) queries drawn per stratum
    name: str = "stratified"

    @classmethod
    def build(cls, u: np.ndarray, k: int, strata: int = 4, allocation: str = "neyman",
              pilot_sd: np.ndarray | None = None) -> "Stratified":
        """H = min(strata, k // 2, n // 2) strata (each can give n_h >= 2); Neyman's S_h from ``pilot_sd``
        (H,) if given, else the stratum's mean signal (the predicted |human - judge|)."""
        u = np.asarray(u, dtype=float)
        n = len(u)
        h = max(1, min(strata, k // 2, n // 2))
        groups = np.array_split(np.argsort(u, kind="stable"), h)
        s = np.empty(n, dtype=int)
        for i, g in enumerate(groups):
            s[g] = i
        sizes = np.bincount(s, minlength=h)
        if allocation == "proportional":
            w = sizes.astype(float)
        elif allocation == "neyman":
            sd = np.asarray(pilot_sd, float) if pilot_sd is not None else np.array([u[g].mean() for g in groups])
            w = sizes * sd
        else:
            raise ValueError(f"allocation={allocation!r}: expected proportional or neyman")
        return cls(s, allocate(k, sizes, w))

    @property
    def sizes(self) -> np.ndarray:
        return np.bincount(self.strata, minlength=len(self.alloc))

    @property
    def pi(self) -> np.ndarray:
        return (self.alloc / self.sizes)[self.strata]

    def draw(self, n_samples: int, seed: int) -> np.ndarray:
        k = int(self.alloc.sum())
        rng = np.random.default_rng([seed, k, 1])
        mask = np.zeros((n_samples, len(self.strata)), dtype=bool)
        for h, take in enumerate(self.alloc):
            idx = np.flatnonzero(self.strata == h)
            order = rng.permuted(np.tile(np.arange(len(idx)), (n_samples, 1)), axis=1)[:, :take]
            mask[np.arange(n_samples)[:, None], idx[order]] = True
        return mask

    def estimate(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> tuple[Estimate, np.ndarray]:
        """Per-stratum PPI, weighted by W_h; n_h is read from the mask (a subset of a plan works too)."""
        n = mask.shape[1]
        d = y - f
        point, var = 0.0, 0.0
        for h, size in enumerate(self.sizes):
            inside = self.strata == h
            m = mask & inside
            nh = m.sum(axis=1, keepdims=True).astype(float)
            if (nh < 1).any():
                raise ValueError(f"stratum {h}: a sample has no labelled query in it (needs 1, 2 for a variance)")
            wgt = m.astype(float)
            mean_d = (wgt @ d.T) / nh
            s2 = np.maximum((wgt @ (d * d).T - nh * mean_d**2) / np.maximum(nh - 1, 1), 0.0)
            W = size / n
            point = point + W * (f[:, inside].mean(axis=1) + mean_d)
            var = var + W**2 * (1 - nh / size) * s2 / nh
        k = mask.sum(axis=1, keepdims=True).astype(float)
        df = np.broadcast_to(np.maximum(k - len(self.sizes), 1.0), point.shape)
        w = mask / self.pi
        return Estimate(point, var, _weighted_var(y, mask, w) / n), df

    def predicted_var(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        d, n, out = y - f, len(self.strata), 0.0
        for h, (size, nh) in enumerate(zip(self.sizes, self.alloc)):
            dh = d[:, self.strata == h]
            s2 = dh.var(axis=1, ddof=1) if size > 1 else np.zeros(len(d))
            out = out + (size / n) ** 2 * (1 - nh / size) * s2 / nh
        return out


def proportional_pi(u: np.ndarray, k: float) -> np.ndarray:
    """pi proportional to u, capped at 1, summing to k (the capped mass goes to the others)."""
    u = np.maximum(np.asarray(u, dtype=float), 0.0)
    n = len(u)
    if k >= n:
        return np.ones(n)
    if u.sum() <= 0:
        return np.full(n, k / n)
    pi = np.zeros(n)
    capped = np.zeros(n, dtype=bool)
    while True:
        free = ~capped
        pi[free] = (k - capped.sum()) * u[free] / max(u[free].sum(), 1e-300)
        pi[capped] = 1.0
        over = free & (pi > 1)
        if not over.any():
            return pi
        capped |= over


@dataclass(frozen=True)
class Active:
    """Poisson sampling with pi from the signal (Zrnic & Candès 2024), leave-one-out centred estimate."""

    pi: np.ndarray = field(repr=False)
    name: str = "active"

    @classmethod
    def build(cls, u: np.ndarray, k: int, mix: float = 0.3) -> "Active":
        n = len(u)
        return cls((1 - mix) * proportional_pi(u, k) + mix * min(k, n) / n)

    def draw(self, n_samples: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng([seed, int(round(self.pi.sum())), 2])
        return rng.random((n_samples, len(self.pi))) < self.pi

    def estimate(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> tuple[Estimate, np.ndarray]:
        n = mask.shape[1]
        d = y - f
        k = mask.sum(axis=1).astype(float)[:, None, None]  # (R, 1, 1)
        xi = mask[:, None, :]
        total = (mask.astype(float) @ d.T)[:, :, None]  # (R, m, 1)
        others = k - xi  # sampled queries other than i
        c = np.where(others > 0, (total - xi * d) / np.maximum(others, 1), 0.0)  # mean d of the other sampled queries
        inv = np.where(mask, 1.0 / self.pi, 0.0)[:, None, :]
        point = f.mean(axis=1) + (c + xi * (d - c) * inv).sum(axis=2) / n
        kk = np.maximum(k[..., 0], 1)
        var = (kk - 1) / kk * ((1 - self.pi) * inv**2 * xi * (d - c) ** 2).sum(axis=2) / n**2
        return Estimate(point, var, _weighted_var(y, mask, mask / self.pi) / n), np.broadcast_to(np.maximum(kk - 1, 1), point.shape)

    def predicted_var(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        d = y - f
        dc = d - d.mean(axis=1, keepdims=True)
        return ((1 - self.pi) / self.pi * dc**2).sum(axis=1) / len(self.pi) ** 2


def design(strategy: str, u: np.ndarray, k: int, **kw):
    """The design of ``strategy`` at budget k for signal u."""
    n = len(u)
    if strategy == "uniform":
        return Uniform(min(k, n), n)
    if strategy == "stratified":
        return Stratified.build(u, min(k, n), **kw)
    if strategy == "active":
        return Active.build(u, min(k, n), **kw)
    raise ValueError(f"strategy={strategy!r}: expected one of {', '.join(STRATEGIES)}")
