"""The default sweeper checks fewer configs up front, yet every override value of the sweep in at least one."""

import itertools

from hydra_plugins.judgebench_sweeper import covering


def test_covering_checks_every_value_once_not_every_cell():
    systems = [f"+system=s{i}" for i in range(10)]
    seeds = [f"judge.seed={j}" for j in range(100)]
    batch = [list(c) for c in itertools.product(seeds, systems)]  # seeds outer, systems inner
    chosen = covering(batch)
    assert chosen[0] == batch[0] and all(c in batch for c in chosen)
    assert set(systems) | set(seeds) == {o for c in chosen for o in c}  # a bad value anywhere is still composed
    # the first seed's 10 cells bring a new system each, every later seed one new value: 10 + 99 cells of 1,000
    assert len(chosen) == 109


def test_covering_keeps_a_single_cell_and_a_repeated_one_once():
    assert covering([["a=1"]]) == [["a=1"]]
    assert covering([[], []]) == [[]]  # no overrides: the one config is still composed
    assert covering([["a=1", "b=2"], ["a=1", "b=2"], ["b=2", "a=1"]]) == [["a=1", "b=2"]]
