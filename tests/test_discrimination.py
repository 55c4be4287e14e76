"""compare/analyses/discrimination.py on a small synthetic frame: every count, tau and rho recomputed independently
(scipy's t-test, Kendall and Spearman, numpy's resampling), never through the module under test."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau, spearmanr, ttest_rel

from judgebench.compare.analyses import discrimination
from judgebench.compare.reference import References

SYSTEMS = ["Perfect", "Swap[3]", "Swap[2]", "Swap[1]"]
QUERIES = [f"q{i:02d}" for i in range(20)]
ALPHA = 0.05


def _values() -> dict[str, np.ndarray]:
    """(systems, queries) per judge: humans separate the first three levels, not the last two."""
    rng = np.random.default_rng(7)
    base = np.array([0.9, 0.7, 0.5, 0.49])[:, None] + rng.normal(0, 0.05, (4, len(QUERIES)))
    return {
        "human_labelset": base,
        "human": base,
        "faithful": base + rng.normal(0, 0.01, base.shape),  # the human decisions
        "reverser": base[[1, 0, 2, 3]] + rng.normal(0, 0.01, base.shape),  # Perfect and Swap[3] swapped
        "flat": 0.6 + rng.normal(0, 0.2, base.shape),  # separates little
        "splitter": base + np.array([0.0, 0.0, 0.1, -0.1])[:, None],  # separates the last pair too (spurious)
    }


def _frame(values: dict[str, np.ndarray]) -> pd.DataFrame:
    rows = [("d", s, j, j if j in ("human", "human_labelset") else "judge", q, float(v[i, k]))
            for j, v in values.items() for i, s in enumerate(SYSTEMS) for k, q in enumerate(QUERIES)]
    return pd.DataFrame(rows, columns=["dataset", "system", "judge", "role", "query_id", "value"])


def _decision(x: np.ndarray, y: np.ndarray):
    t, p = ttest_rel(x, y)
    return None if not p < ALPHA else (1 if t > 0 else -1)


def _expected_counts(values, judge: str) -> dict[str, int]:
    out = dict(human_significant=0, agree=0, missed=0, spurious=0, reversed=0)
    for a, b in combinations(range(len(SYSTEMS)), 2):
        h = _decision(values["human_labelset"][a], values["human_labelset"][b])
        j = _decision(values[judge][a], values[judge][b])
        out["human_significant"] += h is not None
        out["agree"] += h is not None and j == h
        out["missed"] += h is not None and j is None
        out["reversed"] += h is not None and j is not None and j != h
        out["spurious"] += h is None and j is not None
    return out


def _run(values, kappa, n_resamples=200):
    per_query = _frame(values)
    t1 = {"d": pd.DataFrame({"type": "oracle", **{j: v.mean(axis=1) for j, v in values.items()}}, index=SYSTEMS)}
    t2 = pd.DataFrame({"dataset": "d", "judge": list(kappa), "kappa_graded": list(kappa.values())})
    return discrimination.analyse(per_query, t1, t2, References(per_query, "human_labelset"), ALPHA, False, n_resamples, 3, 0.95)


KAPPA = {"faithful": 0.8, "reverser": 0.6, "flat": 0.1, "splitter": 0.5}


def test_counts_taus_and_ranking_match_an_independent_computation():
    values = _values()
    d = _run(values, KAPPA)
    t = d.table.set_index("judge")
    for judge in KAPPA:
        assert t.loc[judge, ["human_significant", "agree", "missed", "spurious", "reversed"]].to_dict() == _expected_counts(values, judge), judge
        human, mine = values["human_labelset"].mean(axis=1), values[judge].mean(axis=1)
        assert t.loc[judge, "tau_oracles"] == pytest.approx(kendalltau(mine, human).statistic)
        assert t.loc[judge, "kappa_graded"] == KAPPA[judge]
    # the planted behaviours, so the independent counts above are not all zeros
    assert t.loc["faithful", "agree"] == t.loc["faithful", "human_significant"] == 5 and t.loc["faithful", "tau_oracles"] == 1.0
    assert t.loc["reverser", "reversed"] == 1 and t.loc["splitter", "spurious"] == 1 and t.loc["flat", "missed"] >= 3
    assert d.human == {"d": (5, 6)}
    # ranked by pairs agreed, then tau
    ranked = list(d.table["judge"])
    assert ranked == sorted(KAPPA, key=lambda j: (-t.loc[j, "agree"], -t.loc[j, "tau_oracles"]))
    # tau's percentile interval: the same query resamples (queries in string order, one rng) recomputed here
    idx = np.random.default_rng(3).integers(0, len(QUERIES), size=(200, len(QUERIES)))
    boot = [kendalltau(values["reverser"][:, i].mean(axis=1), values["human_labelset"][:, i].mean(axis=1)).statistic for i in idx]
    assert (t.loc["reverser", "tau_oracles_lo"], t.loc["reverser", "tau_oracles_hi"]) == pytest.approx(tuple(np.percentile(boot, [2.5, 97.5])))
    assert t.loc["reverser", "tau_ap_oracles"] < t.loc["reverser", "tau_oracles"]  # a swap at the top costs tau_AP more


def test_rank_correlations_with_a_bootstrap_over_judges():
    values = _values()
    d = _run(values, KAPPA)
    c = d.correlations.set_index("statistic")
    t = d.table.set_index("judge").loc[list(KAPPA)]
    k = np.array(list(KAPPA.values()))
    for stat in ("agree", "tau_oracles"):
        s = t[stat].to_numpy(dtype=float)
        assert c.loc[stat, "rho"] == pytest.approx(spearmanr(k, s).statistic)
        idx = np.random.default_rng(3).integers(0, 4, size=(200, 4))
        # the module keeps the table's ranked order; resample in that order too
        order = d.table["judge"].tolist()
        kk, ss = np.array([KAPPA[j] for j in order]), t.loc[order, stat].to_numpy(dtype=float)
        boot = [spearmanr(kk[i], ss[i]).statistic if np.ptp(kk[i]) and np.ptp(ss[i]) else math.nan for i in idx]
        assert (c.loc[stat, "lo"], c.loc[stat, "hi"]) == pytest.approx(tuple(np.nanpercentile(boot, [2.5, 97.5])))
    assert d.answers["d"].startswith("On d, label agreement ")
    from types import SimpleNamespace
    from judgebench.compare import findings
    (found,) = findings.discrimination(SimpleNamespace(discrimination=d))
    assert "humans separate 5 of 6 oracle pairs" in found.text and found.text.endswith(d.answers["d"])


def test_not_computed_without_oracles_or_with_fewer_than_three_judges():
    values = _values()
    two = {j: v for j, v in values.items() if j in ("human", "human_labelset", "faithful", "flat")}
    assert not _run(two, {"faithful": 0.8, "flat": 0.1})
    per_query = _frame(values)
    t1 = {"d": pd.DataFrame({"type": "llm", **{j: v.mean(axis=1) for j, v in values.items()}}, index=SYSTEMS)}
    assert not discrimination.analyse(per_query, t1, pd.DataFrame(), References(per_query, "human_labelset"))


def test_ties_flag_the_correlation_unreliable():
    frame = pd.DataFrame({"kappa_graded": [0.1, 0.2, 0.3, 0.4, 0.5], "agree": [5, 5, 5, 5, 4], "tau_oracles": [0.2, 0.4, 0.1, 0.8, 0.6]})
    c = discrimination.correlations(frame, 100, 0, 0.95).set_index("statistic")
    assert bool(c.loc["agree", "unreliable"]) and c.loc["agree", "modal_share"] == 0.8
    assert not bool(c.loc["tau_oracles", "unreliable"]) and c.loc["tau_oracles", "rho"] == pytest.approx(spearmanr([1, 2, 3, 4, 5], [2, 3, 1, 5, 4]).statistic)
