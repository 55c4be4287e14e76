"""The calibration benchmark's rows for the ordering agreement, self-preference and discrimination statistics, each
vectorised over replications (numpy over R independent draws; docs/protocol.md#calibration reads them).

- ordering agreement: the per-query pooled tau-b's delta-method t interval (metrics/query_tau.py) under a faithful
  judge (the humans' population order) and a reversing one, without and with nDCG-like ties (values clipped to
  [0, 1]); its estimand is computed from 200,000 queries of the same generator;
- self-preference: coverage of 0 and size of the guarded symmetric bootstrap-t (metrics/self_preference.py) under a
  symmetric null (the generator's own), a skewed one (centred gamma, shape 2: skewness 1.4) and a heavy-tailed one
  (Student t, 3 df), and its power at +0.05;
- discrimination (compare/analyses/discrimination.py): family-wise size of the construction sign tests (Holm over
  the 15 oracle pairs) for a judge that cannot tell the oracles apart, of the judge-minus-human test for a judge
  exchangeable with the humans, and of the permutation test of kappa vs discrimination across 5, 8 and 12 judges
  with no association; coverage of rho's interval (Fisher's z, Bonett-Wright s.e.) across 5 to 33 judges.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from judgebench.compare.analyses.discrimination import ROUGH_BELOW, pair_tests, permutation_p, rho_interval
from judgebench.metrics.query_tau import pair_counts, query_tau
from judgebench.metrics.self_preference import guarded_bootstrap_t

LEVEL, ALPHA = 0.95, 0.05
CHUNK = 100  # replications per block of the bootstrap: each block draws its own resamples


def ten_systems(
    rng, base: np.ndarray, delta: np.ndarray, bias: np.ndarray, sd: float, setting: str, shape: tuple, ties: bool
) -> tuple[np.ndarray, np.ndarray]:
    """(y, f) of shape (*shape, 10, n): the grounded ten systems (calibration.many_systems) and a judge of ``setting``;
    ``ties``: both clipped to [0, 1], as nDCG@10 is (Perfect's 1s, a failed query's 0s tie)."""
    *lead, n = shape
    q = base[0, rng.integers(0, base.shape[1], (*lead, 1, n))]
    y = q + delta[:, None] + sd * rng.standard_normal((*lead, 10, n))
    noise = np.full((*lead, 1, n), 0.05) if setting == "offset" else 0.25 * rng.random((*lead, 1, n))
    f = y - bias[:, None] - noise * rng.standard_normal((*lead, 10, n))
    return (np.clip(y, 0, 1), np.clip(f, 0, 1)) if ties else (y, f)


def query_tau_truth(rng, base, delta, bias, sd, setting, ties, queries: int = 200_000) -> float:
    """The per-query pooled tau of the population: E a / sqrt(E b E c) over ``queries`` draws."""
    sums = np.zeros(3)
    for _ in range(queries // 20_000):
        y, f = ten_systems(rng, base, delta, bias, sd, setting, (20_000,), ties)
        sums += [x.sum() for x in pair_counts(f, y)]
    return float(sums[0] / np.sqrt(sums[1] * sums[2]))


def ordering_rows(row, rng, base, n, setting, R, many_systems) -> list[dict]:
    """Coverage of the per-query tau interval, faithful and reversing judge, with and without ties."""
    delta, reversing, sd = many_systems(base)
    faithful = np.full(10, reversing[0])
    rows = []
    for judge, bias in (("faithful", faithful), ("reversing", reversing)):
        for ties in (False, True):
            truth = query_tau_truth(rng, base, delta, bias, sd, setting, ties)
            y, f = ten_systems(rng, base, delta, bias, sd, setting, (R, n), ties)
            q = query_tau(f, y, LEVEL)
            hit = (q.lo <= truth) & (truth <= q.hi)
            name = f"per-query tau t interval ({judge} judge{', ties' if ties else ''}): coverage"
            rows.append(
                row(name, setting, n, n, LEVEL, hit.astype(float), "0.93-0.97", lambda m, _: 0.93 <= m <= 0.97, n < 20)
            )
    return rows


NULLS = {  # a mean-zero per-query addition to the generator's symmetric contrast, sd about 0.1
    "symmetric": lambda rng, shape: np.zeros(shape),
    "skewed": lambda rng, shape: 0.1 * (rng.gamma(2.0, 1.0, shape) - 2.0) / np.sqrt(2.0),
    "heavy-tailed": lambda rng, shape: 0.1 * rng.standard_t(3, shape) / np.sqrt(3.0),
}


def self_preference_rows(row, rng, base, n, setting, R, resamples: int = 500) -> list[dict]:
    """Coverage of 0, size and power at +0.05 of the guarded bootstrap-t of a self-preference contrast: the
    generator's judge gap of one system minus another's (symmetric), plus each null's extra term."""
    rows = []
    for name, extra in NULLS.items():
        cover, size, power = [], [], []
        for start in range(0, R, CHUNK):
            m = min(CHUNK, R - start)
            y = base[:, rng.integers(0, base.shape[1], (m, n))]  # (3, m, n)
            sd = np.full((m, n), 0.05) if setting == "offset" else 0.25 * rng.random((m, n))
            gap = -sd[None] * rng.standard_normal(y.shape)  # judge minus human, less the shared bias
            contrast = gap[1] - gap[2] + extra(rng, (m, n))
            idx = rng.integers(0, n, (resamples, n))
            lo, hi, p = guarded_bootstrap_t(contrast, idx, LEVEL)
            cover.append((lo <= 0) & (0 <= hi))
            size.append(p < ALPHA)
            power.append(guarded_bootstrap_t(contrast + 0.05, idx, LEVEL)[2] < ALPHA)
        flagged = n < 20
        rows.append(
            row(
                f"self-preference bootstrap-t ({name} null): coverage",
                setting,
                n,
                n,
                LEVEL,
                np.concatenate(cover).astype(float),
                "0.93-0.97",
                lambda v, _: 0.93 <= v <= 0.97,
                flagged,
            )
        )
        rows.append(
            row(
                f"self-preference bootstrap-t test ({name} null): size",
                setting,
                n,
                n,
                ALPHA,
                np.concatenate(size).astype(float),
                "<=0.06",
                lambda v, _: v <= 0.06,
                flagged,
            )
        )
        rows.append(
            row(
                f"self-preference bootstrap-t test ({name} null): power at +0.05",
                setting,
                n,
                n,
                float("nan"),
                np.concatenate(power).astype(float),
                "report",
                lambda v, _: True,
            )
        )
    return rows


