"""Correcting a judge with k human-labelled queries: known answers for every estimator, the coverage of
the PPI and cross-fitted PPI++ intervals on synthetic data, and the experiment end to end through run.py
and compare."""

from __future__ import annotations

import itertools
import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import artifact_checks
from cli_runner import run, warm_store
from judgebench.compare.analyses import bias
from judgebench.compare.base.reference import References
from judgebench.compare.budget import experiment as calibration
from judgebench.compare.budget.corrections import LabelLevel, Linear, expected_gains, ols, residual_estimate
from judgebench.compare.report import Options
from judgebench.compare.sections import calibration as calibration_section
from judgebench.data.datasets import load_toy
from judgebench.evaluation import class_weights, evaluate, ndcg_from_class_gains
from judgebench.metrics.ppi import PPI, HumanOnly, JudgeOnly, PPIPlusPlus
from table_refs import refs_of

# --------------------------------------------------------------------------- PPI and PPI++ by hand


def _mask(n: int, sampled: list[int]) -> np.ndarray:
    m = np.zeros((1, n), dtype=bool)
    m[0, sampled] = True
    return m


def test_small_case_by_hand():
    # n = 5 queries, the first 3 sampled. y: human (unsampled values never read), f: judge.
    y = np.array([[0.7, 0.2, 0.3, 9.0, 9.0]])
    f = np.array([[0.5, 0.4, 0.3, 0.8, 0.5]])
    mask = _mask(5, [0, 1, 2])
    # mean f over all 5 = 2.5 / 5 = 0.5; fpc = 1 - 3/5 = 0.4
    # PPI: rectifiers y - f = 0.2, -0.2, 0.0 -> mean 0 -> 0.5; s^2 = (0.04 + 0.04 + 0) / 2 = 0.04; var = 0.4 * 0.04 / 3
    e = PPI()(y, f, mask)
    assert e.point[0, 0] == pytest.approx(0.5) and e.var[0, 0] == pytest.approx(0.4 * 0.04 / 3)
    # human only: mean 0.4; s^2 = (0.09 + 0.04 + 0.01) / 2 = 0.07; var = 0.4 * 0.07 / 3; var_query = 0.07 / 5
    h = HumanOnly()(y, f, mask)
    assert h.point[0, 0] == pytest.approx(0.4) and h.var[0, 0] == pytest.approx(0.4 * 0.07 / 3)
    assert h.var_query[0, 0] == pytest.approx(0.07 / 5)
    # in-sample PPI++: cov(y, f) = (0.3*0.1 + (-0.2)*0 + (-0.1)*(-0.1)) / 2 = 0.02; var(f) = (0.01 + 0 + 0.01) / 2
    # = 0.01 -> lambda 2 (unclipped); point = 2 * 0.5 + 0.4 - 2 * 0.4 = 0.6; y - 2f = -0.3, -0.6, -0.3 -> s^2 = 0.03
    pp = calibration.ESTIMATORS["ppi++_insample"]
    assert np.allclose(pp.lam(y, f, mask)[0, 0, :3], 2.0) and np.isnan(pp.lam(y, f, mask)[0, 0, 3:]).all()
    e = pp(y, f, mask)
    assert e.point[0, 0] == pytest.approx(0.6) and e.var[0, 0] == pytest.approx(0.4 * 0.03 / 3)
    # judge only: mean 0.5, var = s_f^2 / n over all five; s_f^2 = (0 + 0.01 + 0.04 + 0.09 + 0) / 4 = 0.035
    j = JudgeOnly()(y, f, mask)
    assert j.point[0, 0] == pytest.approx(0.5) and j.var[0, 0] == pytest.approx(0.035 / 5) and j.var_query[0, 0] == 0


def test_judge_equal_to_human_gives_lambda_one_and_no_rectifier():
    rng = np.random.default_rng(3)
    y = rng.random((4, 30))
    mask = calibration.samples(30, 8, 50, seed=0)
    for pp in (PPIPlusPlus(), calibration.ESTIMATORS["ppi++_insample"]):
        lam = pp.lam(y, y, mask)
        assert np.allclose(lam[np.broadcast_to(mask[:, None, :], lam.shape)], 1.0)
    for est in (PPI(), PPIPlusPlus(), calibration.ESTIMATORS["ppi++_insample"], PPIPlusPlus(folds=3)):
        e = est(y, y, mask)
        assert np.allclose(e.point, y.mean(axis=1)) and np.allclose(e.var, 0.0, atol=1e-15)


