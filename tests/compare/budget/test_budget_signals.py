"""The planner's signals on hand-made cells, each value worked out by hand here; the designs built on them; the
options through compare's schema."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from judgebench.compare.budget import plan as budget_plan
from judgebench.compare.budget import signals as budget_signals
from judgebench.compare.budget.experiment import Cell
from judgebench.exceptions import CompareError
from judgebench.metrics import designs

Q = ["q1", "q2", "q3"]


def _cell(judge, systems, f, queries=Q, confusion=None, dataset="d"):
    f = np.asarray(f, float)
    n = len(queries)
    conf = np.zeros((n, 4, 4)) if confusion is None else confusion
    return Cell(
        dataset,
        judge,
        list(systems),
        np.array(["llm"] * len(systems)),
        list(queries),
        f.copy(),
        f,
        conf.sum(axis=(1, 2)),
        conf,
    )


def _floored(raw):
    return np.asarray(raw) + 1e-3 * np.mean(raw)


def test_systems_is_the_spread_of_the_systems_under_the_judge():
    cell = _cell("A", ["s1", "s2"], [[0.2, 0.5, 0.9], [0.4, 0.5, 0.1]])
    # |0.2 - 0.4| / 2, 0, |0.9 - 0.1| / 2 (population sd of two values)
    np.testing.assert_allclose(budget_signals.signal("systems", cell), _floored([0.1, 0.0, 0.4]))


def test_judges_is_the_spread_across_judges_on_common_systems():
    a = _cell("A", ["s1", "s2", "s3"], [[0.2, 0.5, 0.9], [0.4, 0.5, 0.1], [9, 9, 9]])
    b = _cell("B", ["s2", "s1"], [[0.4, 0.1], [0.4, 0.5]], queries=["q1", "q2"])  # other order; no s3, no q3
    other = _cell("C", ["s1", "s2"], [[5, 5, 5], [5, 5, 5]], dataset="elsewhere")
    # q1: s1 sd(0.2, 0.4) = 0.1, s2 sd(0.4, 0.4) = 0 -> 0.05; q2: s1 0, s2 sd(0.5, 0.1) = 0.2 -> 0.1;
    # q3: only A has it -> the mean of the others, 0.075
    np.testing.assert_allclose(budget_signals.signal("judges", a, [a, b, other]), _floored([0.05, 0.1, 0.075]))
    with pytest.raises(CompareError, match="signal=judges: d has one judge \\(A\\); expected 2 or more judges"):
        budget_signals.signal("judges", a, [a, other])


def _labels(rows):
    return pd.DataFrame(rows, columns=["dataset", "judge", "query_id", "doc_id", "relevance", "human", "raw"])


def test_entropy_is_the_mean_label_entropy_per_query():
    p = lambda *v: json.dumps({"expected": 0.0, "probs": list(v), "truncated": False})  # noqa: E731
    lab = _labels(
        [
            ("d", "A", "q1", "x", 0, 0, p(1, 0, 0, 0)),
            ("d", "A", "q1", "y", 0, 1, p(0.5, 0.5, 0, 0)),
            ("d", "A", "q2", "x", 1, 1, p(0.25, 0.25, 0.25, 0.25)),
            ("d", "A", "q3", "z", 1, 1, "latent=0.3"),
            ("d", "B", "q3", "z", 1, 1, p(0.5, 0.5, 0, 0)),
        ]
    )  # another judge's: not A's
    cell = _cell("A", ["s1", "s2"], np.zeros((2, 3)))
    h1, h2 = math.log(2) / 2, math.log(4)  # q1: (0 + ln 2) / 2; q2: ln 4; q3 logged none -> the mean of the two
    np.testing.assert_allclose(budget_signals.signal("entropy", cell, [cell], lab), _floored([h1, h2, (h1 + h2) / 2]))


def test_entropy_of_a_judge_without_probabilities_is_one_line_naming_it():
    lab = _labels([("d", "sim", q, "x", 1, 1, "latent=0.1") for q in Q])
    with pytest.raises(CompareError, match="signal=entropy: judge sim on d logged no label probabilities"):
        budget_signals.signal("entropy", _cell("sim", ["s1", "s2"], np.zeros((2, 3))), None, lab)
    with pytest.raises(CompareError, match="judge sim on d logged no label probabilities"):  # no raw column at all
        budget_signals.signal("entropy", _cell("sim", ["s1", "s2"], np.zeros((2, 3))), None, lab.drop(columns="raw"))


def test_labels_is_the_judges_mean_label_per_query():
    conf = np.zeros((3, 4, 4))
    conf[0, 0, 1] += 1  # q1: judge labels 0 and 2 (the human's column does not matter)
    conf[0, 2, 3] += 1
    conf[1, 3, 0] += 2  # q2: judge labels 3, 3, 0
    conf[1, 0, 0] += 1
    cell = _cell("A", ["s1", "s2"], np.zeros((2, 3)), confusion=conf)  # q3: no pairs -> the mean of the others, 1.5
    u = budget_signals.signal("labels", cell)
    np.testing.assert_allclose(u, _floored([1.0, 2.0, 1.5]))
    # the designs on it: active with no mixing is pi = k u / sum u; stratified cuts along u
    a = budget_plan.build("active", u, 2)
    np.testing.assert_allclose(designs.Active.build(u, 2, mix=0.0).pi, 2 * u / u.sum())
    np.testing.assert_allclose(a.pi, 0.5 * 2 * u / u.sum() + 0.5 * 2 / 3)
    with pytest.raises(CompareError, match="signal='x': expected one of systems, judges, entropy, labels"):
        budget_signals.signal("x", cell)


def test_allocation_reaches_the_stratified_design():
    u = np.array([0.1] * 8 + [1.0] * 8)
    # k = 9: two strata of 8 (low, high signal; 9 // 4 = 2), each keeps 3; the other 3 go one at a time to the
    # stratum furthest below its share: proportional 4.5, 4.5 (ties: the first) -> 5, 4; neyman N_h S_h = 0.8, 8.0
    # -> 0.82, 8.18: all three to the second
    assert budget_plan.build("stratified", u, 9, "proportional").alloc.tolist() == [5, 4]
    assert budget_plan.build("stratified", u, 9, "neyman").alloc.tolist() == [3, 6]


def test_signal_and_allocation_through_the_schema():
    from judgebench.compare.command import schema, validate

    opts = validate.options(
        schema.parse(["experiment=e", "plan=budget", "budget=12", "signal=labels", "allocation=proportional"])
    )
    assert (opts.signal, opts.allocation) == ("labels", "proportional")
    assert (validate.options(schema.parse(["experiment=e", "plan=budget", "budget=12"])).signal) == "systems"
    for argv, want in (
        (
            ["plan=budget", "budget=4", "signal=entrpy"],
            "signal='entrpy': expected one of systems, judges, entropy, labels",
        ),
        (["plan=budget", "budget=4", "allocation=neymann"], "allocation='neymann': expected neyman or proportional"),
        (["signal=judges"], "set plan=budget too"),
    ):
        with pytest.raises(CompareError, match=want):
            validate.options(schema.parse(["experiment=e", *argv]))
    assert "signal=systems|judges|entropy|labels" in schema.USAGE
