"""Sampling designs of the human-budget planner: known answers by hand, exact unbiasedness over every sample,
and the coverage of each design's 95 % intervals on synthetic data."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from judgebench.metrics.designs import (
    OUTLIER_Z,
    Active,
    Stratified,
    Uniform,
    allocate,
    design,
    outlier_warning,
    outlying,
    proportional_pi,
)


def _mask(n, sampled):
    m = np.zeros((1, n), dtype=bool)
    m[0, sampled] = True
    return m


def test_stratified_build_by_hand():
    u = np.array([0.1] * 5 + [0.4] * 5)
    s = Stratified.build(u, 8, strata=2)
    # H = min(2, 8 // 4, 10 // 4) = 2; Neyman weights 5 * rms 0.1, 5 * 0.4 -> shares 1.6, 6.4 of 8; each >= 3 -> 3, 5
    assert s.strata.tolist() == [0] * 5 + [1] * 5 and s.alloc.tolist() == [3, 5]
    assert Stratified.build(u, 5, strata=2).alloc.tolist() == [5]  # 5 labels: one stratum (k // 4 = 1)


def test_stratified_by_hand():
    s = Stratified(np.array([0, 0, 0, 1, 1, 1]), np.array([2, 3]))
    assert s.pi.tolist() == pytest.approx([2 / 3] * 3 + [1] * 3)
    f = np.array([[0.5, 0.4, 0.3, 0.8, 0.5, 0.2]])
    y = f + np.array([[0.2, -0.2, 9.0, 0.1, 0.1, 0.1]])  # q2 not sampled: never read
    e, df = s.estimate(y, f, _mask(6, [0, 1, 3, 4, 5]))
    # stratum 0: mean f 0.4 + mean d 0, s^2 0.08, a = 0.5^2 (1 - 2/3) 0.08 / 2; stratum 1: 0.5 + 0.1, all labelled
    assert e.point[0, 0] == pytest.approx(0.5) and e.var[0, 0] == pytest.approx(0.25 / 3 * 0.04)
    assert df[0, 0] == pytest.approx(1)  # Satterthwaite: only stratum 0 (1 df) has a variance


def test_active_by_hand():
    a = Active(np.array([0.5, 0.5, 1.0, 0.25]))
    f = np.array([[0.1, 0.2, 0.3, 0.4]])
    y = f + np.array([[0.2, 9.0, 0.4, 0.0]])
    e, df = a.estimate(y, f, _mask(4, [0, 2, 3]))
    # given k = 3 of an expected 2.25: pi scaled by 3 / 2.25 (capped at 1) -> 2/3, 1, 1/3; weights 1.5, 1, 3
    c = (1.5 * 0.2 + 1 * 0.4 + 3 * 0.0) / 5.5  # the Hajek mean of d
    assert e.point[0, 0] == pytest.approx(0.25 + c)
    terms = 1.5**2 * (1 / 3) * (0.2 - c) ** 2 + 0 + 3**2 * (2 / 3) * (0.0 - c) ** 2
    assert e.var[0, 0] == pytest.approx(3 / 2 * terms / 16) and df[0, 0] == 2
    # under 2 labels: an infinite variance, an interval that covers
    assert np.isinf(a.estimate(y, f, _mask(4, [2]))[0].var[0, 0])


def test_active_with_equal_probabilities_is_uniform_ppi():
    rng = np.random.default_rng(0)
    y, f = rng.random((3, 12)), rng.random((3, 12))
    mask = Uniform(5, 12).draw(20, seed=1)
    (a, _), (u, _) = Active(np.full(12, 5 / 12)).estimate(y, f, mask), Uniform(5, 12).estimate(y, f, mask)
    assert np.allclose(a.point, u.point) and np.allclose(a.var, u.var)


def test_proportional_pi_caps_at_one_and_sums_to_k():
    pi = proportional_pi(np.array([10.0, 1, 1, 1, 1]), 3)
    # the first is capped at 1; the remaining 2 spread over four equal signals
    assert pi.tolist() == pytest.approx([1, 0.5, 0.5, 0.5, 0.5])
    a = Active.build(np.array([10.0, 1, 1, 1, 1]), 3, mix=0.5)
    assert a.pi.tolist() == pytest.approx(
        [0.5 * 1 + 0.5 * 0.6] + [0.5 * 0.5 + 0.5 * 0.6] * 4
    ) and a.pi.sum() == pytest.approx(3)


def test_allocate_bounds():
    assert allocate(8, np.array([5, 5]), np.array([1.0, 4.0])).tolist() == [3, 5]
    assert allocate(5, np.array([3, 3]), np.array([1.0, 4.0])).tolist() == [3, 3]  # the floor wins over k
    assert allocate(9, np.array([3, 3]), np.array([1.0, 1.0])).tolist() == [3, 3]
    assert allocate(6, np.array([2, 10]), np.array([10.0, 1.0])).tolist() == [2, 4]  # the capped stratum's rest goes on


def _expectation_active(a, y, f):
    n = len(a.pi)
    total = 0.0
    for bits in itertools.product([False, True], repeat=n):
        mask = np.array([bits])
        p = np.prod(np.where(mask[0], a.pi, 1 - a.pi))
        total += p * a.estimate(y, f, mask)[0].point[0, 0]
    return total


def test_active_bias_is_small_next_to_its_spread_over_every_sample():
    """Hajek's self-normalised mean is a ratio: biased O(1/k), not exactly unbiased; at k = 4 here, under a
    fifth of its sd (2 % of its mean squared error)."""
    rng = np.random.default_rng(4)
    y, f = rng.random((1, 8)), rng.random((1, 8)) + 0.3  # a judge off by a constant and noise
    a = Active(np.array([0.9, 0.4, 0.5, 0.35, 0.7, 0.45, 0.8, 0.6]))
    bias = _expectation_active(a, y, f) - y.mean()
    assert abs(bias) < 0.2 * np.sqrt(a.predicted_var(y, f)[0])


def test_stratified_is_exactly_unbiased_over_every_sample():
    rng = np.random.default_rng(5)
    y, f = rng.random((1, 7)), rng.random((1, 7))
    s = Stratified(np.array([0, 0, 0, 1, 1, 1, 1]), np.array([2, 2]))
    points = [
        s.estimate(y, f, _mask(7, [*a, *b]))[0].point[0, 0]
        for a in itertools.combinations(range(3), 2)
        for b in itertools.combinations(range(3, 7), 2)
    ]
    assert np.mean(points) == pytest.approx(y.mean(), abs=1e-12)


def _synthetic(seed=11, n=400):
    """A heteroscedastic judge: its error's spread differs per query, and the signal knows the spread."""
    rng = np.random.default_rng(seed)
    y = np.clip(rng.beta(2, 2, (3, n)), 0, 1)
    sd = rng.uniform(0.02, 0.3, n)
    f = 0.7 * y + 0.2 + rng.normal(0, 1, (3, n)) * sd
    return y, f, sd


