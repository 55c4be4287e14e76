"""Oracle rankers, perturbations and the simulated components on hand-made pools."""

import math

import pandas as pd
import pytest

from judgebench.data.datasets import Dataset
from judgebench.evaluation import cut
from judgebench.judges.simulated import SimulatedJudge
from judgebench.judges.simulation import latent_prior
from judgebench.metrics import per_query_ndcg
from judgebench.rankers.oracle import OracleRanker
from judgebench.rankers.perturbation import Perturbation
from judgebench.rankers.simulated import SimulatedLLMRanker

POOL_ORDER = ["d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"]
LABELS = {"d2": 3, "d4": 1, "d5": 3, "d7": 0, "d8": 2}  # d1, d3, d6 unjudged


@pytest.fixture
def tiny() -> Dataset:
    pool = pd.DataFrame(
        {"query_id": "q1", "doc_id": POOL_ORDER, "score": [8.0 - i for i in range(8)], "rank": range(1, 9)}
    )
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": list(LABELS), "relevance": list(LABELS.values())})
    corpus = {d: f"text of {d}" for d in POOL_ORDER}
    return Dataset("tiny", {"q1": "a query"}, qrels, corpus, pool)


def docs(run: pd.DataFrame) -> list[str]:
    return list(run.sort_values("rank")["doc_id"])


def test_perfect_sorts_judged_by_label_ties_in_pool_order_then_unjudged(tiny):
    run = OracleRanker(name="Oracle").rank(tiny, tiny.corpus)
    assert docs(run) == ["d2", "d5", "d8", "d4", "d7", "d1", "d3", "d6"]
    assert list(run["rank"]) == list(range(1, 9))
    assert run["score"].is_monotonic_decreasing


@pytest.mark.parametrize(
    ("swaps", "expected"),
    [
        ([1], ["d6", "d5", "d8", "d4", "d7", "d1", "d3", "d2"]),
        ([3], ["d2", "d5", "d1", "d4", "d7", "d8", "d3", "d6"]),
        ([2, 3], ["d2", "d3", "d1", "d4", "d7", "d8", "d5", "d6"]),
        ([1, 2], ["d6", "d3", "d8", "d4", "d7", "d1", "d5", "d2"]),
    ],
)
def test_swap_k_exchanges_rank_k_with_mirror_rank(tiny, swaps, expected):
    run = Perturbation("p", swaps).apply(OracleRanker(name="Oracle").rank(tiny, tiny.corpus))
    assert docs(run) == expected
    assert run["score"].is_monotonic_decreasing  # scores renumbered: evaluators sorting by score keep the order


def test_depth_cut_happens_after_the_swap(tiny):
    run = cut(Perturbation("Swap[1]", [1]).apply(OracleRanker(name="Oracle").rank(tiny, tiny.corpus)), 3)
    assert docs(run) == ["d6", "d5", "d8"]
    # judged only: d6 is removed, d5 (3) and d8 (2) move up; ideal from all qrels 3,3,2 at k=3
    dcg = 3 / math.log2(2) + 2 / math.log2(3)
    idcg = 3 / math.log2(2) + 3 / math.log2(3) + 2 / math.log2(4)
    value = per_query_ndcg(run, tiny.qrels, k=3)["value"].iloc[0]
    assert value == pytest.approx(dcg / idcg, abs=1e-9)


def test_swap_beyond_ranking_is_a_clear_error(tiny):
    run = OracleRanker(name="Oracle").rank(tiny, tiny.corpus)
    with pytest.raises(ValueError, match=r"rank 9 is beyond the ranking of query q1 \(8 documents\)"):
        Perturbation("Swap[9]", [9]).apply(run)
    with pytest.raises(ValueError, match="ranks must be >= 1"):
        Perturbation("bad", [0])


def test_perturbation_order_matches_the_paper_on_a_realistic_pool():
    """100-document pool, judged documents spread through it: nDCG@10 falls in the paper's order."""
    pool_docs = [f"p{i:03d}" for i in range(100)]
    labels = {
        f"p{i:03d}": lab for i, lab in zip(range(0, 100, 3), [3, 3, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0, 0] + [0] * 20)
    }
    pool = pd.DataFrame({"query_id": "q", "doc_id": pool_docs, "score": range(100, 0, -1), "rank": range(1, 101)})
    qrels = pd.DataFrame({"query_id": "q", "doc_id": list(labels), "relevance": list(labels.values())})
    ds = Dataset("t", {"q": "x"}, qrels, {d: d for d in pool_docs}, pool)
    perfect = OracleRanker(name="Oracle").rank(ds, ds.corpus)
    values = [
        per_query_ndcg(cut(Perturbation(str(s), s).apply(perfect), 10), qrels)["value"].iloc[0]
        for s in ([], [3], [2], [1], [2, 3], [1, 2])
    ]
    assert values == sorted(values, reverse=True)
    # ranks 1 and 2 both hold a 3: removing either leaves the same judged list, so Swap[2] == Swap[1]
    assert values[2] == pytest.approx(values[3])
    assert values[0] > values[1] > values[2] and values[3] > values[4] > values[5]