def test_uncorrelated_judge_reduces_in_sample_ppi_plus_plus_to_human_only():
    # on the 4 sampled queries cov(y, f) = 0 exactly: y 1,0,1,0 against f 1,1,0,0
    y = np.array([[1.0, 0.0, 1.0, 0.0, 5.0, 5.0]])
    f = np.array([[1.0, 1.0, 0.0, 0.0, 0.5, 0.9]])
    mask = _mask(6, [0, 1, 2, 3])
    pp = calibration.ESTIMATORS["ppi++_insample"]
    e = pp(y, f, mask)
    assert np.allclose(pp.lam(y, f, mask)[0, 0, :4], 0.0)
    # human only: mean 0.5; s^2 = 4 * 0.25 / 3 = 1/3; fpc 1 - 4/6 = 1/3; var = (1/3) * (1/3) / 4 = 1/36
    assert e.point[0, 0] == pytest.approx(0.5) and e.var[0, 0] == pytest.approx(1 / 36)


def test_cross_fitted_ppi_plus_plus_by_hand():
    # n = 5, queries 0-2 sampled. Leave one out: lambda_i is the slope through the other two sampled points.
    y = np.array([[0.6, 0.2, 0.4, 9.0, 9.0]])
    f = np.array([[0.5, 0.3, 0.2, 0.6, 0.4]])
    mask = _mask(5, [0, 1, 2])
    # without 0: (0.2 - 0.4) / (0.3 - 0.2) = -2 -> clipped to 0; without 1: 0.2 / 0.3 = 2/3; without 2: 0.4 / 0.2 =
    # 2 -> 1
    assert np.allclose(PPIPlusPlus().lam(y, f, mask)[0, 0, :3], [0.0, 2 / 3, 1.0])
    # the rest (queries 3, 4) has mean f 0.5; its mean is estimated as mean_i [y_i + lambda_i (0.5 - f_i)]
    # = (0.6 + 0 + 0.2 + (2/3) 0.2 + 0.4 + 0.3) / 3 = 49/90; estimate (3 * 0.4 + 2 * 49/90) / 5 = 103/225
    e = PPIPlusPlus()(y, f, mask)
    assert e.point[0, 0] == pytest.approx(103 / 225)
    # residuals y_i - lambda_i (f_i - 1/3): 0.6, 0.2 + 2/90, 0.4 + 2/15 = (162, 60, 144) / 270, mean 122/270
    # -> s^2 = (40^2 + 62^2 + 22^2) / 2 / 270^2; var = (1 - 3/5) s^2 / 3
    assert e.var[0, 0] == pytest.approx(0.4 * (5928 / 2 / 270**2) / 3)
    assert e.var_query[0, 0] == pytest.approx(0.04 / 5)  # s_y^2 / n
    # unclipped: lambda -2, 2/3, 2 -> rest mean (0.6 + (0.2 + 0.4/3) + (0.4 + 0.6)) / 3 = 29/45;
    # estimate (1.2 + 2 * 29/45) / 5 = 112/225
    assert PPIPlusPlus(clip=False)(y, f, mask).point[0, 0] == pytest.approx(112 / 225)


def _cross_fit_by_loop(y, f, mask, folds, clip):
    """The estimator as its docstring defines it, one sample, one system and one fold at a time."""
    R, (m, n) = mask.shape[0], y.shape
    point, var = np.empty((R, m)), np.empty((R, m))
    for r in range(R):
        s = np.flatnonzero(mask[r])
        rest = np.flatnonzero(~mask[r])
        k = len(s)
        fold = np.arange(k) if folds is None else np.arange(k) % folds
        for j in range(m):
            lam = np.empty(k)
            for g in np.unique(fold):
                fit = s if folds == 1 else s[fold != g]
                c = np.cov(y[j, fit], f[j, fit])
                lam[fold == g] = c[0, 1] / c[1, 1] if c[1, 1] > 1e-12 else 1.0
            lam = np.clip(lam, 0, 1) if clip else lam
            rest_mean = sum(
                (fold == g).mean()
                * (
                    lam[fold == g][0] * f[j, rest].mean()
                    + (y[j, s[fold == g]] - lam[fold == g] * f[j, s[fold == g]]).mean()
                )
                for g in np.unique(fold)
            )
            point[r, j] = (y[j, s].sum() + len(rest) * rest_mean) / n
            e = y[j, s] - lam * (f[j, s] - f[j, s].mean())
            var[r, j] = (1 - k / n) * e.var(ddof=1) / k
    return point, var


@pytest.mark.parametrize("folds", [None, 1, 2, 3])
@pytest.mark.parametrize("clip", [True, False])
def test_cross_fit_equals_a_loop_over_samples_and_folds(folds, clip):
    rng = np.random.default_rng(8)
    y = rng.random((3, 15))
    f = np.stack(
        [0.8 * y[0] + 0.1 * rng.random(15), 0.2 * y[1] + 0.5 * rng.random(15), 1 - y[2] + 0.1 * rng.random(15)]
    )
    mask = np.vstack([calibration.samples(15, 5, 6, seed=1), calibration.samples(15, 8, 6, seed=1)])  # k differs by row
    e = PPIPlusPlus(folds=folds, clip=clip)(y, f, mask)
    point, var = _cross_fit_by_loop(y, f, mask, folds, clip)
    assert np.allclose(e.point, point, atol=1e-12) and np.allclose(e.var, var, atol=1e-12)
    assert np.allclose(e.var_query, np.stack([y[:, m].var(axis=1, ddof=1) for m in mask]) / 15)


