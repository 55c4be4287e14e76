"""Which queries humans label: sampling designs for the PPI difference estimator (uniform and stratified unbiased
by construction, active nearly so).

A design is a frozen object (the way ir_measures defines measures) built from a per-query signal ``u`` (n,)
(the predicted spread of human - judge, made from the judge's own values, no human label) and a budget k; it draws
samples (masks (R, n)), estimates means from them (shapes as in :mod:`judgebench.metrics.ppi`: ``y``, ``f``
(m, n)) and predicts the variance of its estimate from a pilot (y, f on all n queries):

- ``uniform``: simple random sampling of k of the n queries (today's experiment); PPI's estimate
  mean(f) + mean_k(y - f), variance (1 - k/n) s_d^2 / k (Cochran, *Sampling Techniques*, 1977, ch. 2).
- ``stratified``: the queries sorted by ``u`` and cut into H strata of near-equal size (PER_STRATUM labels a
  stratum on average); n_h queries drawn at random in stratum h, n_h proportional to N_h (``proportional``) or
  to N_h S_h (``neyman``, S_h from a pilot, else the root mean square of the stratum's ``u``), each n_h >= 3.
  Estimate sum_h W_h [mean_h(f) + mean_{n_h}(y - f)], W_h = N_h / n; variance sum_h W_h^2 (1 - n_h/N_h)
  s_{d,h}^2 / n_h (Cochran ch. 5) with Satterthwaite's degrees of freedom (on 2 labels a stratum, k - H df
  covered 0.82 at k = 8). Inclusion probability n_h / N_h.
- ``active``: Poisson sampling, query i labelled independently with probability pi_i = (1 - mix) pi*_i +
  mix k/n, pi* proportional to u and capped at 1 so that sum pi = k (expected budget k): the active
  inference of Zrnic & Candès, "Active Statistical Inference", ICML 2024, with their mixing towards
  uniform. Estimate mean(f) + c, c the Hajek (1/pi-weighted, self-normalised) mean of d = y - f over the
  sampled queries, pi rescaled to the realised size k; centring on c removes the judge's mean bias from the
  variance. Variance (k/(k - 1)) (1/n^2) sum_sampled (1 - pi_i)/pi_i^2 (d_i - c)^2, the ratio's linearised
  variance (it includes the centring), which under equal pi is uniform's formula exactly. The ratio is biased
  O(1/k); the unweighted leave-one-out centring it replaces was exactly unbiased, but with a signal correlated
  with the judge's bias its variance was 25 % too small (benchmarks/calibration.py).

The signal u is read as the predicted spread of human - judge about the judge's bias, query by query: that,
not the size of |human - judge|, is what the variance after centring depends on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from judgebench.exceptions import CompareError
from judgebench.metrics.ppi import PPI, Estimate

STRATEGIES = ("uniform", "stratified", "active")
PER_STRATUM = 4  # labels a stratum gets on average: with 2, k - H degrees of freedom covered 0.82 at k = 8
LEAST_PER_STRATUM = 3  # the fewest a stratum is allocated (Neyman's 2 left Satterthwaite's df near 1)
MIN_LABELS = 10  # below this many labels benchmarks/calibration.py finds intervals or power claims off target
MIN_QUERIES = 20  # and below this many queries (the toy set's 12) the same


def warning(k: float, n: int) -> str | None:
    """The warning compare and the planner print beside a figure resting on k labels of n queries, None when
    both are enough (benchmarks/calibration.py flags the rows below them)."""
    short = [f"{k:g} human labels (fewer than {MIN_LABELS})"] if k < MIN_LABELS else []
    short += [f"{n} queries (fewer than {MIN_QUERIES})"] if n < MIN_QUERIES else []
    if short:
        return (
            f"warning: {' and '.join(short)}: intervals and power claims on so few miss their targets in "
            "benchmarks/calibration.py (flagged rows there); read them as rough"
        )
    return None


OUTLIER_Z = 5.0  # robust sd from the median beyond which an unlabelled query's judge value gets the outlier warning


def outlying(f: np.ndarray) -> np.ndarray:
    """(m, n) whether each query's judge value lies more than OUTLIER_Z robust sd from its row's median (robust sd:
    1.4826 times the median absolute deviation, the sd where that is 0). The interval of a design sees human - judge
    only on the labelled queries: an unlabelled query far out in the judge's values is where a large human - judge
    difference the interval cannot see is likeliest; under heavy-tailed noise such draws are the intervals' misses
    (docs/protocol.md#calibration)."""
    f = np.atleast_2d(np.asarray(f, dtype=float))
    dev = np.abs(f - np.median(f, axis=1, keepdims=True))
    scale = 1.4826 * np.median(dev, axis=1, keepdims=True)
    if f.shape[1] > 1:
        scale = np.where(scale > 0, scale, f.std(axis=1, ddof=1, keepdims=True))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(scale > 0, dev / scale, 0.0) > OUTLIER_Z


def outlier_warning(queries: list[str]) -> str | None:
    """The line printed beside intervals read back from labels when ``queries`` (unlabelled, judge value outlying)
    is not empty, None otherwise."""
    if not queries:
        return None
    one = len(queries) == 1
    return (
        f"warning: the judge's value on unlabelled quer{'y' if one else 'ies'} "
        f"{', '.join(map(str, queries))} lies more "
        f"than {OUTLIER_Z:g} robust sd from its median: a large human - judge difference there is invisible to the "
        "intervals, which missed their coverage on such draws in benchmarks/calibration.py (heavy-tailed rows); "
        f"label {'it' if one else 'them'} too"
    )


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

    def predicted_df(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """(m,) the degrees of freedom its interval will have: k - 1."""
        return np.full(len(y), max(min(self.k, self.n) - 1, 1.0))

    def predicted_var(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        k = min(self.k, self.n)
        return (1 - k / self.n) * (y - f).var(axis=1, ddof=1) / k


def allocate(k: int, sizes: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Whole numbers n_h summing to k, LEAST_PER_STRATUM <= n_h <= N_h (N_h where smaller), as close to
    k w_h / sum w as the bounds allow (largest remainders)."""
    sizes = np.asarray(sizes, dtype=int)
    low = np.minimum(LEAST_PER_STRATUM, sizes)
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


def _strata_var(d: np.ndarray, mask: np.ndarray, strata: np.ndarray, H: int) -> np.ndarray:
    """(R, m) sum_h W_h^2 (1 - n_h/N_h) s_{d,h}^2 / n_h over the strata (a stratum of 1 label adds 0), and its
    Satterthwaite degrees of freedom (sum_h v_h)^2 / sum_h v_h^2 / (n_h - 1), at least 1."""
    n, var, denom = mask.shape[1], 0.0, 0.0
    for h in range(H):
        inside = strata == h
        size = inside.sum()
        m = (mask & inside).astype(float)
        nh = m.sum(axis=1, keepdims=True)
        mean_d = (m @ d.T) / np.maximum(nh, 1)
        s2 = np.maximum((m @ (d * d).T - nh * mean_d**2) / np.maximum(nh - 1, 1), 0.0)
        v = (size / n) ** 2 * (1 - nh / size) * s2 / np.maximum(nh, 1)
        var, denom = var + v, denom + np.where(nh > 1, v**2 / np.maximum(nh - 1, 1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        df = np.where(denom > 0, var**2 / denom, mask.sum(axis=1, keepdims=True) - H)
    return var, np.maximum(df, 1.0)


def _collapse(strata: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The strata relabelled 0..G-1 after merging each stratum of fewer than 2 labels into a neighbour (strata
    are ordered by the signal, so a neighbour is the most alike), until every group has 2 or more."""
    groups = [[h] for h in range(len(counts))]
    while len(groups) > 1:
        have = [sum(int(counts[h]) for h in g) for g in groups]
        low = [i for i, c in enumerate(have) if c < 2]
        if not low:
            break
        i = low[0]
        j = i + 1 if i + 1 < len(groups) and (i == 0 or have[i + 1] <= have[i - 1]) else i - 1
        a, b = sorted((i, j))
        groups[a : b + 1] = [groups[a] + groups[b]]
    label = {h: g for g, members in enumerate(groups) for h in members}
    return np.array([label[h] for h in strata])


@dataclass(frozen=True)
class Stratified:
    """H strata of queries by the signal (sorted, cut into near-equal groups), SRS of n_h in each."""

    strata: np.ndarray  # (n,) stratum of each query, 0..H-1
    alloc: np.ndarray  # (H,) queries drawn per stratum
    name: str = "stratified"

    @classmethod
    def build(
        cls, u: np.ndarray, k: int, strata: int = 4, allocation: str = "neyman", pilot_sd: np.ndarray | None = None
    ) -> "Stratified":
        """H = min(strata, k // PER_STRATUM, n // PER_STRATUM) strata (each gets PER_STRATUM labels on average,
        at least 2); Neyman's S_h from ``pilot_sd`` (H,) if given, else the root mean square of the stratum's
        signal (the signal predicts the spread of human - judge about the judge's bias, query by query)."""
        u = np.asarray(u, dtype=float)
        n = len(u)
        h = max(1, min(strata, k // PER_STRATUM, n // PER_STRATUM))
        groups = np.array_split(np.argsort(u, kind="stable"), h)
        s = np.empty(n, dtype=int)
        for i, g in enumerate(groups):
            s[g] = i
        sizes = np.bincount(s, minlength=h)
        if allocation == "proportional":
            w = sizes.astype(float)
        elif allocation == "neyman":
            sd = (
                np.asarray(pilot_sd, float)
                if pilot_sd is not None
                else np.array([np.sqrt(np.mean(u[g] ** 2)) for g in groups])
            )
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
        """Per-stratum PPI, weighted by W_h; n_h is read from the mask (a subset of a plan works too). A stratum
        with 1 labelled query is collapsed with its neighbour for the variance (collapsed strata, Cochran 5A.12);
        one with none is a user error naming it."""
        n = mask.shape[1]
        d = y - f
        H = len(self.sizes)
        counts = np.stack([(mask & (self.strata == h)).sum(axis=1) for h in range(H)], axis=1)  # (R, H)
        empty = np.flatnonzero((counts == 0).any(axis=0))
        if len(empty):
            h = int(empty[0])
            raise CompareError(
                f"stratum {h} of the plan ({int(self.sizes[h])} queries): no labelled query in it; "
                "expected at least 1 (2 for its own variance): label one of its queries or write the plan again"
            )
        point = 0.0
        for h, size in enumerate(self.sizes):
            inside = self.strata == h
            m = (mask & inside).astype(float)
            point = point + size / n * (f[:, inside].mean(axis=1) + (m @ d.T) / counts[:, [h]])
        var, df = _strata_var(d, mask, self.strata, H)
        for r in np.flatnonzero((counts < 2).any(axis=1)):
            merged = _collapse(self.strata, counts[r])
            v, dr = _strata_var(d, mask[r : r + 1], merged, int(merged.max()) + 1)
            var[r], df[r] = v[0], dr[0]
        w = mask / self.pi
        return Estimate(point, var, _weighted_var(y, mask, w) / n), df

    def predicted_df(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """(m,) Satterthwaite's degrees of freedom with the pilot's stratum variances at the allocation."""
        d, n, var, denom = y - f, len(self.strata), 0.0, 0.0
        for h, (size, nh) in enumerate(zip(self.sizes, self.alloc)):
            s2 = d[:, self.strata == h].var(axis=1, ddof=1) if size > 1 else np.zeros(len(d))
            v = (size / n) ** 2 * (1 - nh / size) * s2 / nh
            var, denom = var + v, denom + (v**2 / (nh - 1) if nh > 1 else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.maximum(np.where(denom > 0, var**2 / denom, self.alloc.sum() - len(self.alloc)), 1.0)

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
    """Poisson sampling with pi from the signal (Zrnic & Candès 2024), Hajek-centred estimate."""

    pi: np.ndarray = field(repr=False)
    name: str = "active"

    @classmethod
    def build(cls, u: np.ndarray, k: int, mix: float = 0.5) -> "Active":
        n = len(u)
        return cls((1 - mix) * proportional_pi(u, k) + mix * min(k, n) / n)

    def draw(self, n_samples: int, seed: int) -> np.ndarray:
        rng = np.random.default_rng([seed, int(round(self.pi.sum())), 2])
        return rng.random((n_samples, len(self.pi))) < self.pi

    def estimate(self, y: np.ndarray, f: np.ndarray, mask: np.ndarray) -> tuple[Estimate, np.ndarray]:
        """Hajek: mean(f) + the 1/pi-weighted mean of d over the sampled queries; its linearised variance
        (module docstring). A sample of under 2 queries has an infinite variance (an interval that covers)."""
        n = mask.shape[1]
        d = y - f
        k = mask.sum(axis=1, keepdims=True).astype(float)
        pi = np.minimum(self.pi * k / self.pi.sum(), 1.0)  # (R, n): given the realised size k
        w = np.where(mask, 1.0 / np.maximum(pi, 1e-300), 0.0)  # (R, n)
        total = w.sum(axis=1, keepdims=True)  # (R, 1): the estimate of n
        c = (w @ d.T) / np.maximum(total, 1e-300)  # (R, m): the Hajek mean of d
        point = f.mean(axis=1) + c
        resid2 = (w[:, None, :] ** 2 * (1 - pi[:, None, :]) * mask[:, None, :] * (d[None] - c[..., None]) ** 2).sum(
            axis=2
        )  # (R, m)
        with np.errstate(divide="ignore", invalid="ignore"):
            var = np.where(k >= 2, k / np.maximum(k - 1, 1) * resid2 / n**2, np.inf)
        return Estimate(point, var, _weighted_var(y, mask, w) / n), np.broadcast_to(np.maximum(k - 1, 1), point.shape)

    def predicted_df(self, y: np.ndarray, f: np.ndarray) -> np.ndarray:
        """(m,) the expected sample size less 1."""
        return np.full(len(y), max(float(self.pi.sum()) - 1, 1.0))

    def size_pmf(self) -> np.ndarray:
        """(n + 1,) the distribution of the number of labelled queries (Poisson-binomial, by convolution): the
        interval's df and variance follow the realised size, so the planner averages its widths and power over it."""
        pmf = np.array([1.0])
        for p in self.pi:
            pmf = np.convolve(pmf, [1 - p, p])
        return pmf

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