def test_simulated_judge_is_exact_without_bias_or_noise(tiny):
    pairs = tiny.label_set()[["query_id", "doc_id"]]
    exact = SimulatedJudge(weight=0.0, noise=0.0).judge(pairs, tiny, tiny.corpus).labels
    assert dict(zip(exact["doc_id"], exact["relevance"])) == LABELS
    lenient = SimulatedJudge(weight=0.0, noise=0.0, leniency=1.0).judge(pairs, tiny, tiny.corpus).labels
    assert dict(zip(lenient["doc_id"], lenient["relevance"])) == {d: min(v + 1, 3) for d, v in LABELS.items()}


def _prior_by_hand(seed: int, query_id: str, doc_id: str) -> float:
    """judges/simulation.py's documented recipe, recomputed here: N(0, 1) from numpy's default generator seeded with the
    first 8 bytes (little-endian) of sha256("prior\\x1f<seed>\\x1f<query>\\x1f<doc>")."""
    import hashlib

    import numpy as np

    digest = hashlib.sha256("\x1f".join(["prior", str(seed), query_id, doc_id]).encode()).digest()
    return float(np.random.default_rng(int.from_bytes(digest[:8], "little")).standard_normal())


def test_simulated_judge_and_ranker_share_the_latent_prior(tiny):
    u = {d: _prior_by_hand(5, "q1", d) for d in POOL_ORDER}
    assert {d: latent_prior(5, "q1", d) for d in POOL_ORDER} == u  # a pure function of (seed, q, d), as documented
    # pinned values (seed 5, q1): a change of the recipe changes every stored simulated result
    assert [round(u[d], 6) for d in POOL_ORDER] == [
        1.375023,
        0.408867,
        0.943589,
        -0.737418,
        -1.053638,
        0.636558,
        0.761239,
        -1.02049,
    ]
    assert [round(latent_prior(6, "q1", d), 6) for d in ("d1", "d2")] == [
        -0.953064,
        -0.575208,
    ]  # another family, another prior
    assert latent_prior(5, "q2", "d1") != u["d1"]  # and the query is part of the key
    # with no human signal in play (all scores = weight * u) the ranker orders by u
    ranker = SimulatedLLMRanker(name="SimLLM", family="simulated-5", weight=1.0, noise=0.0)  # the family's seed is 5
    run = ranker.rank(tiny, tiny.corpus)
    expected = {d: LABELS.get(d, 0) + u[d] for d in POOL_ORDER}
    assert docs(run) == sorted(POOL_ORDER, key=lambda d: -expected[d])
    judge = SimulatedJudge(family="simulated-5", weight=1.0, noise=0.0).judge(
        tiny.label_set()[["query_id", "doc_id"]], tiny, tiny.corpus
    )
    got = dict(zip(judge.labels["doc_id"], judge.labels["relevance"]))
    assert got == {d: int(min(3, max(0, round(LABELS[d] + u[d])))) for d in LABELS}


def test_a_simulated_family_is_its_prior(tiny):
    """simulated-<N> is seed N (the default family simulated-2024 keeps every earlier number); another name is a
    seed of its own: the same in every process (sha256 of the name, recomputed here), different across names."""
    import hashlib

    from judgebench.judges.simulation import family_seed

    assert family_seed("simulated-2024") == 2024 and family_seed("simulated-5") == 5
    assert family_seed("simulated-A") == int.from_bytes(hashlib.sha256(b"family\x1fsimulated-A").digest()[:8], "little")
    assert len({family_seed(f) for f in ("simulated-A", "simulated-B", "simulated-a", "gemma")}) == 4
    pairs = tiny.label_set()[["query_id", "doc_id"]]

    def label(family):
        return SimulatedJudge(family=family, weight=1.0, noise=0.0).judge(pairs, tiny, tiny.corpus).labels

    a = label("simulated-A")
    seed = family_seed("simulated-A")
    assert dict(zip(a["doc_id"], a["relevance"])) == {
        d: int(min(3, max(0, round(LABELS[d] + latent_prior(seed, "q1", d))))) for d in LABELS
    }
    assert not a["relevance"].equals(label("simulated-B")["relevance"])  # another family, another prior
    assert SimulatedLLMRanker(name="S").family == SimulatedJudge().family == "simulated-2024"