def test_lambda_clipped_at_zero_and_at_one():
    rng = np.random.default_rng(5)
    y = rng.random((2, 20))
    mask = calibration.samples(20, 6, 30, seed=4)
    k, fpc = 6, 1 - 6 / 20
    ys = np.stack([y[:, m] for m in mask])  # (R, m, k) the sampled human values
    # a judge that ranks queries backwards: every lambda fitted is negative, clipped to 0 -> the human-only estimate
    f = 1.0 - y
    assert np.nanmax(PPIPlusPlus(clip=False).lam(y, f, mask)) < 0
    e = PPIPlusPlus()(y, f, mask)
    assert np.allclose(e.point, ys.mean(axis=2)) and np.allclose(e.var, fpc * ys.var(axis=2, ddof=1) / k)
    # a judge at half the human scale: every lambda is 2, clipped to 1 -> PPI, judge mean + mean rectifier
    f = 0.5 * y + 0.1
    assert np.allclose(PPIPlusPlus(clip=False).lam(y, f, mask)[np.broadcast_to(mask[:, None], (30, 2, 20))], 2.0)
    e = PPIPlusPlus()(y, f, mask)
    rect = ys - np.stack([f[:, m] for m in mask])
    assert np.allclose(e.point, f.mean(axis=1) + rect.mean(axis=2))
    assert np.allclose(e.var, fpc * rect.var(axis=2, ddof=1) / k)


def test_every_query_labelled_gives_the_human_mean_exactly():
    rng = np.random.default_rng(6)
    y, f = rng.random((4, 12)), rng.random((4, 12))  # lambda differs from fold to fold
    for est in (PPIPlusPlus(), PPIPlusPlus(folds=2), PPIPlusPlus(clip=False)):
        lam = est.lam(y, f, np.ones((1, 12), dtype=bool))
        assert np.ptp(lam, axis=2).max() > 0.1
        e = est(y, f, np.ones((1, 12), dtype=bool))
        assert np.allclose(e.point, y.mean(axis=1), atol=1e-14) and np.allclose(e.var, 0.0)


def test_leave_one_out_is_design_unbiased_over_every_sample():
    # all C(8, 3) = 56 samples of a population of 8: the mean of the estimates is the population mean exactly,
    # clipped or not; the in-sample plug-in is not (its lambda is fitted on the queries it corrects)
    rng = np.random.default_rng(9)
    y = rng.random((3, 8))
    f = 0.6 * y + 0.4 * rng.random((3, 8))
    mask = np.zeros((56, 8), dtype=bool)
    for r, s in enumerate(itertools.combinations(range(8), 3)):
        mask[r, list(s)] = True
    for est in (PPIPlusPlus(), PPIPlusPlus(clip=False)):
        assert np.allclose(est(y, f, mask).point.mean(axis=0), y.mean(axis=1), atol=1e-14)
    bias = calibration.ESTIMATORS["ppi++_insample"](y, f, mask).point.mean(axis=0) - y.mean(axis=1)
    assert np.abs(bias).max() > 1e-3


def test_folds_must_be_a_whole_number():
    with pytest.raises(ValueError, match="folds=0"):
        PPIPlusPlus(folds=0)


def test_ppi_interval_covers_at_nominal_rate_on_synthetic_data():
    # a fixed population of 400 queries, 3 systems, a biased and noisy judge; the truth is the population mean
    rng = np.random.default_rng(11)
    n = 400
    y = np.clip(rng.beta(2, 2, (3, n)), 0, 1)
    f = 0.7 * y + 0.2 + rng.normal(0, 0.1, (3, n))
    for k in (20, 50):
        mask = calibration.samples(n, k, 4000, seed=5)
        e = PPI()(y, f, mask)
        half = stats.t.ppf(0.975, k - 1) * np.sqrt(e.var)
        coverage = (np.abs(e.point - y.mean(axis=1)) <= half).mean()
        assert abs(coverage - 0.95) <= 0.015, (k, coverage)
        # and the design variance is the spread of the estimates over samples
        assert np.sqrt(e.var.mean(axis=0)) == pytest.approx(e.point.std(axis=0), rel=0.1)


# --------------------------------------------------------------------------- the model-based corrections


