"""The planner's promises against simulation, in the case that hid their errors: a judge off by a constant whose
noise grows across the queries, with a sampling signal that knows |human - judge| (so it is correlated with the
judge's bias). Predicted widths and spreads, coverage and claimed power are each checked against draws of the
design; the tolerances are ones the fixed methods pass and the old ones (unweighted leave-one-out centring,
normal power, k - H df on 2 labels a stratum) failed. benchmarks/calibration.py runs the full grid."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from judgebench.compare.budget import plan as budget_plan
from judgebench.exceptions import CompareError
from judgebench.metrics.designs import Active, Stratified, Uniform, design


def _item_one(n=40, seed=3, top=0.2):
    """y in [0.2, 0.8] per query for 3 systems; the judge 0.1 low with noise sd growing from 0.01 to ``top``."""
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.2, 0.8, (3, n))
    sd = np.linspace(0.01, top, n)
    f = y - 0.1 - sd * rng.standard_normal((3, n))
    return y, f


@pytest.mark.parametrize("k", [10, 20])
def test_active_with_the_signal_correlated_with_the_bias_covers_and_predicts_its_spread(k):
    y, f = _item_one()
    u = np.abs(y - f).mean(axis=0)  # the true |human - judge|, bias included
    d = design("active", u, k)
    e, df = d.estimate(y, f, d.draw(6000, seed=1))
    half = stats.t.ppf(0.975, df) * np.sqrt(e.var)
    coverage = (np.abs(e.point - y.mean(axis=1)) <= half).mean()
    assert 0.93 <= coverage <= 0.97, coverage  # the old centring: 0.918 at k = 10, 0.929 at k = 20
    measured_sd = e.point.std(axis=0)
    tolerance = 0.10 if k >= 20 else 0.12  # at 10 labels the linearised variance runs up to 11 % low (the old: 12 %)
    assert np.sqrt(d.predicted_var(y, f)) == pytest.approx(measured_sd, rel=tolerance)
    finite = np.isfinite(half).all(axis=1)
    width = budget_plan.predicted_width(d, y, f, k, 0.95)
    assert width == pytest.approx((2 * half[finite]).mean(axis=0), rel=tolerance)


def test_stratified_on_few_labels_a_stratum_covers():
    y, f = _item_one(n=24, top=0.3)
    u = np.abs(y - f).mean(axis=0)
    d = design("stratified", u, 8)
    assert d.alloc.min() >= 3 and d.alloc.sum() == 8  # 2 strata of 4 on average, none under 3
    e, df = d.estimate(y, f, d.draw(6000, seed=2))
    coverage = (np.abs(e.point - y.mean(axis=1)) <= stats.t.ppf(0.975, df) * np.sqrt(e.var)).mean()
    assert 0.93 <= coverage <= 0.97, coverage  # the old 4 strata of 2 with k - H df: 0.87


def test_claimed_power_matches_the_simulated_t_test():
    """A pair difference of 0.05 over 40 queries, k = 10 uniform labels: compare decides with the t-test on k - 1
    df, so the claim must be the t's power (the normal power claimed 0.8 where the t-test had 0.70)."""
    n, k, reps = 40, 10, 3000
    q = stats.norm.ppf((np.arange(n) + 0.5) / n)
    q = (q - q.mean()) / q.std(ddof=1)
    rng = np.random.default_rng(7)
    pilot_y = (0.05 + 0.04 * q)[None]
    pilot_f = pilot_y - 0.1 - 0.04 * rng.permutation(q)[None]
    d = Uniform(k, n)
    claimed = float(budget_plan.power(d, pilot_y, pilot_f, k)[0])
    hits = 0
    masks = d.draw(reps, seed=11)
    for r in range(reps):
        y = (0.05 + 0.04 * rng.standard_normal(n))[None]
        f = y - 0.1 - 0.04 * rng.standard_normal(n)[None]
        e, df = d.estimate(y, f, masks[r : r + 1])
        hits += abs(e.point[0, 0]) / np.sqrt(e.var_test[0, 0]) > stats.t.ppf(0.975, df[0, 0])
    assert 0.3 < claimed < 0.95
    assert hits / reps == pytest.approx(claimed, abs=0.04), (hits / reps, claimed)


