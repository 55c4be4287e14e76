"""compare/analyses/discrimination.py on a small synthetic frame: every count, tau and rho recomputed independently
(scipy's binomial test, Kendall and Spearman, statsmodels' Holm, plain loops over queries and permutations), never
through the module under test."""

from __future__ import annotations

from itertools import combinations, permutations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, kendalltau, spearmanr
from scipy.stats import t as student_t
from statsmodels.stats.multitest import multipletests

from judgebench.compare.analyses import discrimination
from judgebench.compare.base.reference import References
from judgebench.compare.base.resampling import Resampling

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
        "splitter": base + np.array([0.0, 0.0, 0.1, -0.1])[:, None],  # separates the last pair too: as constructed
    }


def _frame(values: dict[str, np.ndarray]) -> pd.DataFrame:
    rows = [
        ("d", s, j, j if j in ("human", "human_labelset") else "judge", q, float(v[i, k]))
        for j, v in values.items()
        for i, s in enumerate(SYSTEMS)
        for k, q in enumerate(QUERIES)
    ]
    return pd.DataFrame(rows, columns=["dataset", "system", "judge", "role", "query_id", "value"])


def _holm(p):
    return multipletests(p, method="holm")[1]


def _expected_counts(values, judge: str) -> dict[str, int]:
    """Per constructed pair (SYSTEMS is in construction order): scipy's two-sided binomial test on the queries where
    the judge differs, Holm over the 6 pairs; the judge-minus-human sign test one-sided."""
    pairs = list(combinations(range(len(SYSTEMS)), 2))

    def ordered(v):
        diff = [v[a] - v[b] for a, b in pairs]
        plus, minus = [int((x > 0).sum()) for x in diff], [int((x < 0).sum()) for x in diff]
        p = _holm([binomtest(u, u + m).pvalue if u + m else 1.0 for u, m in zip(plus, minus)])
        return [(q < ALPHA) and u > m for q, u, m in zip(p, plus, minus)], [
            (q < ALPHA) and u < m for q, u, m in zip(p, plus, minus)
        ]

    up, down = ordered(values[judge])
    human_up, _ = ordered(values["human_labelset"])
    worse_p = []
    for a, b in pairs:
        e = np.sign(values["human_labelset"][a] - values["human_labelset"][b]) - np.sign(
            values[judge][a] - values[judge][b]
        )
        plus, minus = int((e > 0).sum()), int((e < 0).sum())
        worse_p.append(binomtest(plus, plus + minus, alternative="greater").pvalue if plus + minus else 1.0)
    return {
        "pairs": 6,
        "as_constructed": sum(up),
        "reversed": sum(down),
        "undecided": 6 - sum(up) - sum(down),
        "worse_than_humans": int((_holm(worse_p) < ALPHA).sum()),
        "human_as_constructed": sum(human_up),
    }


def _query_tau(judge: np.ndarray, human: np.ndarray) -> tuple[float, float, float]:
    """The per-query pooled tau and its delta-method t interval, one query and one pair at a time."""
    a, b, c = [], [], []
    for q in range(judge.shape[1]):
        sa = sb = sc = 0
        for i, j in combinations(range(judge.shape[0]), 2):
            x, y = np.sign(judge[i, q] - judge[j, q]), np.sign(human[i, q] - human[j, q])
            sa, sb, sc = sa + x * y, sb + abs(x), sc + abs(y)
        a.append(sa), b.append(sb), c.append(sc)
    a, b, c = map(np.array, (a, b, c))
    tau = a.mean() / np.sqrt(b.mean() * c.mean())
    psi = (a - a.mean()) / np.sqrt(b.mean() * c.mean()) - tau / 2 * (
        (b - b.mean()) / b.mean() + (c - c.mean()) / c.mean()
    )
    half = student_t.ppf(0.975, len(a) - 1) * psi.std(ddof=1) / np.sqrt(len(a))
    return tau, max(-1, tau - half), min(1, tau + half)


