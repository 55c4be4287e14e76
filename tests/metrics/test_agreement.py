"""Known answers for the agreement and ordering statistics, each computed by hand in the comments."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from judgebench.metrics import AGREEMENT_COLUMNS, ORDERING_COLUMNS, label_agreement, tau_ap
from judgebench.metrics.correlation import KendallTau, SpearmanRho, TauAP

# six pairs of one query, human vs judge label
HUMAN = [0, 0, 1, 2, 3, 3]
JUDGE = [0, 1, 1, 3, 3, 2]


def _qrels(labels, query="q", prefix="d"):
    return pd.DataFrame(
        {"query_id": query, "doc_id": [f"{prefix}{i}" for i in range(len(labels))], "relevance": labels}
    )


@pytest.fixture(scope="module")
def six():
    return label_agreement(_qrels(JUDGE), _qrels(HUMAN))


def test_column_names_are_the_issue_names():
    assert AGREEMENT_COLUMNS == [
        "kappa_graded",
        "kappa_linear",
        "kappa_quadratic",
        "kappa_ge1",
        "kappa_ge2",
        "kappa_ge3",
        "kappa_relevant",
        "alpha_ordinal",
        "alpha_interval",
        "kappa_query_median",
        "kappa_query_iqr",
        "judge_share_0",
        "judge_share_1",
        "judge_share_2",
        "judge_share_3",
        "human_share_0",
        "human_share_1",
        "human_share_2",
        "human_share_3",
    ]
    assert ORDERING_COLUMNS == ["tau_all", "tau_ap", "rho_all", "tau_top5", "tau_top10"]


def test_cohen_kappa_unweighted_and_weighted(six):
    # marginals: human h = [2, 1, 1, 2] (levels 0..3), judge j = [1, 2, 1, 2], n = 6
    # unweighted: p_o = 3/6; p_e = (2*1 + 1*2 + 1*1 + 2*2) / 36 = 9/36 -> (1/2 - 1/4) / (3/4) = 1/3
    assert six["kappa_graded"] == pytest.approx(1 / 3, abs=1e-12)
    # weighted: kappa = 1 - sum(w * O) / sum(w * E), E_ik = h_i * j_k / n.
    # the 3 disagreements (0,1) (2,3) (3,2) are all at distance 1: sum(w O) = 3 for both weightings.
    # linear, sum_i h_i * sum_k j_k |i-k|: i=0: 2*(0+2+2+6)=20, i=1: 1*(1+0+1+4)=6, i=2: 1*(2+2+0+2)=6,
    #   i=3: 2*(3+4+1+0)=16 -> 48, /6 = 8 -> 1 - 3/8
    assert six["kappa_linear"] == pytest.approx(5 / 8, abs=1e-12)
    # quadratic (i-k)^2: i=0: 2*(0+2+4+18)=48, i=1: 1*(1+0+1+8)=10, i=2: 1*(4+2+0+2)=8, i=3: 2*(9+8+1+0)=36
    #   -> 102, /6 = 17 -> 1 - 3/17
    assert six["kappa_quadratic"] == pytest.approx(14 / 17, abs=1e-12)


def test_kappa_at_each_binary_cut(six):
    # >=1: human 001111, judge 011111: p_o = 5/6, p_e = (2*1 + 4*5)/36 = 22/36 -> (8/36) / (14/36) = 4/7
    assert six["kappa_ge1"] == pytest.approx(4 / 7, abs=1e-12)
    # >=2: human 000111, judge 000111: identical -> 1
    assert six["kappa_ge2"] == pytest.approx(1.0) and "kappa_binary" not in six
    # >=3: human 000011, judge 000110: p_o = 4/6, p_e = (4*4 + 2*2)/36 = 20/36 -> (4/36) / (16/36) = 1/4
    assert six["kappa_ge3"] == pytest.approx(1 / 4, abs=1e-12)


def test_krippendorff_alpha_ordinal_and_interval(six):
    # pooled values (12): n_0 = 3, n_1 = 3, n_2 = 2, n_3 = 4, n = 12. alpha = 1 - (n-1) sum(o d2) / sum(n_c n_k d2)
    # each disagreeing unit (0,1) (2,3) (3,2) puts 1 in o[a,b] and 1 in o[b,a].
    # interval d2 = (c-k)^2: sum(o d2) = 3 units * 2 * 1 = 6; sum over c<k of n_c n_k (c-k)^2:
    #   (0,1) 3*3*1 = 9, (0,2) 3*2*4 = 24, (0,3) 3*4*9 = 108, (1,2) 3*2*1 = 6, (1,3) 3*4*4 = 48, (2,3) 2*4*1 = 8
    #   = 203, both orders 406 -> 1 - 11*6/406 = 170/203
    assert six["alpha_interval"] == pytest.approx(170 / 203, abs=1e-12)
    # ordinal d_ck = n_c + ... + n_k - (n_c + n_k)/2: (0,1) 3, (0,2) 5.5, (0,3) 8.5, (1,2) 2.5, (1,3) 5.5, (2,3) 3
    #   sum(o d2) = 2*9 (0,1) + 2*9 (2,3) + 2*9 (3,2) = 54
    #   sum n_c n_k d2 (c<k) = 9*9 + 6*30.25 + 12*72.25 + 6*6.25 + 12*30.25 + 8*9 = 1602, both orders 3204
    #   -> 1 - 11*54/3204 = 145/178
    assert six["alpha_ordinal"] == pytest.approx(145 / 178, abs=1e-12)


def test_label_distributions_side_by_side(six):
    assert [six[f"judge_share_{k}"] for k in range(4)] == pytest.approx([1 / 6, 2 / 6, 1 / 6, 2 / 6])
    assert [six[f"human_share_{k}"] for k in range(4)] == pytest.approx([2 / 6, 1 / 6, 1 / 6, 2 / 6])


def test_per_query_kappa_median_and_iqr():
    rows = [  # (query, human, judge)
        ("q1", [0, 1], [0, 1]),  # identical: kappa 1
        ("q2", [0, 1], [1, 0]),  # p_o = 0, p_e = (1*1 + 1*1)/4 = 1/2: kappa -1
        ("q3", [0, 0, 1, 1], [0, 0, 1, 0]),  # p_o = 3/4, p_e = (2*3 + 2*1)/16 = 1/2: kappa 1/2
        ("q4", [2, 2], [2, 2]),  # both raters one label: undefined, left out
    ]
    human = pd.concat([_qrels(h, q, q) for q, h, _ in rows], ignore_index=True)
    judge = pd.concat([_qrels(j, q, q) for q, _, j in rows], ignore_index=True)
    res = label_agreement(judge, human)
    # defined values -1, 1/2, 1: median 1/2; percentiles (linear): 25th at position 0.5 = -1 + 0.5*1.5 = -0.25,
    # 75th at position 1.5 = 0.5 + 0.5*0.5 = 0.75 -> IQR 1.0
    assert res["kappa_query_median"] == pytest.approx(0.5)
    assert res["kappa_query_iqr"] == pytest.approx(1.0)


def test_unlabelled_pairs_are_left_out_not_read_as_zero():
    # the judge did not label d5 (human 3): every statistic is that of the 5 shared pairs
    judge = _qrels(JUDGE).iloc[:5]
    res = label_agreement(judge, _qrels(HUMAN))
    assert res["n_pairs"] == 5 and res["n_missing"] == 1
    # shared: human 0 0 1 2 3, judge 0 1 1 3 3; human marginals [2,1,1,1], judge [1,2,0,2]
    # p_o = 3/5, p_e = (2*1 + 1*2 + 1*0 + 1*2)/25 = 6/25 -> (15/25 - 6/25) / (19/25) = 9/19
    assert res["kappa_graded"] == pytest.approx(9 / 19, abs=1e-12)
    assert res["human_share_3"] == pytest.approx(1 / 5) and res["judge_share_2"] == 0


def test_undefined_statistics_are_nan():
    res = label_agreement(_qrels([1, 1, 1]), _qrels([1, 1, 1]))  # a single label used by both raters
    for name in ("kappa_graded", "kappa_linear", "kappa_ge1", "alpha_ordinal", "alpha_interval", "kappa_query_median"):
        assert math.isnan(res[name]), name
    assert res["judge_share_1"] == 1.0
    res = label_agreement(_qrels([1]), _qrels([2], prefix="x"))  # no shared pair at all
    assert math.isnan(res["kappa_graded"]) and math.isnan(res["alpha_ordinal"]) and math.isnan(res["judge_share_0"])


# --------------------------------------------------------------------------- orderings

REF = {"A": 4.0, "B": 3.0, "C": 2.0, "D": 1.0}  # human: A > B > C > D


def test_tau_ap_worked_examples_from_the_definition():
    # tau_AP = 2/(N-1) * sum_{i=2..N} C(i)/(i-1) - 1, C(i) = systems above rank i (judge order) that humans
    # also put above the system at rank i.
    # judge B A C D (swap at the top): i=2 A: B above A for humans? no -> 0/1; i=3 C: B, A both -> 2/2;
    # i=4 D: 3/3 -> 2/3 * (0 + 1 + 1) - 1 = 1/3  (Kendall's tau: (5-1)/6 = 2/3)
    assert tau_ap({"B": 4, "A": 3, "C": 2, "D": 1}, REF) == pytest.approx(1 / 3, abs=1e-12)
    # judge A B D C (the same swap at the bottom): 1/1 + 2/2 + 2/3 -> 2/3 * 8/3 - 1 = 7/9: top-weighted
    assert tau_ap({"A": 4, "B": 3, "D": 2, "C": 1}, REF) == pytest.approx(7 / 9, abs=1e-12)
    assert tau_ap(dict(REF), REF) == pytest.approx(1.0)
    assert tau_ap({"D": 4, "C": 3, "B": 2, "A": 1}, REF) == pytest.approx(-1.0)
    # asymmetric: estimate A C B, reference B A C: i=2 C: A above C? yes 1/1; i=3 B: A, C above B? neither
    # -> 0/2 -> 2/2 * 1 - 1 = 0
    assert tau_ap({"A": 3, "C": 2, "B": 1}, {"B": 3, "A": 2, "C": 1}) == pytest.approx(0.0, abs=1e-12)
    # reversed roles: estimate B A C, reference A C B: i=2 A: B above A? no 0; i=3 C: B above C? no, A yes -> 1/2
    # -> 2/2 * 1/2 - 1 = -1/2
    assert tau_ap({"B": 3, "A": 2, "C": 1}, {"A": 3, "C": 2, "B": 1}) == pytest.approx(-0.5, abs=1e-12)


def test_tau_ap_ties():
    ref = {"A": 3.0, "B": 2.0, "C": 1.0}
    # judge ties A and B: the mean over the two orders. A B C: 1/1 + 2/2 -> 2/2*2 - 1 = 1; B A C: 0/1 + 2/2 -> 0.
    assert tau_ap({"A": 2, "B": 2, "C": 1}, ref) == pytest.approx(0.5, abs=1e-12)
    # humans tie A and B, judge A B C: i=2 B: A above B counts 1/2; i=3: 2/2 -> 2/2 * 1.5 - 1 = 0.5
    assert tau_ap({"A": 3, "B": 2, "C": 1}, {"A": 1.0, "B": 1.0, "C": 0.0}) == pytest.approx(0.5, abs=1e-12)
    # a judge that ties everything: 0
    assert tau_ap({"A": 1, "B": 1, "C": 1}, ref) == pytest.approx(0.0, abs=1e-12)
    # fewer than two common systems: undefined; nan scores are not systems
    assert math.isnan(tau_ap({"A": 1, "B": math.nan}, ref)) and math.isnan(TauAP("tau_ap")({"A": 1}, ref))


def test_spearman_rho_by_hand():
    judge = {"s0": 0.9, "s1": 0.7, "s2": 0.8, "s3": 0.6}
    human = {"s0": 0.9, "s1": 0.8, "s2": 0.7, "s3": 0.6}
    # ranks judge 1 3 2 4, human 1 2 3 4: d = 0 1 -1 0, sum d^2 = 2 -> 1 - 6*2 / (4 * (16 - 1)) = 0.8
    assert SpearmanRho("rho_all")(judge, human) == pytest.approx(0.8, abs=1e-12)
    assert math.isnan(SpearmanRho("rho_all")({"s0": 1.0}, human))


def test_tau_over_the_top5_human_systems():
    human = {f"s{i}": 1.0 - 0.1 * i for i in range(7)}  # s0 best ... s6 worst
    judge = dict(human)
    judge["s1"], judge["s2"] = human["s2"], human["s1"]  # one swap inside the top 5
    judge["s5"], judge["s6"] = 2.0, 1.5  # the two worst systems on top for the judge
    # top 5 by human score: s0..s4, 10 pairs, (s1, s2) discordant -> (9 - 1) / 10
    assert KendallTau("tau_top5", top=5)(judge, human) == pytest.approx(0.8, abs=1e-12)
    # all 7: 21 pairs; discordant: (s1,s2), and s5 and s6 each against s0..s4 (10) = 11; concordant: the other
    # 9 pairs of s0..s4 and (s5,s6) = 10 -> (10 - 11) / 21
    assert KendallTau("tau_all")(judge, human) == pytest.approx((10 - 11) / 21, abs=1e-12)
    # fewer systems than the cut: undefined rather than silently tau_all
    assert math.isnan(KendallTau("tau_top5", top=5)({"a": 1, "b": 2}, {"a": 1, "b": 2}))


def test_tau_over_the_top10_human_systems_against_scipy():
    """tau_top10 is scipy's tau-b on the 10 best systems under humans, whatever the judge does below them; 9 systems:
    no top 10 (nan, the rule Table 2 states), not tau_all."""
    from scipy.stats import kendalltau

    rng = np.random.default_rng(3)
    human = {f"s{i}": float(v) for i, v in enumerate(rng.permutation(14))}
    judge = {s: v + rng.normal(0, 3) for s, v in human.items()}
    top = sorted(human, key=lambda s: -human[s])[:10]
    expected = kendalltau([judge[s] for s in top], [human[s] for s in top]).statistic
    assert KendallTau("tau_top10", top=10)(judge, human) == pytest.approx(expected, abs=1e-12)
    assert KendallTau("tau_top10", top=10)(judge, human) != pytest.approx(KendallTau("tau_all")(judge, human))
    nine = {s: human[s] for s in top[:9]}
    assert math.isnan(KendallTau("tau_top10", top=10)(nine, nine))
