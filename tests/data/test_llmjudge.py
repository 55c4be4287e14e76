"""dataset=llmjudge as a grid dataset: its pool is the judged passages in the pairs file's order, which breaks
the oracles' ties; a cell runs with no passage; a pairs file that lists other pairs is an error."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from cli_runner import ERROR_PREFIX, run, warm_store
from judgebench.data.llmjudge import load_llmjudge
from judgebench.exceptions import DataError
from judgebench.rankers.oracle import OracleRanker

# (query, doc, label) in qrels-file order; the pairs file lists them in another order
QRELS = [
    ("q1", "d1", 0),
    ("q1", "d2", 2),
    ("q1", "d3", 2),
    ("q1", "d4", 1),
    ("q1", "d5", 2),
    ("q2", "e1", 1),
    ("q2", "e2", 3),
    ("q2", "e3", 1),
]
PAIRS = [("q2", "e3"), ("q1", "d5"), ("q1", "d1"), ("q1", "d3"), ("q2", "e2"), ("q1", "d4"), ("q1", "d2"), ("q2", "e1")]


def _collection(root: Path, pairs=PAIRS) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "llm4eval_query_2024.txt").write_text("q1\tfirst query\nq2\tsecond query\nq3\tunjudged\n", encoding="utf-8")
    (root / "llmjudge_test_qrel_idx.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS), encoding="utf-8")
    (root / "llm4eval_test_qrel_2024.txt").write_text("".join(f"{q} 0 {d}\n" for q, d in pairs), encoding="utf-8")
    return root


def test_perfect_breaks_ties_in_pairs_file_order(tmp_path):
    ds = load_llmjudge(data_dir=str(_collection(tmp_path / "lj")))
    assert ds.has_pool and len(ds.label_set()) == len(QRELS) and set(ds.queries) == {"q1", "q2"}
    run_ = OracleRanker(name="Oracle", depth=None).rank(ds, None)
    label = {(q, d): r for q, d, r in QRELS}
    position = {p: i for i, p in enumerate(PAIRS)}
    for q in ("q1", "q2"):  # label descending, equal labels in the order the pairs file lists them
        expected = sorted((p for p in PAIRS if p[0] == q), key=lambda p: (-label[p], position[p]))
        got = run_[run_["query_id"] == q].sort_values("rank")["doc_id"].tolist()
        assert got == [d for _, d in expected], q
    assert [d for _, d in sorted((p for p in PAIRS if p[0] == "q1"), key=lambda p: (-label[p], position[p]))][:3] == [
        "d5",
        "d3",
        "d2",
    ]
    # without a pairs file the qrels file's order breaks them
    (tmp_path / "lj" / "llm4eval_test_qrel_2024.txt").unlink()
    again = OracleRanker(name="Oracle", depth=None).rank(load_llmjudge(data_dir=str(tmp_path / "lj")), None)
    assert again[again["query_id"] == "q1"].sort_values("rank")["doc_id"].tolist()[:3] == ["d2", "d3", "d5"]


@pytest.mark.parametrize(
    "pairs, message, line",
    [
        ([*PAIRS, ("q1", "d9")], "query q1 doc d9 has no human label in", 9),
        ([*PAIRS[:-1]], "lacks 1 labelled pairs of", None),
        ([*PAIRS, ("q1", "d5")], "query q1 doc d5 is listed twice", 9),
    ],
)
def test_a_pairs_file_of_other_pairs_is_an_error(tmp_path, pairs, message, line):
    root = _collection(tmp_path / "lj", pairs)
    with pytest.raises(DataError) as e:
        load_llmjudge(data_dir=str(root))
    assert message in str(e.value) and "llm4eval_test_qrel_2024.txt" in str(e.value)
    assert (f":{line}:" in str(e.value)) == (line is not None)


def test_an_oracle_cell_runs_with_no_passage(tmp_path_factory, tmp_path):
    store = warm_store(tmp_path_factory)
    root = _collection(tmp_path / "lj")
    (root / "submissions").mkdir()
    # a judge file that calls every 2 a 1: Perfect still puts them first, so its nDCG under itself stays 1
    (root / "submissions" / "team-a.txt").write_text(
        "".join(f"{q} 0 {d} {1 if r == 2 else r}\n" for q, d, r in QRELS), encoding="utf-8"
    )
    args = [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        "experiment_name=ljgrid",
        "dataset=llmjudge",
        f"dataset.data_dir={root}",
        "ranker=oracle",
        "judge=qrels",
        f"judge.root={root}",
        "judge.path=human,submissions/team-a.txt",
        "perturbation=swap_1",
    ]
    res = run(["-m", *args], cwd=tmp_path)
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    runs = client.search_runs(
        [client.get_experiment_by_name("ljgrid").experiment_id], filter_string="tags.`judgebench.kind` = 'job'"
    )
    by_judge = {r.data.tags["judge"]: r for r in runs}
    assert set(by_judge) == {"human", "team-a"} and by_judge["human"].data.tags["judge_family"] == "human"
    # Swap[1] exchanges rank 1 with the last of the query's judged pool (n = 5 and 3), cut to depth 10:
    # q1: d1(0) d3 d2 d4 d5 -> gains [0,2,2,1,2] vs ideal [2,2,2,1,0]; q2: e1(1) e3(1) e2(3) vs [3,1,1]
    import math

    def dcg(g):
        return sum(x / math.log2(i + 2) for i, x in enumerate(g))  # trec_eval: the label is the gain

    q1, q2 = dcg([0, 2, 2, 1, 2]) / dcg([2, 2, 2, 1, 0]), dcg([1, 1, 3]) / dcg([3, 1, 1])
    assert by_judge["human"].data.metrics["ndcg10_human"] == pytest.approx((q1 + q2) / 2)
    assert by_judge["human"].data.metrics["ndcg10_judge"] == pytest.approx((q1 + q2) / 2)
    j1 = dcg([0, 1, 1, 1, 1]) / dcg([1, 1, 1, 1, 0])
    assert by_judge["team-a"].data.metrics["ndcg10_judge"] == pytest.approx((j1 + q2) / 2)
    res = run([*args[:-3], "judge=qrels", "judge.path=human", "ranker=bm25"], cwd=tmp_path)
    assert (
        res.rc == 2 and len(res.error_lines) == 1 and res.error_lines[0].startswith(f"{ERROR_PREFIX} dataset llmjudge:")
    ), res


# The human column of Table 1 on the real collection (4 decimals), as +experiment=llmjudge_oracles gives it
HUMAN_TABLE1 = {
    "Perfect": 1.0,
    "Swap[3]": 0.8844,
    "Swap[2]": 0.8489,
    "Swap[1]": 0.7470,
    "Swap[2,3]": 0.7332,
    "Swap[1,2]": 0.5959,
}
SWAPS = {"Perfect": [], "Swap[3]": [3], "Swap[2]": [2], "Swap[1]": [1], "Swap[2,3]": [2, 3], "Swap[1,2]": [1, 2]}


def _oracle_rows(pairs: pd.DataFrame, labels: dict, swaps: list[int]) -> list[tuple[str, str, int]]:
    """The oracle runs written out here: label descending, ties in pairs-file order, Swap[k] with rank n-k+1, depth
    10."""
    rows = []
    for q, g in pairs.groupby("query_id", sort=False):
        docs = sorted(
            g["doc_id"], key=lambda d, order={d: i for i, d in enumerate(g["doc_id"])}: (-labels[(q, d)], order[d])
        )
        for k in swaps:
            docs[k - 1], docs[len(docs) - k] = docs[len(docs) - k], docs[k - 1]
        rows += [(q, d, r) for r, d in enumerate(docs[:10], start=1)]
    return rows


@pytest.mark.slow  # ~40 s: six cells on the real LLMJudge collection
def test_human_table1_of_the_real_collection(llmjudge_dir, tmp_path_factory, tmp_path):
    from reference_impl import ndcg10_judged

    store = warm_store(tmp_path_factory)
    args = [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        "experiment_name=ljhuman",
        "dataset=llmjudge",
        f"dataset.data_dir={llmjudge_dir}",
        "ranker=oracle",
        "judge=qrels",
        "judge.path=human",
        "perturbation=perfect,swap_3,swap_2,swap_1,swap_2_3,swap_1_2",
    ]
    res = run(["-m", *args], cwd=tmp_path)
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    runs = client.search_runs(
        [client.get_experiment_by_name("ljhuman").experiment_id], filter_string="tags.`judgebench.kind` = 'job'"
    )
    got = {r.data.tags["system"]: r.data.metrics["ndcg10_human"] for r in runs}
    assert {k: round(v, 4) for k, v in got.items()} == HUMAN_TABLE1
    human = pd.read_csv(
        llmjudge_dir / "llmjudge_test_qrel_idx.txt", sep=" ", names=["query_id", "it", "doc_id", "label"], dtype=str
    )
    pairs = pd.read_csv(
        llmjudge_dir / "llm4eval_test_qrel_2024.txt", sep=" ", names=["query_id", "it", "doc_id"], dtype=str
    )
    labels = {(q, d): int(r) for q, d, r in zip(human["query_id"], human["doc_id"], human["label"])}
    qrels = [(q, d, r) for (q, d), r in labels.items()]
    for name, swaps in SWAPS.items():
        per_query = ndcg10_judged(_oracle_rows(pairs, labels, swaps), qrels)
        assert got[name] == pytest.approx(sum(per_query.values()) / len(per_query), abs=1e-9), name
