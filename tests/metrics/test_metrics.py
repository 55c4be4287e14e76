"""Known-answer tests for judgebench.metrics (values computed by hand or independently)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd
import pytest
from scipy.stats import t as t_dist
from sklearn.metrics import cohen_kappa_score

from judgebench.metrics import (
    classify_decisions,
    confusion,
    kendall_tau,
    label_agreement,
    pairwise_ttests,
    per_query_ndcg,
)

L2 = math.log2


def _run(rows, with_rank=True):
    """rows: (query_id, doc_id, rank); score = 100 - rank unless given as 4th item."""
    data = []
    for r in rows:
        qid, did, rank = r[:3]
        score = r[3] if len(r) > 3 else 100.0 - rank
        data.append({"query_id": qid, "doc_id": did, "score": float(score), "rank": rank})
    df = pd.DataFrame(data)
    return df if with_rank else df.drop(columns="rank")


def _qrels(rows):
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"])


def _value(df, qid):
    return float(df.set_index("query_id").loc[qid, "value"])


# --------------------------------------------------------------------------- nDCG


def test_unjudged_removed_before_cutoff_moves_rank12_doc_into_top10():
    # d01 (rel 1) at rank 1, d02..d11 unjudged, d12 (rel 3) at rank 12.
    run = _run([("q", f"d{i:02d}", i) for i in range(1, 13)])
    qrels = _qrels([("q", "d01", 1), ("q", "d12", 3)])
    idcg = 3 / L2(2) + 1 / L2(3)
    # judged-only ranking: d01, d12 -> ranks 1, 2 (gain = label, linear)
    judged = (1 / L2(2) + 3 / L2(3)) / idcg
    assert _value(per_query_ndcg(run, qrels), "q") == pytest.approx(judged, abs=1e-12)
    # trec_eval default (no -J): d12 stays at rank 12, beyond the cut-off
    plain = (1 / L2(2)) / idcg
    got = _value(per_query_ndcg(run, qrels, judged_only=False), "q")
    assert got == pytest.approx(plain, abs=1e-12)
    # gains are linear: exponential gain (2^rel - 1) would give a different value
    exp_gain = (1 / L2(2) + 7 / L2(3)) / (7 / L2(2) + 1 / L2(3))
    assert abs(judged - exp_gain) > 0.01


def test_ideal_dcg_uses_all_qrels_including_unretrieved():
    run = _run([("q", "a", 1), ("q", "b", 2)])  # perfect order of what was retrieved
    qrels = _qrels([("q", "a", 3), ("q", "b", 2), ("q", "c", 3), ("q", "z", 0)])
    dcg = 3 / L2(2) + 2 / L2(3)
    idcg = 3 / L2(2) + 3 / L2(3) + 2 / L2(4)
    got = _value(per_query_ndcg(run, qrels), "q")
    assert got == pytest.approx(dcg / idcg, abs=1e-12)
    assert got < 1.0


def test_ideal_dcg_is_cut_at_k():
    # d1, d2 unjudged; d3 (rel 1) is the only judged retrieved doc; x, y (rel 2) unretrieved
    run = _run([("q", f"d{i}", i) for i in range(1, 4)])
    qrels = _qrels([("q", "d3", 1), ("q", "x", 2), ("q", "y", 2)])
    idcg2 = 2 / L2(2) + 2 / L2(3)  # ideal cut at k=2
    got = _value(per_query_ndcg(run, qrels, k=2), "q")  # d3 moves to rank 1
    assert got == pytest.approx((1 / L2(2)) / idcg2, abs=1e-12)
    assert _value(per_query_ndcg(run, qrels, k=2, judged_only=False), "q") == 0.0


def test_score_ties_broken_by_doc_id_descending_and_rank_overrides():
    # "a" (rel 0) and "b" (rel 2) share a score; trec_eval puts doc_id descending first.
    run = _run([("q", "a", 1, 5.0), ("q", "b", 2, 5.0)])
    qrels = _qrels([("q", "a", 0), ("q", "b", 2)])
    by_score = _value(per_query_ndcg(run, qrels, order="score"), "q")
    assert by_score == pytest.approx((2 / L2(2)) / (2 / L2(2)), abs=1e-12)  # b first
    no_rank = _value(per_query_ndcg(run.drop(columns="rank"), qrels), "q")
    assert no_rank == pytest.approx(1.0, abs=1e-12)
    # With the rank column (order="auto"), rank 1 = "a" is kept first.
    by_rank = _value(per_query_ndcg(run, qrels), "q")
    assert by_rank == pytest.approx((0 / L2(2) + 2 / L2(3)) / (2 / L2(2)), abs=1e-12)


def test_tie_break_is_string_order_of_doc_id():
    # doc ids "9" and "10" tie: string descending puts "9" before "10".
    run = _run([("q", "10", 1, 1.0), ("q", "9", 2, 1.0)], with_rank=False)
    qrels = _qrels([("q", "10", 1), ("q", "9", 0)])
    got = _value(per_query_ndcg(run, qrels), "q")
    assert got == pytest.approx((1 / L2(3)) / 1.0, abs=1e-12)


def test_run_given_by_rank_contradicting_scores():
    # Scores increase with rank (e.g. a distance); the rank column is the order.
    run = _run([("q", "x", 1, 0.1), ("q", "y", 2, 0.2), ("q", "z", 3, 0.3)])
    qrels = _qrels([("q", "x", 3), ("q", "y", 0), ("q", "z", 1)])
    idcg = 3 / L2(2) + 1 / L2(3)
    by_rank = (3 / L2(2) + 0 / L2(3) + 1 / L2(4)) / idcg
    by_score = (1 / L2(2) + 0 / L2(3) + 3 / L2(4)) / idcg  # z, y, x
    assert _value(per_query_ndcg(run, qrels), "q") == pytest.approx(by_rank, abs=1e-12)
    got = _value(per_query_ndcg(run, qrels, order="score"), "q")
    assert got == pytest.approx(by_score, abs=1e-12)


def test_missing_query_counts_as_zero_and_run_only_query_dropped():
    run = _run([("q1", "a", 1), ("q1", "b", 2), ("q3", "a", 1)])
    qrels = _qrels([("q1", "a", 0), ("q1", "b", 1), ("q2", "c", 2)])
    res = per_query_ndcg(run, qrels)
    q1 = (1 / L2(3)) / (1 / L2(2))
    assert list(res["query_id"]) == ["q1", "q2"]  # q3 has no qrels: dropped
    assert _value(res, "q1") == pytest.approx(q1, abs=1e-12)
    assert _value(res, "q2") == 0.0
    assert res.attrs["missing"] == ["q2"]
    assert res["value"].mean() == pytest.approx(q1 / 2, abs=1e-12)
    dropped = per_query_ndcg(run, qrels, missing="drop")
    assert list(dropped["query_id"]) == ["q1"]
    assert dropped["value"].mean() == pytest.approx(q1, abs=1e-12)
    with pytest.raises(ValueError):
        per_query_ndcg(run, qrels, missing="ignore")


def test_query_with_only_unjudged_docs_is_zero():
    run = _run([("q1", "u1", 1), ("q1", "u2", 2), ("q2", "a", 1)])
    qrels = _qrels([("q1", "r", 2), ("q2", "a", 1)])
    res = per_query_ndcg(run, qrels)
    assert _value(res, "q1") == 0.0
    assert _value(res, "q2") == pytest.approx(1.0)
    assert res.attrs["missing"] == []


# ------------------------------------------------------------- real TREC DL data


def _data_dir() -> Path:
    """The TREC DL qrels and runs shipped with the package."""
    from judgebench.data.trec_dl import SHIPPED

    return SHIPPED


def _read_run(path: Path) -> pd.DataFrame:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame(
        {
            "query_id": [r[0] for r in rows],
            "doc_id": [r[2] for r in rows],
            "rank": [int(r[3]) for r in rows],
            "score": [float(r[4]) for r in rows],
        }
    )


def _read_qrels(path: Path) -> pd.DataFrame:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pd.DataFrame(
        {"query_id": [r[0] for r in rows], "doc_id": [r[2] for r in rows], "relevance": [int(r[3]) for r in rows]}
    )


@pytest.mark.parametrize(
    ("run_file", "year", "expected", "tol"),
    [
        ("bm25.dl19.top100.trec", "dl19", 0.5058, 1e-4),
        ("bm25.dl20.top100.trec", "dl20", 0.4829, 1e-4),
        ("reranker-runs/rankgpt-gpt-3.5-turbo.bm25top100.dl19.trec", "dl19", 0.683, 1e-3),
        ("reranker-runs/rankgpt-gpt-3.5-turbo.bm25top100.dl20.trec", "dl20", 0.644, 1e-3),
        ("reranker-runs/rankvicuna-7b.bm25top100.dl19.trec", "dl19", 0.673, 1e-3),
        ("reranker-runs/rankvicuna-7b.bm25top100.dl20.trec", "dl20", 0.662, 1e-3),
    ],
)
def test_real_runs_match_published_judged_only_ndcg10(run_file, year, expected, tol):
    d = _data_dir()
    run = _read_run(d / run_file)
    qrels = _read_qrels(d / f"qrels.{year}-passage.txt")
    res = per_query_ndcg(run, qrels)
    assert res.attrs["missing"] == []
    assert res["value"].mean() == pytest.approx(expected, abs=tol)


def test_real_bm25_with_holes_in_its_top10_by_hand():
    """Judged-only where it matters: BM25's top 10 on the real dl19 qrels is fully judged, so the published
    numbers above cannot tell judged-only from plain. Here two judged documents of query 264014's top 10
    lose their judgments (holes at ranks 3 and 8) and the documents below move up."""
    d = _data_dir()
    run = _read_run(d / "bm25.dl19.top100.trec")
    run = run[run["query_id"] == "264014"]
    qrels = _read_qrels(d / "qrels.dl19-passage.txt")
    qrels = qrels[(qrels["query_id"] == "264014") & ~qrels["doc_id"].isin(["4834547", "1610712"])]
    # the labels of BM25's ranks 1..12 for 264014: 2 3 [3] 1 1 0 2 [0] 0 1 0 1 ([..]: now holes)
    # judged only: ranks 1 2 4 5 6 7 9 10 11 12 fill positions 1..10 with labels 2 3 1 1 0 2 0 1 0 1
    dcg = 2 / L2(2) + 3 / L2(3) + 1 / L2(4) + 1 / L2(5) + 2 / L2(7) + 1 / L2(9) + 1 / L2(11)
    # ideal: 21 documents of label 3 remain (22 less the hole at rank 3), so ten 3s
    idcg = sum(3 / L2(i + 1) for i in range(1, 11))
    assert _value(per_query_ndcg(run, qrels), "264014") == pytest.approx(dcg / idcg, abs=1e-12)
    # without -J the holes score 0 in place and ranks 11, 12 stay beyond the cut-off
    plain = 2 / L2(2) + 3 / L2(3) + 1 / L2(5) + 1 / L2(6) + 2 / L2(8) + 1 / L2(11)
    assert _value(per_query_ndcg(run, qrels, judged_only=False), "264014") == pytest.approx(plain / idcg, abs=1e-12)
    assert dcg != pytest.approx(plain)  # the case tells the two protocols apart


def _pure_python_ndcg10_judged(run: pd.DataFrame, qrels: pd.DataFrame) -> dict[str, float]:
    """Independent nDCG@10 (judged only, linear gain, log2 discount, rank order)."""
    labels: dict[str, dict[str, int]] = {}
    for q, d, r in zip(qrels["query_id"], qrels["doc_id"], qrels["relevance"]):
        labels.setdefault(q, {})[d] = int(r)
    ranked: dict[str, list[tuple[int, str]]] = {}
    for q, d, rk in zip(run["query_id"], run["doc_id"], run["rank"]):
        ranked.setdefault(q, []).append((int(rk), d))
    out = {}
    for q, lab in labels.items():
        docs = [d for _, d in sorted(ranked.get(q, []))]
        judged = [d for d in docs if d in lab][:10]
        dcg = sum(lab[d] / math.log2(i + 2) for i, d in enumerate(judged))
        ideal = sorted(lab.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        out[q] = dcg / idcg if idcg > 0 else 0.0
    return out


@pytest.mark.parametrize("year", ["dl19", "dl20"])
def test_per_query_ndcg_matches_pure_python_on_real_bm25(year):
    d = _data_dir()
    run = _read_run(d / f"bm25.{year}.top100.trec")
    qrels = _read_qrels(d / f"qrels.{year}-passage.txt")
    ours = per_query_ndcg(run, qrels).set_index("query_id")["value"].to_dict()
    ref = _pure_python_ndcg10_judged(run, qrels)
    assert set(ours) == set(ref)
    assert len(ours) == {"dl19": 43, "dl20": 54}[year]
    for q in ref:
        assert ours[q] == pytest.approx(ref[q], abs=1e-9), q
    # and with a hole in every query's top 10 (the judgments of each query's ranks 2 and 5 removed)
    holes = run[run["rank"].isin([2, 5])][["query_id", "doc_id"]]
    holed = qrels.merge(holes, on=["query_id", "doc_id"], how="left", indicator=True)
    holed = holed[holed["_merge"] == "left_only"].drop(columns="_merge")
    assert len(holed) < len(qrels) - len(ref)  # most queries lost two judged documents
    ours = per_query_ndcg(run, holed).set_index("query_id")["value"].to_dict()
    ref = _pure_python_ndcg10_judged(run, holed)
    for q in ref:
        assert ours[q] == pytest.approx(ref[q], abs=1e-9), q


# ----------------------------------------------------------------------- kappa


def _qrels_from_confusion(matrix, prefix="p"):
    """Build (human, judge) qrels from a confusion matrix (rows human, cols judge)."""
    human, judge, n = [], [], 0
    for h, row in enumerate(matrix):
        for j, count in enumerate(row):
            for _ in range(count):
                human.append(("q", f"{prefix}{n}", h))
                judge.append(("q", f"{prefix}{n}", j))
                n += 1
    return _qrels(judge), _qrels(human)


def test_kappa_ge2_binary_2x2_by_hand():
    # labels 0 and 2 only, so graded and binary tables coincide in shape
    judge, human = _qrels_from_confusion([[20, 0, 5], [0, 0, 0], [10, 0, 15]])
    n = 50
    p_o = (20 + 15) / n
    p_e = (25 / n) * (30 / n) + (25 / n) * (20 / n)  # human marginals 25/25, judge 30/20
    kappa = (p_o - p_e) / (1 - p_e)
    assert kappa == pytest.approx(0.4)
    res = label_agreement(judge, human)
    assert res["kappa_ge2"] == pytest.approx(kappa, abs=1e-12)
    assert res["kappa_graded"] == pytest.approx(kappa, abs=1e-12)
    assert res["n_pairs"] == 50 and res["n_missing"] == 0


def test_kappa_graded_4x4_and_binary_mapping_by_hand():
    m = [[4, 1, 0, 0], [1, 3, 1, 0], [0, 1, 2, 1], [0, 0, 1, 2]]
    judge, human = _qrels_from_confusion(m)
    n = 17
    p_o = (4 + 3 + 2 + 2) / n
    rows, cols = [5, 5, 4, 3], [5, 5, 4, 3]
    p_e = sum(r * c for r, c in zip(rows, cols)) / n**2
    graded = (p_o - p_e) / (1 - p_e)
    assert graded == pytest.approx(56 / 107)
    # binary: {0,1} -> 0, {2,3} -> 1: [[4+1+1+3, 0+0+1+0], [0+1+0+0, 2+1+1+2]]
    b = [[9, 1], [1, 6]]
    bp_o = (9 + 6) / n
    bp_e = (10 * 10 + 7 * 7) / n**2
    binary = (bp_o - bp_e) / (1 - bp_e)
    assert binary == pytest.approx(53 / 70)
    assert sum(map(sum, b)) == n

    # judge labels one extra pair the humans did not; humans have 2 the judge lacks
    judge = pd.concat([judge, _qrels([("q", "extra", 3)])], ignore_index=True)
    human = pd.concat([human, _qrels([("q", "h1", 0), ("q2", "h2", 3)])], ignore_index=True)
    res = label_agreement(judge, human)
    assert res["kappa_graded"] == pytest.approx(graded, abs=1e-12)
    assert res["kappa_ge2"] == pytest.approx(binary, abs=1e-12)
    assert res["n_pairs"] == 17 and res["n_missing"] == 2

    # sklearn reference on the joined labels
    j = judge.set_index("doc_id")["relevance"]
    h = human.set_index("doc_id")["relevance"]
    shared = [d for d in h.index if d in j.index]
    assert res["kappa_graded"] == pytest.approx(cohen_kappa_score(h[shared], j[shared]))

    conf = confusion(judge, human)
    assert conf.to_numpy().tolist() == m
    assert conf.index.name == "human" and conf.columns.name == "judge"
    assert list(conf.index) == [0, 1, 2, 3] and list(conf.columns) == [0, 1, 2, 3]


def test_kappa_undefined_is_nan():
    judge, human = _qrels_from_confusion([[3, 0], [0, 0]])  # all zero for both
    res = label_agreement(judge, human)
    assert math.isnan(res["kappa_graded"]) and math.isnan(res["kappa_ge2"])
    # graded defined (0 vs 1 swapped -> kappa -1) but binary all 0 -> nan
    judge, human = _qrels_from_confusion([[0, 1], [1, 0]])
    res = label_agreement(judge, human)
    assert res["kappa_graded"] == pytest.approx(-1.0)
    assert math.isnan(res["kappa_ge2"])
    # no shared pairs at all
    res = label_agreement(_qrels([("q", "x", 1)]), _qrels([("q", "y", 1)]))
    assert math.isnan(res["kappa_graded"]) and res["n_pairs"] == 0 and res["n_missing"] == 1


def test_kappa_rejects_labels_outside_0_to_3():
    with pytest.raises(ValueError, match="labels must be in"):
        label_agreement(_qrels([("q", "x", 4)]), _qrels([("q", "x", 1)]))


# ------------------------------------------------------------------------- tau


def test_kendall_tau_by_hand():
    a = {"A": 0.5, "B": 0.4, "C": 0.3, "D": 0.2, "only_a": 0.9}
    b = {"A": 0.45, "B": 0.35, "C": 0.38, "D": 0.1, "only_b": 0.0}
    # pairs AB AC AD BD CD concordant, BC discordant: (5 - 1) / 6
    tau = kendall_tau(a, b)
    assert tau == pytest.approx(4 / 6, abs=1e-12)
    tau3 = kendall_tau(a, b, systems=["A", "B", "C"])
    assert tau3 == pytest.approx((2 - 1) / 3, abs=1e-12)  # AB, AC concordant; BC discordant


def test_kendall_tau_b_with_ties():
    a = {"A": 1.0, "B": 1.0, "C": 2.0}
    b = {"A": 1.0, "B": 2.0, "C": 3.0}
    # n0=3 pairs, one tie in a (A,B); AC and BC concordant: 2 / sqrt((3-1)*(3-0))
    tau = kendall_tau(a, b)
    assert tau == pytest.approx(2 / math.sqrt(6), abs=1e-12)


def test_kendall_tau_needs_two_common_systems():
    with pytest.raises(ValueError, match="at least 2 systems"):
        kendall_tau({"A": 1.0, "B": 2.0}, {"A": 1.0, "C": 2.0})


# --------------------------------------------------------------------- t-tests


def _per_query(table: dict[str, dict[str, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"system": s, "query_id": q, "value": v} for s, vals in table.items() for q, v in vals.items()]
    )


def _hand_t(x: list[float], y: list[float]) -> float:
    diff = [a - b for a, b in zip(x, y)]
    return statistics.mean(diff) / (statistics.stdev(diff) / math.sqrt(len(diff)))


def test_pairwise_ttests_by_hand():
    table = {
        "A": {"q1": 0.5, "q2": 0.6, "q3": 0.7, "q4": 0.8, "q5": 0.9},  # q5 only in A
        "B": {"q1": 0.4, "q2": 0.4, "q3": 0.6, "q4": 0.5},
        "C": {"q1": 0.4, "q2": 0.4, "q3": 0.6, "q4": 0.5},  # identical to B
    }
    res = pairwise_ttests(_per_query(table))
    assert list(zip(res["system_a"], res["system_b"])) == [("A", "B"), ("A", "C"), ("B", "C")]
    ab = res.iloc[0]
    a4, b4 = [0.5, 0.6, 0.7, 0.8], [0.4, 0.4, 0.6, 0.5]
    # diffs 0.1 0.2 0.1 0.3: mean 0.175, sd sqrt(0.0275/3)
    t_hand = 0.175 / (math.sqrt(0.0275 / 3) / 2)
    assert t_hand == pytest.approx(_hand_t(a4, b4))
    assert ab["t"] == pytest.approx(t_hand, rel=1e-9)
    assert ab["p"] == pytest.approx(2 * t_dist.sf(t_hand, 3), rel=1e-9)
    assert ab["mean_a"] == pytest.approx(0.65) and ab["mean_b"] == pytest.approx(0.475)
    assert bool(ab["significant"]) and ab["better"] == "a"
    bc = res.iloc[2]
    assert math.isnan(bc["t"]) and math.isnan(bc["p"])
    assert bc["p_adj"] == 1.0 and not bool(bc["significant"]) and bc["better"] is None


def test_holm_and_bonferroni_by_hand():
    table = {
        "A": {"q1": 0.5, "q2": 0.6, "q3": 0.7, "q4": 0.8},
        "B": {"q1": 0.4, "q2": 0.4, "q3": 0.6, "q4": 0.5},
        "C": {"q1": 0.2, "q2": 0.5, "q3": 0.3, "q4": 0.6},
    }
    pq = _per_query(table)
    raw = pairwise_ttests(pq)["p"].to_list()
    # hand t for each pair, then p
    vec = {s: list(v.values()) for s, v in table.items()}
    for p, (x, y) in zip(raw, [("A", "B"), ("A", "C"), ("B", "C")]):
        assert p == pytest.approx(2 * t_dist.sf(abs(_hand_t(vec[x], vec[y])), 3), rel=1e-9)
    # Holm: sort ascending, multiply by m, m-1, m-2, running max, cap at 1
    order = sorted(range(3), key=lambda i: raw[i])
    holm, running = [0.0] * 3, 0.0
    for step, i in enumerate(order):
        running = max(running, min(1.0, (3 - step) * raw[i]))
        holm[i] = running
    res = pairwise_ttests(pq, correction="holm")
    assert res["p_adj"].to_list() == pytest.approx(holm, rel=1e-12)
    assert res["p"].to_list() == pytest.approx(raw, rel=1e-12)
    assert (res["significant"] == [h < 0.05 for h in holm]).all()
    bonf = pairwise_ttests(pq, correction="bonferroni")
    assert bonf["p_adj"].to_list() == pytest.approx([min(1.0, 3 * p) for p in raw], rel=1e-12)
    # the data are chosen so the correction changes a decision
    plain = pairwise_ttests(pq)
    assert plain["significant"].sum() > res["significant"].sum()


def test_holm_counts_a_pair_without_a_test_as_p_1():
    """B and C are equal on every query: no t-test, p taken as 1, and still one of the m = 3 comparisons."""
    table = {
        "A": {"q1": 0.5, "q2": 0.6, "q3": 0.7, "q4": 0.8},
        "B": {"q1": 0.4, "q2": 0.4, "q3": 0.6, "q4": 0.5},
        "C": {"q1": 0.4, "q2": 0.4, "q3": 0.6, "q4": 0.5},
    }
    vec = {s: list(v.values()) for s, v in table.items()}
    p_ab = 2 * t_dist.sf(abs(_hand_t(vec["A"], vec["B"])), 3)  # A-C is the same test
    res = pairwise_ttests(_per_query(table), correction="holm")
    assert math.isnan(res["p"].iloc[2])
    # Holm on (p_ab, p_ab, 1): the smallest times 3, the next times 2 (running max), then 1
    assert res["p_adj"].to_list() == pytest.approx(
        [min(1, 3 * p_ab), max(min(1, 3 * p_ab), min(1, 2 * p_ab)), 1.0], rel=1e-12
    )


def _decisions(rows):
    return pd.DataFrame(
        [
            {
                "system_a": a,
                "system_b": b,
                "mean_a": 0.0,
                "mean_b": 0.0,
                "t": 0.0,
                "p": 0.0,
                "p_adj": 0.0,
                "significant": s,
                "better": w,
            }
            for a, b, s, w in rows
        ]
    )


def test_classify_decisions_all_four_classes():
    judge = _decisions(
        [
            ("A", "B", False, None),  # human not sig      -> agree
            ("A", "C", False, None),  # human sig          -> missed
            ("A", "D", True, "a"),  # human not sig      -> spurious
            ("B", "C", True, "a"),  # human (C,B) C wins -> reversed
            ("B", "D", True, "a"),  # human (D,B) B wins -> agree
            ("C", "D", True, "b"),  # human D wins       -> agree
        ]
    )
    human = _decisions(
        [
            ("A", "B", False, None),
            ("A", "C", True, "b"),
            ("A", "D", False, None),
            ("C", "B", True, "a"),
            ("D", "B", True, "b"),
            ("C", "D", True, "b"),
        ]
    )
    out = classify_decisions(judge, human)
    got = dict(zip(zip(out["system_a"], out["system_b"]), out["agreement"]))
    assert got == {
        ("A", "B"): "agree",
        ("A", "C"): "missed",
        ("A", "D"): "spurious",
        ("B", "C"): "reversed",
        ("B", "D"): "agree",
        ("C", "D"): "agree",
    }
    assert {"significant_judge", "significant_human", "better_judge", "better_human"} <= set(out.columns)
    # flipped human row is expressed in the judge's orientation
    assert out.set_index(["system_a", "system_b"]).loc[("B", "D"), "better_human"] == "a"