def test_stratified_power_follows_the_tests_own_cut_off():
    """43 queries, 10 labels in Neyman strata of 3 and 7: the interval's df (Satterthwaite's) is estimated with its
    variance from those few labels, so the cut-off t(df) se moves from draw to draw. The claim must be the test's
    rejection rate, here measured on 20,000 draws of the design (a pair whose difference is the same on every
    query, so all the noise is the design's); the closed form at the pilot's df claimed 0.45 where the test had
    0.42."""
    n, k, effect = 43, 10, 0.06
    u = np.linspace(0.02, 0.2, n)  # the human - judge spread grows across the queries; the signal knows it
    y = np.full((1, n), effect)
    f = y - 0.1 - u * np.random.default_rng(5).standard_normal(n)[None]
    d = design("stratified", u, k)
    assert isinstance(d, Stratified) and list(d.alloc) == [3, 7]
    e, df = d.estimate(y, f, d.draw(20_000, seed=1))
    simulated = (np.abs(e.point) / np.sqrt(e.var_test) > stats.t.ppf(0.975, df)).mean()  # compare's decision
    claimed = float(budget_plan.power(d, y, f, k)[0])
    assert claimed == pytest.approx(simulated, abs=0.015), (claimed, simulated)  # MC s.e. 0.0035
    df0 = d.predicted_df(y, f)[0]
    crit, delta = stats.t.ppf(0.975, df0), effect / np.sqrt(d.predicted_var(y, f)[0])
    closed_form = stats.nct.sf(crit, df0, delta) + stats.nct.cdf(-crit, df0, delta)
    assert abs(closed_form - simulated) > 0.025, (closed_form, simulated)  # the case tells the two apart


def test_active_power_averages_over_its_random_size():
    y, f = _item_one()
    diff_y, diff_f = (y[0] - y[1])[None], (f[0] - f[1])[None]
    a = Active.build(np.abs(y - f).mean(axis=0), 8)
    pmf = a.size_pmf()
    assert pmf.sum() == pytest.approx(1) and (np.arange(len(pmf)) * pmf).sum() == pytest.approx(a.pi.sum())
    assert 0 <= budget_plan.power(a, diff_y, diff_f, 8)[0] <= 1


def test_a_stratum_with_no_label_is_one_error_naming_it():
    s = Stratified(np.array([0, 0, 0, 1, 1, 1]), np.array([2, 2]))
    y, f = np.ones((1, 6)), np.zeros((1, 6))
    mask = np.array([[True, True, False, False, False, False]])
    with pytest.raises(CompareError, match=r"^stratum 1 of the plan \(3 queries\): no labelled query in it"):
        s.estimate(y, f, mask)


def test_a_stratum_with_one_label_is_collapsed_into_its_neighbour():
    s = Stratified(np.array([0, 0, 0, 1, 1, 1]), np.array([2, 2]))
    f = np.array([[0.5, 0.4, 0.3, 0.8, 0.5, 0.2]])
    y = f + np.array([[0.3, 9.0, 9.0, 0.1, -0.1, 9.0]])
    e, df = s.estimate(y, f, np.array([[True, False, False, True, True, False]]))
    # the point keeps its strata: 0.5 (0.4 + 0.3) + 0.5 (0.5 + 0.0)
    assert e.point[0, 0] == pytest.approx(0.5 * 0.7 + 0.5 * 0.5)
    # the variance: one group of 6 with 3 labels, d = 0.3, 0.1, -0.1 (s^2 0.04): (1 - 3/6) 0.04 / 3
    assert e.var[0, 0] == pytest.approx(0.5 * 0.04 / 3) and df[0, 0] == pytest.approx(2)
