"""The fake server's settings (testing/fake_config.py): a bad setting is refused with its name, and the one fault draw
per request splits a uniform number into the stacked fault shares."""

from __future__ import annotations

import random

import numpy as np
import pytest

from judgebench.testing.fake_config import FAULT_FIELD, FAULTS, FakeConfig, draw_outcome


def test_updated_coerces_values_and_leaves_the_original_alone():
    base = FakeConfig()
    new = base.updated(labels={"zebra": "3"}, prefer=("a", 1), seed="7", fail_429="0.25", lookup_any_key=1)
    assert new.labels == {"zebra": 3} and new.prefer == ["a", "1"] and new.seed == 7
    assert new.fail_429 == 0.25 and new.lookup_any_key is True
    assert base == FakeConfig()  # frozen: a copy, never an edit


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"fail_ratio": 0.1}, r"unknown fake server setting\(s\) \['fail_ratio'\]"),
        ({"latency_s": -1}, "latency_s must be >= 0, got -1"),
        ({"max_inflight": -2}, "max_inflight must be >= 0, got -2"),
        ({"fail_429": 1.5}, "fault shares must each be in"),
        ({"fail_429": 0.6, "fail_500": 0.5}, r"sum to <= 1"),
    ],
)
def test_a_bad_setting_is_refused_with_its_name(kw, message):
    with pytest.raises(ValueError, match=message):
        FakeConfig().updated(**kw)


def test_a_negative_seed_is_a_seed():
    assert FakeConfig().updated(seed=-3).seed == -3


def test_the_draw_stacks_the_fault_shares_in_order():
    shares = {"429": 0.1, "500": 0.05, "timeout": 0.02, "malformed": 0.2, "noscore": 0.13}
    config = FakeConfig().updated(**{FAULT_FIELD[f]: s for f, s in shares.items()})
    rng = random.Random(11)
    got = [draw_outcome(rng, config) for _ in range(20_000)]
    # reference: the same uniform numbers, placed between the cumulative shares by numpy
    ref_rng = random.Random(11)
    u = np.array([ref_rng.random() for _ in range(20_000)])
    edges = np.cumsum([shares[f] for f in FAULTS])
    names = np.array([*FAULTS, "ok"])
    assert got == names[np.searchsorted(edges, u, side="right")].tolist()
    counts = {name: got.count(name) / len(got) for name in names}
    for fault, share in shares.items():
        assert abs(counts[fault] - share) < 0.01
    assert abs(counts["ok"] - 0.5) < 0.015


def test_no_fault_share_is_always_ok():
    rng = random.Random(0)
    assert {draw_outcome(rng, FakeConfig()) for _ in range(1000)} == {"ok"}