def test_linear_calibration_recovers_a_per_type_linear_truth():
    rng = np.random.default_rng(0)
    f = rng.random((5, 40))
    types = np.array(["oracle", "oracle", "oracle", "llm", "lexical"])
    a, b = {"oracle": 0.1, "llm": -0.3, "lexical": 0.05}, {"oracle": 0.8, "llm": 1.2, "lexical": 0.5}
    y = np.stack([a[t] + b[t] * f[s] for s, t in enumerate(types)])
    mask = calibration.samples(40, 6, 30, seed=2)
    pred = Linear().predict(f, y, types, mask)
    assert np.allclose(pred, y[None])
    e = residual_estimate(y, pred, mask)
    assert np.allclose(e.point, y.mean(axis=1)) and np.allclose(e.var, 0.0, atol=1e-20)


def test_ols_and_apply_to_the_rest_against_scipy():
    rng = np.random.default_rng(1)
    f = rng.random((2, 12))
    y = 0.2 + 0.6 * f + rng.normal(0, 0.05, f.shape)
    mask = _mask(12, [0, 3, 4, 7, 9])
    a, b = ols(f, y, mask)
    fit = stats.linregress(f[:, mask[0]].ravel(), y[:, mask[0]].ravel())  # pooled over both systems
    assert a[0] == pytest.approx(fit.intercept) and b[0] == pytest.approx(fit.slope)
    pred = Linear().predict(f, y, np.array(["oracle", "oracle"]), mask)[0]
    e = residual_estimate(y, pred[None], mask)
    for s in range(2):  # human values where sampled, fitted values elsewhere, averaged over all 12
        by_hand = (y[s, mask[0]].sum() + (fit.intercept + fit.slope * f[s, ~mask[0]]).sum()) / 12
        assert e.point[0, s] == pytest.approx(by_hand)


def test_expected_gains_by_hand():
    confusion = np.zeros((2, 4, 4))
    confusion[0, 1, 0] = 2  # query 0: judge 1 / human 0 twice, judge 1 / human 2 once
    confusion[0, 1, 2] = 1
    confusion[1, 3, 3] = 1  # query 1: judge 3 / human 3; judge 3 / human 1 (query 1 only)
    confusion[1, 3, 1] = 1
    g = expected_gains(confusion, np.array([[True, False], [True, True]]))
    assert np.allclose(g[0], [0, 2 / 3, 2, 3])  # labels 0, 2, 3 unseen on query 0: kept as they are
    assert np.allclose(g[1], [0, 2 / 3, 2, 2])


def test_ndcg_from_class_gains_by_hand():
    # one query; run order d1..d5, d4 unjudged; judge classes d1:3 d2:0 d3:1 d5:2, plus d6 (class 3) not retrieved
    run = pd.DataFrame({"query_id": "q", "doc_id": ["d1", "d2", "d3", "d4", "d5"], "rank": [1, 2, 3, 4, 5]})
    qrels = pd.DataFrame({"query_id": "q", "doc_id": ["d1", "d2", "d3", "d5", "d6"], "relevance": [3, 0, 1, 2, 3]})
    w, c = class_weights(run, qrels, ["q"])
    g = np.array([0.0, 0.5, 1.5, 2.5])
    # judged ranks: d1 1, d2 2, d3 3, d5 4 -> DCG = 2.5/log2(2) + 0 + 0.5/log2(4) + 1.5/log2(5)
    dcg = 2.5 + 0.5 / 2 + 1.5 / math.log2(5)
    # ideal: 2.5, 2.5, 1.5, 0.5, 0 -> 2.5 + 2.5/log2(3) + 1.5/2 + 0.5/log2(5)
    ideal = 2.5 + 2.5 / math.log2(3) + 0.75 + 0.5 / math.log2(5)
    assert ndcg_from_class_gains(w, c, g)[0] == pytest.approx(dcg / ideal)
    # gains that do not grow with the class: ideal order 1.5 (class 2), 1.0 (class 0), 0.2 (class 1, 3 twice)
    g = np.array([1.0, 0.2, 1.5, 0.2])
    dcg = 0.2 + 1.0 / math.log2(3) + 0.2 / 2 + 1.5 / math.log2(5)
    ideal = 1.5 + 1.0 / math.log2(3) + 0.2 / 2 + 0.2 / math.log2(5) + 0.2 / math.log2(6)
    assert ndcg_from_class_gains(w, c, g)[0] == pytest.approx(dcg / ideal)


def test_class_gains_equal_the_engine_on_toy():
    toy = load_toy()
    queries = sorted(toy.qrels["query_id"].unique())
    rng = np.random.default_rng(4)
    run_ = toy.pool.copy()
    run_["rank"] = run_.groupby("query_id")["rank"].transform(lambda r: rng.permutation(r.to_numpy()))
    qrels = toy.qrels.sample(frac=0.8, random_state=1)
    w, c = class_weights(run_, qrels, queries)
    assert np.allclose(
        ndcg_from_class_gains(w, c, [0, 1, 2, 3]), evaluate(run_, {"v": qrels}, queries)["v"], atol=1e-12
    )
    g = np.array([0.25, 0.5, 2.75, 1.5])  # fractional gains through the engine as integers (nDCG is scale-free)
    scaled = qrels.assign(relevance=(g[qrels["relevance"]] * 4).astype(int))
    assert np.allclose(ndcg_from_class_gains(w, c, g), evaluate(run_, {"v": scaled}, queries)["v"], atol=1e-12)