def _run(values, kappa):
    per_query = _frame(values)
    t1 = {"d": pd.DataFrame({"type": "oracle", **{j: v.mean(axis=1) for j, v in values.items()}}, index=SYSTEMS)}
    t2 = pd.DataFrame({"dataset": "d", "judge": list(kappa), "kappa_graded": list(kappa.values())})
    return discrimination.analyse(
        per_query,
        t1,
        t2,
        References(per_query, "human_labelset"),
        Resampling(discrimination.PERMUTATIONS, seed=3, alpha=ALPHA),
    )


KAPPA = {"faithful": 0.8, "reverser": 0.6, "flat": 0.1, "splitter": 0.5}
COUNTS = ["pairs", "as_constructed", "reversed", "undecided", "worse_than_humans", "human_as_constructed"]


def test_counts_taus_and_ranking_match_an_independent_computation():
    values = _values()
    d = _run(values, KAPPA)
    t = d.table.set_index("judge")
    for judge in KAPPA:
        assert t.loc[judge, COUNTS].to_dict() == _expected_counts(values, judge), judge
        human, mine = values["human_labelset"].mean(axis=1), values[judge].mean(axis=1)
        assert t.loc[judge, "tau_oracles"] == pytest.approx(kendalltau(mine, human).statistic)
        assert t.loc[
            judge, ["query_tau_oracles", "query_tau_oracles_lo", "query_tau_oracles_hi"]
        ].tolist() == pytest.approx(_query_tau(values[judge], values["human_labelset"]))
        assert t.loc[judge, "kappa_graded"] == KAPPA[judge]
    # the planted behaviours, so the independent counts above are not all zeros: the splitter separates the last pair
    # (0.5 vs 0.49) as constructed and is counted for it; the reverser puts Swap[3] above Perfect, worse than humans;
    # the flat judge decides nothing and separates 5 pairs worse than humans
    assert t.loc["splitter", "as_constructed"] == 6 and t.loc["faithful", "as_constructed"] == 5
    assert t.loc["reverser", ["reversed", "worse_than_humans"]].tolist() == [1, 1]
    assert t.loc["flat", ["undecided", "worse_than_humans"]].tolist() == [6, 5]
    assert d.human == {"d": (6, 6)}
    ranked = list(d.table["judge"])
    assert ranked == sorted(
        KAPPA,
        key=lambda j: (-t.loc[j, "as_constructed"], t.loc[j, "worse_than_humans"], -t.loc[j, "query_tau_oracles"]),
    )
    assert t.loc["reverser", "tau_ap_oracles"] < t.loc["reverser", "tau_oracles"]  # a swap at the top costs tau_AP more


def test_holm_in_numpy_agrees_with_statsmodels():
    from judgebench.metrics.significance import holm

    rng = np.random.default_rng(1)
    for _ in range(8):  # (statsmodels collects garbage on every call: a few calls, not fifty)
        p = rng.random(int(rng.integers(1, 20))) ** 3
        np.testing.assert_array_equal(holm(p), _holm(p))  # to the bit: the report's p values stay as they were
    np.testing.assert_allclose(holm(np.array([0.01, np.nan, 0.04, 0.03])), [0.03, np.nan, 0.06, 0.06])
    many = rng.random((3, 15))  # row by row over a leading axis
    np.testing.assert_array_equal(holm(many), np.array([_holm(r) for r in many]))


def test_the_construction_order_reads_hole_names_and_leaves_others_out():
    assert [discrimination.construction_rank(s) for s in ("Perfect", "Swap[2,3] hole", "Swap[1,2]", "BM25")] == [
        0,
        4,
        5,
        None,
    ]
    assert discrimination.min_judges(0.05) == 5 and discrimination.min_judges(0.1) == 4  # 2/5! = 0.017, 2/4! = 0.083


