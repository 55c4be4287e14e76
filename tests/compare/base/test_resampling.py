"""compare/base/resampling.py: the report's options become one Resampling, field by field, defaults unchanged."""

from __future__ import annotations

import dataclasses

import pytest

from judgebench.compare.analyses import discrimination
from judgebench.compare.base.report_model import Options
from judgebench.compare.base.resampling import Resampling


def test_each_option_lands_in_its_own_field():
    """Four different values, so a swapped pair (seed for resamples, level for alpha) cannot pass."""
    got = Resampling.from_options(Options(bootstrap=37, seed=11, level=0.9, alpha=0.01))
    assert (got.n_resamples, got.seed, got.level, got.alpha) == (37, 11, 0.9, 0.01)


def test_the_defaults_are_the_reports_and_the_permutation_tests():
    """The analyses' defaults before the settings became one object: the report's options (1000 resamples, seed 0,
    95 %, alpha 0.05), and 10,000 random orderings for discrimination's permutation test."""
    assert Resampling.from_options(Options()) == Resampling() == Resampling(1000, 0, 0.95, 0.05)
    assert discrimination.PERMUTATION_TEST == Resampling(10_000, 0, 0.95, 0.05)


def test_it_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Resampling().seed = 1