def test_label_level_correction_undoes_a_relabelling():
    # the judge writes human label h as [2, 3, 0, 1][h]: P(human | judge) is a permutation, the corrected
    # gains are the human labels and the prediction is the human nDCG (computed by the engine)
    toy = load_toy()
    queries = sorted(toy.qrels["query_id"].unique())
    human = toy.qrels[["query_id", "doc_id", "relevance"]]
    judge = human.assign(relevance=np.array([2, 3, 0, 1])[human["relevance"]])
    runs = [
        toy.pool,
        toy.pool.assign(rank=toy.pool.groupby("query_id")["rank"].transform(lambda r: r.to_numpy()[::-1])),
    ]
    ws = [class_weights(r, judge, queries) for r in runs]
    confusion = np.zeros((len(queries), 4, 4))
    pos = {q: i for i, q in enumerate(queries)}
    np.add.at(
        confusion,
        (judge["query_id"].map(pos).to_numpy(), judge["relevance"].to_numpy(), human["relevance"].to_numpy()),
        1,
    )
    mask = calibration.samples(len(queries), 6, 10, seed=0)
    pred = LabelLevel().predict(np.stack([w for w, _ in ws]), ws[0][1], confusion, mask)
    truth = np.stack([evaluate(r, {"h": human}, queries)["h"].to_numpy() for r in runs])
    assert np.allclose(pred, truth[None], atol=1e-12)


# --------------------------------------------------------------------------- the experiment on hand-made cells


def test_inversion_matches_the_bias_table():
    rng = np.random.default_rng(7)
    types = np.array(["oracle"] * 4 + ["llm"] * 2 + ["lexical"])
    truth = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.45, 0.4])
    points = truth + rng.normal(0, 0.15, (300, 7))
    got = calibration.inverted(points, truth, types)
    assert 0 < got.mean() < 1
    systems = [f"s{i}" for i in range(7)]
    for r in range(0, 300, 7):  # bias.ranker_bias on the same numbers as a Table 1
        t1 = {"d": pd.DataFrame({"type": types, "human_labelset": truth, "est": points[r]}, index=systems)}
        assert bool(bias.ranker_bias(t1, refs_of(t1))["inverted"].iloc[0]) == got[r]


def test_samples_contract():
    m = calibration.samples(10, 4, 100, seed=3)
    assert m.shape == (100, 10) and (m.sum(axis=1) == 4).all()
    assert np.array_equal(m, calibration.samples(10, 4, 100, seed=3)) and not np.array_equal(
        m, calibration.samples(10, 4, 100, seed=4)
    )
    m = calibration.samples(10, 4, 4000, seed=3)
    # each query as likely as any other: per query (axis 0), 4000 draws at p = 0.4 have sd ~0.0077
    assert np.abs(m.mean(axis=0) - 0.4).max() < 0.04
    assert calibration.samples(10, 10, 100, seed=3).tolist() == [[True] * 10]


def _cell(y, f, types) -> calibration.Cell:
    n = y.shape[1]
    return calibration.Cell(
        "d",
        "j",
        [f"s{i}" for i in range(len(y))],
        np.array(types),
        [f"q{i:02d}" for i in range(n)],
        y,
        f,
        np.full(n, 10.0),
        np.zeros((n, 4, 4)),
    )


def test_experiment_rows_against_independent_computations():
    rng = np.random.default_rng(2)
    y = rng.random((5, 16))
    f = y + 0.3 * rng.random((5, 16))  # the judge overrates everyone by a different amount
    table = calibration.experiment(
        [_cell(y, f, ["oracle"] * 3 + ["llm", "lexical"])], ["human_only", "ppi"], ["4", "all"], 40, seed=0
    )
    row = table.set_index(["estimator", "k"])
    truth = y.mean(axis=1)
    j = row.loc[("judge_only", 4)]
    assert j["tau"] == pytest.approx(stats.kendalltau(f.mean(axis=1), truth)[0])
    assert j["mae"] == pytest.approx(np.abs(f.mean(axis=1) - truth).mean()) and j["labels_spent"] == 0
    # judge only's decisions are paired t-tests on the judge's values, the humans' on theirs (scipy)
    pairs = [(a, b) for a in range(5) for b in range(a + 1, 5)]

    def dec(v):
        return [
            0 if stats.ttest_rel(v[a], v[b]).pvalue >= 0.05 else np.sign(v[a].mean() - v[b].mean()) for a, b in pairs
        ]

    assert j["agree"] == pytest.approx(np.mean(np.array(dec(f)) == np.array(dec(y))))
    for name in ("human_only", "ppi"):  # every query labelled: the truth, exactly, and the humans' decisions
        a = row.loc[(name, 16)]
        assert a["samples"] == 1 and a["mae"] < 1e-12 and a["tau"] == 1 and a["coverage"] == 1 and a["agree"] == 1
        assert a["labels_spent"] == 160
    h = row.loc[("human_only", 4)]
    assert h["labels_spent"] == 40 and h["samples"] == 40