def oracle_values(rng, base: np.ndarray, n: int, steps: np.ndarray) -> np.ndarray:
    """(6, n) nDCG-like values of six oracles in construction order: a query's pool value plus ``steps`` (0 for all:
    no difference) plus noise, clipped to [0, 1] (ties at 0 and 1)."""
    q = base[0, rng.integers(0, base.shape[1], n)]
    return np.clip(q[None] + steps[:, None] + 0.1 * rng.standard_normal((6, n)), 0, 1)


def discrimination_rows(row, rng, base, n, setting, R) -> list[dict]:
    """Family-wise size of the sign tests (a judge blind to the oracles: any pair called ordered is an error) and of
    the judge-minus-human test (a judge exchangeable with the humans: any pair called worse is an error)."""
    steps = -0.04 * np.arange(6)
    blind, worse = [], []
    for _ in range(R):
        human = oracle_values(rng, base, n, steps)
        t = pair_tests(oracle_values(rng, base, n, np.zeros(6)), human, ALPHA)
        blind.append(t["as_constructed"] + t["reversed"] > 0)
        t = pair_tests(oracle_values(rng, base, n, steps), human, ALPHA)
        worse.append(t["worse_than_humans"] > 0)
    return [
        row(
            "discrimination sign tests + Holm (blind judge): family-wise size",
            setting,
            n,
            n,
            ALPHA,
            np.array(blind, float),
            "<=0.06",
            lambda v, _: v <= 0.06,
        ),
        row(
            "discrimination judge-minus-human + Holm (judge like humans): family-wise size",
            setting,
            n,
            n,
            ALPHA,
            np.array(worse, float),
            "<=0.06",
            lambda v, _: v <= 0.06,
        ),
    ]


def permutation_rows(row, rng, R) -> list[dict]:
    """Size of the exact permutation test of kappa vs discrimination across judges with no association (kappa and
    the discrimination statistic independent, the statistic with ties as pair counts have)."""
    rows = []
    for judges in (5, 8, 12):
        hits = [
            permutation_p(rng.random(judges), rng.integers(0, 6, judges).astype(float), 2_000, int(rng.integers(2**31)))
            < ALPHA
            for _ in range(R)
        ]
        rows.append(
            row(
                "kappa vs discrimination permutation test (no association): size",
                "judges",
                0,
                judges,
                ALPHA,
                np.array(hits, float),
                "<=0.06",
                lambda v, _: v <= 0.06,
            )
        )
    return rows


def rho_interval_rows(row, rng, R) -> list[dict]:
    """Coverage of Spearman rho's interval (discrimination.rho_interval) across 5, 8, 12 and 33 judges whose kappa
    and statistic are bivariate normal with population Spearman rho 0, 0.5 or 0.8 (Pearson r = 2 sin(pi rho / 6));
    a draw with |rho| = 1 has no interval and counts as a miss. Rows under ROUGH_BELOW judges are flagged (the
    report says "rough" there)."""
    rows = []
    for judges in (5, 8, 12, 33):
        for rho in (0.0, 0.5, 0.8):
            r = 2 * np.sin(np.pi * rho / 6)
            x = rng.standard_normal((R, judges))
            y = r * x + np.sqrt(1 - r * r) * rng.standard_normal((R, judges))
            rx, ry = stats.rankdata(x, axis=1), stats.rankdata(y, axis=1)
            rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
            est = (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
            lo, hi = rho_interval(est, judges, LEVEL)
            covered = (lo <= rho) & (rho <= hi)  # NaN (|rho| = 1) compares False: a miss
            rows.append(
                row(
                    f"kappa vs discrimination rho interval (population rho {rho:g}): coverage",
                    "judges",
                    0,
                    judges,
                    LEVEL,
                    covered.astype(float),
                    "0.93-0.97",
                    lambda v, _: 0.93 <= v <= 0.97,
                    judges < ROUGH_BELOW,
                )
            )
    return rows