def test_rank_correlations_by_an_exact_permutation_test():
    frame = pd.DataFrame(
        {
            "kappa_graded": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
            "as_constructed": [1, 2, 2, 4, 5, 6],
            "query_tau_oracles": [0.2, 0.4, 0.1, 0.8, 0.6, 0.3],
        }
    )
    c = discrimination.correlations(frame).set_index("statistic")
    k = frame["kappa_graded"].to_numpy()
    raw = []
    for stat in ("as_constructed", "query_tau_oracles"):
        s = frame[stat].to_numpy(dtype=float)
        rho = spearmanr(k, s).statistic
        every = [spearmanr(k, s[list(perm)]).statistic for perm in permutations(range(6))]  # all 720 pairings
        p = np.mean(np.abs(every) >= abs(rho) - 1e-12)
        assert c.loc[stat, "rho"] == pytest.approx(rho) and c.loc[stat, "p_value"] == pytest.approx(p)
        raw.append(p)
    assert c["p_holm"].tolist() == pytest.approx(list(_holm(raw)))
    assert c.loc["as_constructed", "verdict"] == "predicts" and c.loc["query_tau_oracles", "verdict"] == "no evidence"
    few = discrimination.correlations(frame.iloc[:4]).set_index("statistic")
    assert (few["verdict"] == discrimination.TOO_FEW).all()  # 4 judges: the smallest two-sided p is 2/24 > 0.05


def test_rho_has_fisher_z_interval_with_bonett_wright_error():
    """Worked by hand: rho = 0.6 over 12 judges, z = atanh(0.6) = 0.6931, s.e. sqrt(1.18 / 9) = 0.3621, 95 %:
    tanh(0.6931 -+ 1.96 * 0.3621) = [-0.0165, 0.8860]; none under 4 judges or at |rho| = 1."""
    lo, hi = discrimination.rho_interval(np.array([0.6, 1.0, -0.6]), 12)
    assert lo[0] == pytest.approx(-0.0165, abs=5e-4) and hi[0] == pytest.approx(0.8860, abs=5e-4)
    assert np.isnan(lo[1]) and np.isnan(hi[1])
    assert lo[2] == pytest.approx(-hi[0]) and hi[2] == pytest.approx(-lo[0])  # symmetric in the sign
    assert np.isnan(discrimination.rho_interval(np.array([0.5]), 3)[0]).all()
    frame = pd.DataFrame(
        {
            "kappa_graded": np.linspace(0.1, 0.9, 12),
            "as_constructed": [1, 3, 2, 4, 6, 5, 8, 7, 9, 12, 10, 11],
            "query_tau_oracles": [0.2, 0.4, 0.1, 0.8, 0.6, 0.3, 0.5, 0.9, 0.7, 0.2, 0.4, 0.6],
        }
    )
    c = discrimination.correlations(frame, level=0.9).set_index("statistic")
    for stat in ("as_constructed", "query_tau_oracles"):
        rho = spearmanr(frame["kappa_graded"], frame[stat]).statistic
        half = 1.6449 * np.sqrt((1 + rho**2 / 2) / 9)
        assert c.loc[stat, "rho_lo"] == pytest.approx(np.tanh(np.arctanh(rho) - half), abs=1e-4)
        assert c.loc[stat, "rho_hi"] == pytest.approx(np.tanh(np.arctanh(rho) + half), abs=1e-4)
    text = discrimination.answer("d", c.reset_index(), 12)
    assert f"[{c.loc['as_constructed', 'rho_lo']:+.2f}, {c.loc['as_constructed', 'rho_hi']:+.2f}]" in text
    assert "rough" not in text
    assert "(rough under 10 judges)" in discrimination.answer(
        "d", discrimination.correlations(frame.iloc[:6]).reset_index(), 6
    )


def test_the_answer_and_the_finding_say_too_few_judges_with_four():
    values = _values()
    d = _run(values, KAPPA)
    assert d.answers["d"].startswith(
        "On d, there are too few judges (4; a permutation test needs 5 to reach alpha 0.05) to say"
    )
    from types import SimpleNamespace

    from judgebench.compare.sections.discrimination import Discrimination

    (found,) = Discrimination().findings(SimpleNamespace(discrimination=d))
    assert "humans order 6 of 6 oracle pairs as constructed" in found.text and found.text.endswith(d.answers["d"])


def test_not_computed_without_oracles_or_with_fewer_than_three_judges():
    values = _values()
    two = {j: v for j, v in values.items() if j in ("human", "human_labelset", "faithful", "flat")}
    assert not _run(two, {"faithful": 0.8, "flat": 0.1})
    per_query = _frame(values)
    t1 = {"d": pd.DataFrame({"type": "llm", **{j: v.mean(axis=1) for j, v in values.items()}}, index=SYSTEMS)}
    assert not discrimination.analyse(per_query, t1, pd.DataFrame(), References(per_query, "human_labelset"))