def test_cells_use_the_chosen_reference():
    rows = []
    for s, t in (("A", 0.5), ("B", 0.3)):
        for q in ("q1", "q2", "q3"):
            rows += [
                ("d", s, "human", "human", q, t),
                ("d", s, "human_labelset", "human_labelset", q, t + 0.1),
                ("d", s, "j", "judge", q, t + 0.2),
                ("d", s, "j", "human_judged", q, t + 0.05),
            ]
    pq = pd.DataFrame(rows, columns=["dataset", "system", "judge", "role", "query_id", "value"])
    t1 = {
        "d": pd.DataFrame(
            {"type": ["oracle", "llm"], "human": [0.5, 0.3], "human_labelset": [0.6, 0.4], "j": [0.7, 0.5]},
            index=["A", "B"],
        )
    }
    labels = pd.DataFrame(columns=["dataset", "judge", "query_id", "doc_id", "relevance", "human"])
    for ref, want in (("human", 0.5), ("human_labelset", 0.6), ("human_judged", 0.55)):
        (cell,) = calibration.cells(pq, t1, labels, References(pq, ref), None, [])
        assert np.allclose(cell.y[0], want) and np.allclose(cell.f[0], 0.7)


# --------------------------------------------------------------------------- end to end: run.py -m, then compare


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    store = warm_store(tmp_path_factory)
    tmp = tmp_path_factory.mktemp("calib")
    toy = load_toy()
    perfect = tmp / "perfect.txt"  # a file judge that returns the human labels of the label set
    perfect.write_text(
        "".join(f"{q} 0 {d} {h}\n" for q, d, h in toy.label_set().itertuples(index=False)), encoding="utf-8"
    )
    base = [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        "experiment_name=calib",
        "+system=bm25,oracle_perfect,oracle_swap_1,simulated_llm",
    ]
    for judge in (["judge=human,simulated"], ["judge=qrels", f"judge.path={perfect}"]):
        res = run(["-m", *base, *judge], cwd=tmp)
        assert res.rc == 0, res
    out = tmp / "out"
    args = [
        "experiment=calib",
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"out={out}",
        "bootstrap=0",
        "calibration=ppi,ppi++,linear,label,human_only",
        "calibration_k=3,6,all",
        "resamples=50",
        "seed=1",
    ]
    res = run(args, cwd=tmp, module="judgebench.compare")
    assert res.rc == 0, res
    return {"out": out, "printed": res.out, "store": store, "tmp": tmp}


def test_end_to_end_on_the_toy_grid(grid):
    out = grid["out"]
    t = pd.read_csv(out / "calibration.csv").set_index(["judge", "estimator", "k"])
    assert set(t.index.get_level_values("estimator")) == {"judge_only", "human_only", "ppi", "ppi++", "linear", "label"}
    assert sorted(set(t.index.get_level_values("k"))) == [3, 6, 12]
    # the perfect file judge: every estimator that reads it gives the human means exactly at every k
    perfect = t.loc["perfect"].drop(index="human_only", level="estimator")
    assert (perfect["mae"] < 1e-12).all() and (perfect["tau"] == 1).all() and (perfect["inversion_rate"] == 0).all()
    assert (perfect.loc["judge_only", "agree"] == 1).all()
    # the biased simulated judge: inverted without human labels, exact with all of them
    sim = t.loc["simulated"]
    assert (sim.loc["judge_only", "inversion_rate"] == 1).all()
    for name in ("human_only", "ppi", "ppi++", "linear", "label"):
        a = sim.loc[(name, 12)]
        assert a["mae"] < 1e-12 and a["tau"] == 1 and a["inversion_rate"] == 0 and a["labels_spent"] == 241
    # judge only's significance classes are Table 4's (correction none), as shares of the 6 pairs
    t4 = pd.read_csv(out / "significance_agreement.csv").set_index("judge").loc["simulated"]
    for cls in ("agree", "missed", "spurious", "reversed"):
        assert sim.loc[("judge_only", 3), cls] == pytest.approx(t4[cls] / 6)
    summary = pd.read_csv(out / "calibration_summary.csv").set_index("judge")
    assert bool(summary.loc["simulated", "judge_only_inverted"]) and not bool(
        summary.loc["perfect", "judge_only_inverted"]
    )
    for f in ("figure_budget_simulated.png", "figure_budget_perfect.png"):
        artifact_checks.png(out / f)
    # the .tex of the simulated judge: a row per estimator and k (6 x 3) whose numbers include its MAE and tau
    rows = artifact_checks.tex_rows(out / "calibration_toy_simulated.tex")
    assert len(rows) == len(sim) == 18, rows
    for cells in rows:
        estimator, k = (
            cells[0].replace("\\_", "_").replace("\\+", "+"),
            int(re.sub(r"\D", "", cells[1])),
        )  # "all (12)": 12
        want = sim.loc[(estimator, k)]
        got = artifact_checks.numbers(cells[1:])
        for col in ("mae", "tau"):
            assert any(abs(x - round(float(want[col]), 3)) < 1e-9 for x in got), (cells, col, want[col])
    report = (out / "report.md").read_text(encoding="utf-8")
    assert (
        "## Correcting the judge with k human-labelled queries" in report and "Smallest k without inversion" in report
    )


