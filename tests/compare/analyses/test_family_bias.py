"""The run-type bias's interval and test (compare/analyses/family_bias.py) at a leaderboard's shape, simulated.

14 own-family systems against 21 others on 82 queries (TREC DL 2023's shape), per-query gaps with a query effect
shared by every system, a fixed effect per system and skewed noise (centred gamma). Over R = 400 simulated
leaderboards (fixed seed) the 95 % interval (self-preference's guarded bootstrap-t) must cover the true contrast (the
mean of the own systems' effects minus the others') in 95 % +- 3 Monte Carlo standard errors (sqrt(0.95 * 0.05 / 400)
= 0.011), and its test must reject a true null (effects centred per group) at most 5 % + 3 MC errors (0.033); ~26 s
on 2 loaded cores, hence ``slow``."""

from __future__ import annotations

import numpy as np
import pytest

from judgebench.compare.analyses.bootstrap import resample_indices
from judgebench.compare.analyses.family_bias import contrast, inference

OWN, OTHER, QUERIES, R = 14, 21, 82, 400
MC = float(np.sqrt(0.95 * 0.05 / R))


def _simulate(rng, null: bool) -> tuple[np.ndarray, np.ndarray, float]:
    effects = rng.normal(0, 0.03, OWN + OTHER)
    if null:
        effects[:OWN] -= effects[:OWN].mean()
        effects[OWN:] -= effects[OWN:].mean()
    query = rng.normal(0.2, 0.1, QUERIES)  # what a judge does on a query to every system alike
    noise = rng.gamma(2.0, 0.05, (OWN + OTHER, QUERIES)) - 0.1  # skewed, mean 0
    gaps = effects[:, None] + query[None, :] + noise
    truth = effects[:OWN].mean() - effects[OWN:].mean()
    return gaps[:OWN], gaps[OWN:], float(truth)


@pytest.mark.slow
def test_interval_covers_and_test_keeps_its_size_at_a_leaderboards_shape():
    rng = np.random.default_rng(20261207)
    idx = resample_indices(QUERIES, 500, 0)
    covered, rejected = 0, 0
    for _ in range(R):
        own, other, truth = _simulate(rng, null=False)
        lo, hi, _ = inference(contrast(own, other), idx, 0.95)
        covered += lo <= truth <= hi
        own, other, _ = _simulate(rng, null=True)
        rejected += inference(contrast(own, other), idx, 0.95)[2] < 0.05
    coverage, size = covered / R, rejected / R
    assert abs(coverage - 0.95) <= 3 * MC, (coverage, MC)
    assert size <= 0.05 + 3 * MC, (size, MC)


def test_a_real_bias_is_found():
    rng = np.random.default_rng(7)
    own, other, _ = _simulate(rng, null=True)
    lo, hi, p = inference(contrast(own + 0.03, other), resample_indices(QUERIES, 500, 0), 0.95)
    assert lo > 0 and p < 0.01 and lo < 0.03 < hi