@pytest.mark.parametrize("strategy", ["uniform", "stratified", "active"])
def test_each_design_covers_at_nominal_rate_on_synthetic_data(strategy):
    y, f, signal = _synthetic()
    for k in (20, 50):
        d = design(strategy, signal, k)
        e, df = d.estimate(y, f, d.draw(4000, seed=5))
        half = stats.t.ppf(0.975, df) * np.sqrt(e.var)
        coverage = (np.abs(e.point - y.mean(axis=1)) <= half).mean()
        assert abs(coverage - 0.95) <= 0.015, (strategy, k, coverage)
        # the estimate is unbiased and its spread is what the planner predicts
        assert np.abs(e.point.mean(axis=0) - y.mean(axis=1)).max() < 4 * e.point.std(axis=0).max() / np.sqrt(4000)
        assert e.point.std(axis=0) == pytest.approx(np.sqrt(d.predicted_var(y, f)), rel=0.1)


def test_active_and_stratified_beat_uniform_when_the_signal_knows_the_error():
    y, f, signal = _synthetic()
    var = {s: design(s, signal, 20).predicted_var(y, f).mean() for s in ("uniform", "stratified", "active")}
    assert var["active"] < 0.9 * var["uniform"] and var["stratified"] < 0.9 * var["uniform"], var


def test_unknown_strategy_is_an_error():
    with pytest.raises(ValueError, match="strategy='magic'"):
        design("magic", np.ones(4), 2)


def test_outlying_against_scipys_median_absolute_deviation():
    """A judge value is outlying beyond OUTLIER_Z robust sd from its row's median: the robust sd recomputed with
    scipy's median_abs_deviation (normal scale); where the MAD is 0 (over half the row tied) the row's sd instead."""
    rng = np.random.default_rng(4)
    f = rng.normal(0.5, 0.1, (3, 40))
    f[0, 7], f[1, 3], f[1, 30] = 2.0, -1.0, 0.5 + 3.5 * 0.1  # two far out, one inside the bound
    f[2] = 0.0
    f[2, :5] = [0.05, 0.02, 0.3, 0.01, 0.0]  # MAD 0: the sd decides
    expected = np.zeros_like(f, dtype=bool)
    for r in range(3):
        scale = stats.median_abs_deviation(f[r], scale="normal")
        if scale == 0:
            scale = np.std(f[r], ddof=1)
        expected[r] = np.abs(f[r] - np.median(f[r])) / scale > 5.0
    got = outlying(f)
    assert OUTLIER_Z == 5.0 and (got == expected).all()
    assert got[0, 7] and got[1, 3] and not got[1, 30] and got[2, 2] and got.sum() == 3
    assert not outlying(np.zeros((1, 5))).any()  # a constant row has no outlier
    assert outlier_warning([]) is None
    assert "query q7 lies more than 5 robust sd" in outlier_warning(["q7"]) and "label it too" in outlier_warning(
        ["q7"]
    )
    assert "queries q1, q9" in outlier_warning(["q1", "q9"]) and outlier_warning(["q1", "q9"]).endswith(
        "label them too"
    )