def test_bad_calibration_options_are_one_line(grid):
    base = ["experiment=calib", f"tracking_uri=sqlite:///{grid['store']}/mlflow.db", "log=false"]
    for extra, want in (
        (["calibration=ppi,magic"], "calibration: unknown ['magic']"),
        (["calibration=ppi", "calibration_k=1"], "calibration_k='1': expected"),
        (["calibration=ppi", "resamples=-3"], "resamples='-3': expected a whole number >= 1"),
    ):
        res = run([*base, *extra], cwd=grid["tmp"], module="judgebench.compare")
        assert res.rc == 2 and want in res.err and len(res.err.strip().splitlines()) == 1, res


def _coverage(est, y, f, k, n_samples=4000):
    mask = calibration.samples(y.shape[1], k, n_samples, seed=5)
    e = est(y, f, mask)
    half = stats.t.ppf(0.975, k - 1) * np.sqrt(e.var)
    return (np.abs(e.point - y.mean(axis=1)) <= half).mean(), e


@pytest.mark.parametrize("slope, noise", [(0.7, 0.1), (0.5, 0.2)])  # lambda* about 1 (clipped) and about 0.5
def test_cross_fitted_ppi_plus_plus_covers_at_nominal_rate_on_synthetic_data(slope, noise):
    rng = np.random.default_rng(11)
    n = 400
    y = np.clip(rng.beta(2, 2, (3, n)), 0, 1)
    f = slope * y + 0.2 + rng.normal(0, noise, (3, n))
    for k in (20, 50):
        coverage, e = _coverage(PPIPlusPlus(), y, f, k)
        assert abs(coverage - 0.95) <= 0.015, (k, coverage)
        assert np.sqrt(e.var.mean(axis=0)) == pytest.approx(e.point.std(axis=0), rel=0.1)
    # at k = 5 the in-sample plug-in is optimistic; cross-fitting recovers most of the gap
    cross, insample = (_coverage(est, y, f, 5)[0] for est in (PPIPlusPlus(), calibration.ESTIMATORS["ppi++_insample"]))
    assert insample < 0.90 and cross > insample + 0.04, (cross, insample)


def _one_judge(systems: list[str], queries: list[str]) -> tuple[pd.DataFrame, dict[str, pd.DataFrame]]:
    rows = [
        ("d", s, judge, role, q, v)
        for s in systems
        for q in queries
        for judge, role, v in (("human_labelset", "human_labelset", 0.5), ("j", "judge", 0.6))
    ]
    pq = pd.DataFrame(rows, columns=["dataset", "system", "judge", "role", "query_id", "value"])
    t1 = {"d": pd.DataFrame({"type": "oracle", "human_labelset": 0.5, "j": 0.6}, index=systems)}
    return pq, t1


@pytest.mark.parametrize("systems, queries", [(["A"], ["q1", "q2", "q3"]), (["A", "B"], ["q1"])])
def test_calibration_without_two_systems_and_two_queries_says_so(systems, queries):
    pq, t1 = _one_judge(systems, queries)
    problems: list[str] = []
    labels = pd.DataFrame(columns=["dataset", "judge", "query_id", "doc_id", "relevance", "human"])
    assert calibration.cells(pq, t1, labels, References(pq, "human_labelset"), None, problems) == []
    assert problems == [
        f"calibration d/j: not run, it needs 2 or more systems and queries with values under the judge and its "
        f"reference; found {len(systems)} systems, {len(queries)} queries"
    ]


