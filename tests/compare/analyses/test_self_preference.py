"""Self-preference: known answers on hand-made frames, recovery of a planted effect on simulated families, the null.

The simulated grids are built in-process on the toy dataset (tests/helpers/simulated_families.py): each judge's latent
prior is the one of the family it is built with, each ranker's the one of its family, so a judge of family A
favours A's rankers by an amount the weights set. Nothing here starts a sweep.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from judgebench.compare.analyses import order_bias, self_preference
from judgebench.compare.base.reference import References
from judgebench.compare.base.resampling import Resampling
from judgebench.metrics.self_preference import GuardedBootstrapT
from judgebench.metrics.significance import holm
from judgebench.rankers.prp import order_statistics
from simulated_families import grid

# --------------------------------------------------------------------------- known answers, by hand

REF = 0.5
GAPS = {  # judge -> system -> per-query gap (q0, q1, q2)
    "jx": {"S1": [0.3, 0.1, 0.2], "S2": [0.0, 0.0, 0.0], "O": [-0.1, -0.1, -0.1]},
    "jy": {"S1": [0.1, 0.1, 0.1], "S2": [0.2, 0.3, 0.1], "O": [0.0, 0.0, 0.0]},
}
FAMILIES = {"S1": "x", "S2": "y", "O": "oracle"}
TYPES = {"S1": "llm", "S2": "llm", "O": "oracle"}


def _hand_made(reference_rows: bool = True):
    rows = []
    for judge, systems in GAPS.items():
        for system, gaps in systems.items():
            for i, g in enumerate(gaps):
                rows.append(
                    {
                        "dataset": "d",
                        "system": system,
                        "judge": judge,
                        "role": "judge",
                        "query_id": f"q{i}",
                        "value": REF + g,
                    }
                )
                rows.append(
                    {
                        "dataset": "d",
                        "system": system,
                        "judge": judge,
                        "role": "human_judged",
                        "query_id": f"q{i}",
                        "value": REF,
                    }
                )
    per_query = pd.DataFrame(rows)
    t1 = {
        "d": pd.DataFrame(
            {
                "type": [TYPES[s] for s in ("O", "S1", "S2")],
                "human": REF,
                "human_labelset": REF,
                "jx": [
                    per_query[
                        (per_query.judge == "jx") & (per_query.role == "judge") & (per_query.system == s)
                    ].value.mean()
                    for s in ("O", "S1", "S2")
                ],
                "jy": [
                    per_query[
                        (per_query.judge == "jy") & (per_query.role == "judge") & (per_query.system == s)
                    ].value.mean()
                    for s in ("O", "S1", "S2")
                ],
            },
            index=pd.Index(["O", "S1", "S2"], name="system"),
        )
    }
    jobs = pd.DataFrame(
        [
            {"dataset": "d", "system": s, "ranker_family": FAMILIES[s], "judge": j, "judge_family": j[1:]}
            for s in FAMILIES
            for j in GAPS
        ]
    )
    return per_query, t1, jobs, References(per_query, "human_judged")


def test_self_preference_and_interaction_known_answers():
    result = self_preference.analyse(*_hand_made(), Resampling(200, seed=4))
    sp = result["self_preference"].set_index("judge")
    # jx: own S1, other LLM S2 (the oracle O is no LLM): per query 0.3, 0.1, 0.2 -> mean 0.2
    assert sp.loc["jx", "self_preference"] == pytest.approx(0.2) and sp.loc["jx", "gap_own"] == pytest.approx(0.2)
    assert sp.loc["jx", "gap_other"] == pytest.approx(0.0) and sp.loc["jx", "own_systems"] == "S1"
    assert sp.loc["jx", "other_systems"] == "S2" and sp.loc["jx", "queries"] == 3
    # jy: own S2, other S1: 0.1, 0.2, 0.0 -> 0.1
    assert sp.loc["jy", "self_preference"] == pytest.approx(0.1)
    # the bootstrap's contract, recomputed: queries q0 q1 q2 in order, one generator; symmetric bootstrap-t: |t| of
    # each resample, its 95 % quantile; t interval and test beside it; the union and the larger p
    d = np.array([0.3, 0.1, 0.2])
    idx = np.random.default_rng(4).integers(0, 3, size=(200, 3))
    boot, spread = d[idx], ~(idx == idx[:, :1]).all(axis=1)  # a resample of one query three times has s = 0: left out
    se, se_b = 0.1 / np.sqrt(3), boot.std(axis=1, ddof=1) / np.sqrt(3)  # s of (0.3, 0.1, 0.2) is 0.1
    t = np.abs(boot.mean(axis=1) - 0.2)[spread] / se_b[spread]
    c = np.quantile(t, 0.95)
    t_half = scipy_stats.t.ppf(0.975, 2) * se
    assert sp.loc["jx", "lo"] == pytest.approx(0.2 - max(c * se, t_half))
    assert sp.loc["jx", "hi"] == pytest.approx(0.2 + max(c * se, t_half))
    p_boot = (1 + (t >= 0.2 / se).sum()) / (1 + len(t))  # no resample of 3 queries reaches t = 3.46: p near 1/B
    p_t = 2 * scipy_stats.t.sf(0.2 / se, 2)  # 0.074: the t test guards the degenerate bootstrap
    assert p_boot < 0.01 and sp.loc["jx", "p_value"] == pytest.approx(max(p_boot, p_t))
    # the interaction, (gap_x(x) - gap_x(y)) - (gap_y(x) - gap_y(y)), per query 0.4, 0.3, 0.2
    (row,) = result["interaction"].itertuples(index=False)
    assert (row.judge_a, row.family_a, row.judge_b, row.family_b) == ("jx", "x", "jy", "y")
    assert row.interaction == pytest.approx(0.3)
    # with two families it is the sum of the two self-preferences, query by query
    assert row.interaction == pytest.approx(sp.loc["jx", "self_preference"] + sp.loc["jy", "self_preference"])
    gaps = result["gaps"].set_index(["judge_family", "ranker_family"])["mean_gap"]
    assert gaps[("x", "x")] == pytest.approx(0.2) and gaps[("x", "oracle")] == pytest.approx(-0.1)
    assert gaps[("y", "y")] == pytest.approx(0.2) and len(gaps) == 6
    lines = self_preference.findings(result, _hand_made()[2])
    # 3 queries: the t test's p 0.074 (Holm over 2: 0.148) keeps the verdict at no evidence
    assert lines[0].startswith("d / jx (family x): no evidence that it favours its own family (+0.200 [")
    assert sp.loc["jx", "verdict"] == "no evidence"


def test_holm_adjusts_the_self_preference_sentences():
    got = holm(pd.Series([0.01, 0.04, 0.03, np.nan]).to_numpy(float))  # the one Holm, as the section calls it
    # by hand: sorted 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 -> 0.06 (monotone); nan stays out
    np.testing.assert_allclose(got[:3], [0.03, 0.06, 0.06])
    assert np.isnan(got[3])
    row = pd.Series(
        {
            "dataset": "d",
            "judge": "j",
            "judge_family": "x",
            "self_preference": 0.1,
            "lo": 0.02,
            "hi": 0.18,
            "p_value": 0.03,
            "p_holm": 0.06,
        }
    )
    assert "not significant after Holm's adjustment at alpha 0.05" in self_preference.finding(row, 3)
    assert " favours its own family's rankers by " in self_preference.finding(row.replace(0.06, 0.03), 3)


def test_without_a_shared_family_one_line_says_so():
    per_query, t1, jobs, refs = _hand_made()
    jobs = jobs.assign(judge_family=jobs["judge_family"].map({"x": "gemini", "y": "gpt"}))
    result = self_preference.analyse(per_query, t1, jobs, refs, Resampling(50))
    assert result["self_preference"].empty and result["interaction"].empty
    (line,) = self_preference.findings(result, jobs)
    assert line.startswith(
        "No judge shares a family with a ranker here (judges: jx (gemini), jy (gpt); ranker families: "
    )


def test_guarded_bootstrap_t_against_a_plain_loop():
    rng = np.random.default_rng(7)
    d = rng.gamma(2.0, 1.0, 20) - 1.5
    d[3] = np.nan  # left out of every mean
    idx = rng.integers(0, 20, size=(300, 20))
    lo, hi, p = GuardedBootstrapT()(d, idx)
    ok = d[~np.isnan(d)]
    mean, se = ok.mean(), ok.std(ddof=1) / np.sqrt(len(ok))
    ts = []
    for row in idx:  # one resample at a time, nan queries dropped
        x = d[row][~np.isnan(d[row])]
        ts.append(abs(x.mean() - mean) / (x.std(ddof=1) / np.sqrt(len(x))))
    ts = np.array(ts)
    c, half = np.quantile(ts, 0.95), scipy_stats.t.ppf(0.975, len(ok) - 1) * se
    assert (lo, hi) == pytest.approx((mean - max(c * se, half), mean + max(c * se, half)))
    p_t = scipy_stats.ttest_1samp(ok, 0.0).pvalue
    assert p == pytest.approx(max((1 + (ts >= abs(mean) / se).sum()) / 301, p_t))
    assert np.isnan(GuardedBootstrapT()(np.array([np.nan, 1.0]), idx[:, :2] % 2)[0])


def test_order_statistics_known_answers():
    # consistent: (A, B), (B, A); position-bound: (A, A), (B, B); a failed answer: left out, counted
    stats = order_statistics([("A", "B"), ("B", "A"), ("A", "A"), ("B", "B"), ("A", None)])
    assert stats == {"prp_pairs": 4.0, "prp_failed_pairs": 1.0, "prp_order_consistency": 0.5, "prp_first_position": 0.5}
    stats = order_statistics([("A", "A")] * 3 + [("A", "B")])  # first = consistency / 2 + share answered A twice
    assert stats["prp_order_consistency"] == 0.25 and stats["prp_first_position"] == pytest.approx(0.25 / 2 + 0.75)
    jobs = pd.DataFrame(
        {
            "dataset": "toy",
            "system": ["PRP-X", "PRP-X", "BM25"],
            "ranker_family": ["x", "x", "lexical"],
            "start_time": [1, 2, 3],
            "prp_pairs": [10.0, 10.0, np.nan],
            "prp_order_consistency": [0.3, 0.25, np.nan],
            "prp_first_position": [0.8, 0.875, np.nan],
        }
    )
    (row,) = order_bias.order_table(jobs).itertuples(index=False)
    assert (row.system, row.pairs, row.order_consistency, row.first_position) == ("PRP-X", 10, 0.25, 0.875)
    assert row.reading.startswith("flips 75% of its verdicts when the two passages swap places (more than the 12.9% of")
    assert row.reading.endswith("the first passage in 88% of answers")


# --------------------------------------------------------------------------- the planted effect, recovered

PLANTED = {"jA": "A", "jB": "B"}  # each judge's prior is its own family's: the effect the weights plant


def _interaction(tag: str, priors: dict[str, str], reported: dict[str, str] | None = None, resamples: int = 1000, **kw):
    result = self_preference.analyse(*grid(tag, priors, reported, **kw), Resampling(resamples, seed=0))
    return result, result["interaction"].iloc[0]


def test_a_planted_self_preference_is_recovered():
    """Two simulated families, a judge of each and two rankers of each (the pipeline's nDCG): the interaction's
    interval excludes 0, is positive, and covers the large-sample value (the mean of the all-query interaction
    over 12 independent draws of every prior and noise; one ranker per family there, which leaves the expected
    value unchanged: the family mean of exchangeable rankers has the expectation of one)."""
    result, row = _interaction("recover", PLANTED, rankers_per_family=2, pipeline=True)
    truth_draws = [
        _interaction(f"truth{s}", PLANTED, resamples=0, rankers_per_family=1)[1].interaction for s in range(12)
    ]
    truth, se = np.mean(truth_draws), np.std(truth_draws, ddof=1) / np.sqrt(len(truth_draws))
    print(
        f"\nplanted: interaction {row.interaction:+.4f} [{row.lo:+.4f}, {row.hi:+.4f}] p={row.p_value:.4g}; "
        f"large-sample {truth:+.4f} (se {se:.4f})"
    )
    assert row.lo > 0 and row.interaction > 0 and row.p_value < 0.01
    assert row.lo <= truth <= row.hi and se < 0.25 * (row.hi - row.lo)
    sp = result["self_preference"].set_index("judge")
    assert (sp["lo"] > 0).all() and sp.loc["jA", "own_systems"] == "SimA0, SimA1"
    assert row.interaction == pytest.approx(sp["self_preference"].sum())  # two families: the sum, query by query
    # the same cells through the plain-Python nDCG give the same frame (what the many-seed runs use)
    fast = self_preference.analyse(*grid("recover", PLANTED, rankers_per_family=2), Resampling(1000, seed=0))
    assert fast["interaction"].iloc[0].interaction == pytest.approx(row.interaction, abs=1e-12)


def test_no_planted_effect_the_interval_covers_zero():
    """Judges built on families C and D, reported as A and B: unrelated to either ranker family. Over 20 seeds
    (every prior and noise drawn anew) the 95 % interval of the interaction covers 0 in at least 18."""
    covered, rows = 0, []
    for s in range(20):
        _, row = _interaction(f"null{s}", {"jA": "C", "jB": "D"}, {"jA": "A", "jB": "B"}, rankers_per_family=1)
        covered += bool(row.lo <= 0 <= row.hi)
        rows.append(f"{row.interaction:+.3f} [{row.lo:+.3f}, {row.hi:+.3f}]")
    print(f"\nnull: the interval covers 0 in {covered} of 20 seeds: " + "; ".join(rows))
    assert covered >= 18