def test_a_calibration_k_above_the_queries_is_noted():
    rng = np.random.default_rng(4)
    y = rng.random((3, 16))
    table = calibration.experiment(
        [_cell(y, y + 0.1, ["oracle", "llm", "lexical"])], ["human_only"], ["4", "20", "1000", "all"], 10, 0
    )
    assert sorted(set(table["k"])) == [4, 16]  # 20, 1000 and all are the same sample: every query
    notes = calibration_section.k_notes(table, ("4", "20", "1000", "all"))
    assert notes == ["calibration_k=20,1000: d has 16 queries, so k=20,1000 is reported as all (16)"]
    assert calibration_section.k_notes(table, ("4", "16", "all")) == []
    options = Options(
        resamples=10, reference="human_labelset", calibration=("human_only",), calibration_k=("4", "1000")
    )
    text = "\n".join(calibration_section.markdown(table, calibration_section.summary(table), options))
    assert "- calibration_k=1000: d has 16 queries, so k=1000 is reported as all (16)." in text


def test_plan_and_read_back_through_compare(grid, tmp_path):
    """plan=budget then calibration.human_labels= through the command line: under the perfect file judge (its labels
    are the humans') every design's estimate is the human mean exactly, with a zero-width interval."""
    base = [
        "experiment=calib",
        f"tracking_uri=sqlite:///{grid['store']}/mlflow.db",
        f"out={tmp_path}",
        "bootstrap=0",
        "log=false",
        "format=csv",
    ]
    res = run(
        [*base, "plan=budget", "budget=4", "strategy=stratified", "signal=judges", "resamples=20"],
        cwd=grid["tmp"],
        module="judgebench.compare",
    )
    assert res.rc == 0 and "plan toy/perfect: stratified, budget 4" in res.out, res
    assert "sheet toy/perfect: budget 4 = 4 queries, " in res.out, res  # what the budget means in work
    plan = pd.read_csv(
        tmp_path / "plan" / "human_budget_plan.tsv", sep="\t", dtype={"query_id": str}
    )  # the plan's own folder
    assert set(plan["signal"]) == {"judges"} and set(plan["allocation"]) == {"neyman"}  # strata from the judges' spread
    assert {"simulated", "perfect"} <= set(plan["judge"]) and (
        plan.groupby("judge")["selected"].sum() == 4
    ).all()  # + virtual judges
    human = {
        (str(q), str(d)): int(r)
        for q, d, r in load_toy().qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False)
    }
    pairs = set()
    for judge in ("simulated", "perfect"):
        lines = (tmp_path / "plan" / f"human_budget_qrels_toy_{judge}.txt").read_text().splitlines()
        chosen = set(plan.loc[(plan["judge"] == judge) & (plan["selected"] == 1), "query_id"])
        assert lines and {ln.split("\t")[0] for ln in lines} == chosen and all(ln.endswith("\t") for ln in lines)
        pairs |= {tuple(ln.split("\t")[0:3:2]) for ln in lines}
    labels = tmp_path / "labels.txt"
    labels.write_text("".join(f"{q} 0 {d} {human[(q, d)]}\n" for q, d in sorted(pairs)))
    res = run([*base, f"calibration.human_labels={labels}"], cwd=grid["tmp"], module="judgebench.compare")
    assert res.rc == 0 and "read back toy/perfect from 4 labelled queries" in res.out, res
    back = pd.read_csv(tmp_path / "readback" / "human_budget_readback.csv")
    perfect = back[(back["judge"] == "perfect") & (back["target"] == "mean")].set_index("system")
    t1 = pd.read_csv(tmp_path / "readback" / "table1_toy.csv", index_col=0)
    assert np.allclose(perfect["estimate"], t1.loc[perfect.index, "human_labelset"], atol=1e-12)
    assert np.allclose(perfect["high"] - perfect["low"], 0, atol=1e-12)
    # the assessor's sheet of the same plan, filled with the same labels, reads back to the same estimates
    sheet = (tmp_path / "plan" / "labelling_sheet_toy_perfect.tsv").read_text(encoding="utf-8").splitlines()
    filled = [
        ln
        if ln.startswith(("#", "query_id"))
        else "\t".join([*ln.split("\t")[:2], str(human[tuple(ln.split("\t")[:2])]), *ln.split("\t")[3:]])
        for ln in sheet
    ]
    (tmp_path / "labels.tsv").write_text("\n".join(filled) + "\n", encoding="utf-8")
    res = run(
        [*base, f"calibration.human_labels={tmp_path / 'labels.tsv'}"], cwd=grid["tmp"], module="judgebench.compare"
    )
    assert res.rc == 0 and "read back toy/perfect from 4 labelled queries" in res.out, res
    again = pd.read_csv(tmp_path / "readback" / "human_budget_readback.csv")
    both = again[again["judge"] == "perfect"].reset_index(drop=True)
    assert both[["system", "other", "estimate", "low", "high"]].equals(
        back[back["judge"] == "perfect"].reset_index(drop=True)[["system", "other", "estimate", "low", "high"]]
    )
