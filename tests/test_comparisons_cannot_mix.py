"""Comparisons that cannot mix: one dataset identity per table, failures on equal terms, run files inside
the pool, one significance family for a judge and its reference.

The known answers are computed by hand or by tests/helpers/reference_impl.py; the two checks that need real data
(a mixed-dataset compare refuses, a failing perfect judge gives gap 0) run on the shipped TREC DL files.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

import cli_runner
from judgebench.compare import report as report_mod
from judgebench.compare.analyses import significance
from judgebench.compare.base import dataset_identity
from judgebench.compare.base.reference import References
from judgebench.data import fingerprint
from judgebench.data.datasets import from_files
from judgebench.data.trec_dl import load_trec_dl
from judgebench.exceptions import CompareError, DataError
from judgebench.jobs import pipeline
from judgebench.metrics import classify_decisions, pairwise_ttests
from judgebench.rankers.runfile import RunFileRanker
from reference_impl import frame_rows, ndcg10_judged

REPO = Path(__file__).resolve().parents[1]


def _cfg(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlflow.db",
                f"artifact_root={tmp}/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=mix",
                "progress=false",
                "dataset.data_dir=null",
                *overrides,
            ],
        )


def _build(tmp: Path, **options) -> report_mod.Report:
    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    return report_mod.build(client, "mix", options=report_mod.Options(bootstrap=0, formats=("md",), **options))


# --------------------------------------------------------------------------- 1. one identity per dataset name


@pytest.fixture(scope="module")
def two_pools(tmp_path_factory):
    """DL19 BM25 and Perfect on the shipped pool, BM25 again with dataset.pool_depth=50, DL20 BM25 once."""
    tmp = cli_runner.warm_store(tmp_path_factory)
    runs = {}
    for name, extra in (
        ("bm25", ["+system=bm25"]),
        ("perfect", ["+system=oracle_perfect"]),
        ("bm25@50", ["+system=bm25", "dataset.pool_depth=50"]),
    ):
        out = pipeline.run_job(_cfg(tmp, "dataset=dl19", *extra))
        assert out.status == "finished"
        runs[name] = out.run_id
    assert pipeline.run_job(_cfg(tmp, "dataset=dl20", "+system=bm25")).status == "finished"
    return tmp, runs


def test_two_pools_under_one_name_are_refused_by_name_and_hash(two_pools):
    tmp, runs = two_pools
    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    tag = lambda run, key: client.get_run(runs[run]).data.tags[f"judgebench.{key}"]  # noqa: E731
    full, half = tag("bm25", "dataset_hash"), tag("bm25@50", "dataset_hash")
    assert full == tag("perfect", "dataset_hash") and full != half
    # the parts say what differs: the pool, not the queries or the qrels
    parts = [dict(p.split("=") for p in tag(r, "dataset_parts").split(",")) for r in ("bm25", "bm25@50")]
    assert parts[0]["qrels"] == parts[1]["qrels"] and parts[0]["queries"] == parts[1]["queries"]
    assert parts[0]["pool"] != parts[1]["pool"]
    with pytest.raises(CompareError) as err:
        _build(tmp)
    message = str(err.value)
    assert "dataset dl19 has 2 identities" in message and f"dl19@{full}" in message and f"dl19@{half}" in message
    assert "differ in pool" in message and "datasets=dl19@" in message
    # another dataset alone is unaffected
    assert list(_build(tmp, datasets=["dl20"]).table1) == ["dl20"]


def test_a_hash_prefix_selects_one_identity(two_pools):
    tmp, runs = two_pools
    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    half = client.get_run(runs["bm25@50"]).data.tags["judgebench.dataset_hash"]
    rep = _build(tmp, datasets=[f"dl19@{half[:6]}", "dl20"])
    t1 = rep.table1["dl19"]
    assert t1["human"].dropna().index.tolist() == ["BM25"]  # Perfect ran on the other pool only
    # independently: the label set is the depth-50 pool's judged pairs; BM25 is the pool order
    ds = load_trec_dl("dl19", 2019)
    pool50 = ds.pool[ds.pool["rank"] <= 50]
    labelset = pool50.merge(ds.qrels, on=["query_id", "doc_id"])
    want = ndcg10_judged(
        frame_rows(pool50, "query_id", "doc_id", "rank"),
        frame_rows(labelset, "query_id", "doc_id", "relevance"),
        ds.judged_queries(),
    )
    assert t1.at["BM25", "human_labelset"] == pytest.approx(np.mean(list(want.values())), abs=1e-12)
    full = _build(tmp, datasets=["dl19@" + client.get_run(runs["bm25"]).data.tags["judgebench.dataset_hash"]]).table1[
        "dl19"
    ]
    assert full.at["BM25", "human_labelset"] != pytest.approx(t1.at["BM25", "human_labelset"], abs=1e-4)
    assert f"dl19@{half}" in report_mod.header(rep)["datasets"]
    with pytest.raises(CompareError, match="no run of dataset dl19 has that identity"):
        _build(tmp, datasets=["dl19@ffffff"])


def test_the_fingerprint_is_content_not_paths(tmp_path):
    files = cli_runner.write_dataset(tmp_path / "a")
    copy = {k: tmp_path / "b" / p.name for k, p in files.items()}
    copy["topics"].parent.mkdir()
    for k, p in files.items():
        copy[k].write_bytes(p.read_bytes())
    load = lambda f: from_files("mine", **{k: str(v) for k, v in f.items()})  # noqa: E731
    a, b = fingerprint.fingerprint(load(files)), fingerprint.fingerprint(load(copy))
    assert a == b  # the same files elsewhere are the same dataset
    lines = copy["qrels"].read_text().splitlines()
    q, z, d, r = lines[0].split()
    copy["qrels"].write_text("\n".join([f"{q} {z} {d} {3 - int(r)}", *lines[1:]]) + "\n")
    text = copy["passages"].read_text().replace('"text": "', '"text": "EDITED ', 1)
    copy["passages"].write_text(text)
    c = fingerprint.fingerprint(load(copy))
    assert dict(c.parts)["qrels"] != dict(a.parts)["qrels"] and dict(c.parts)["pool"] == dict(a.parts)["pool"]
    assert c.texts != a.texts and c.hash != a.hash
    # a cell that reads no text carries no texts hash: it fits any texts
    assert "judgebench.texts_hash" not in fingerprint.tags(load(files), False, "judgebench.")
    assert fingerprint.tags(load(files), True, "judgebench.")["judgebench.texts_hash"] == a.texts


def test_two_passage_texts_under_one_name_are_refused_and_selectable():
    rows = [
        ("toy", "aaa", "q=1,qrels=2,pool=3", "t1", 1),
        ("toy", "aaa", "q=1,qrels=2,pool=3", None, 2),
        ("toy", "aaa", "q=1,qrels=2,pool=3", "t2", 3),
    ]
    frame = pd.DataFrame(rows, columns=["dataset", "dataset_hash", "dataset_parts", "texts_hash", "start_time"])
    with pytest.raises(CompareError, match="read 2 different texts") as err:
        dataset_identity.one_identity(frame)
    assert "toy@t1" in str(err.value) and "toy@t2" in str(err.value)
    picked = dataset_identity.one_identity(frame, {"toy": "t2"})
    assert picked["start_time"].tolist() == [2, 3]  # the run that read no text stays with either texts


# --------------------------------------------------------------------------- 2. failures on equal terms


@pytest.fixture(scope="module")
def failing(tmp_path_factory):
    """A file judge holding exactly the human labels of the label set, less every 20th pair (5 % failures),
    on DL19 and DL20 x 7 systems."""
    tmp = cli_runner.warm_store(tmp_path_factory)
    removed = {}
    for name, year in (("dl19", 2019), ("dl20", 2020)):
        labelset = load_trec_dl(name, year).label_set().reset_index(drop=True)
        keep = labelset[labelset.index % 20 != 0]
        removed[name] = len(labelset) - len(keep)
        (tmp / f"failing.{name}.txt").write_text(
            "".join(f"{q} 0 {d} {r}\n" for q, d, r in keep.itertuples(index=False))
        )
    systems = "bm25,oracle_perfect,oracle_swap_3,oracle_swap_1,oracle_swap_1_2,rankgpt_gpt35,simulated_llm"
    args = [
        "-m",
        "dataset=dl19,dl20",
        f"+system={systems}",
        "judge=qrels",
        f"judge.path={tmp}/failing.${{dataset.name}}.txt",
        "judge.name=failing",
        "max_failed_share=0.06",
        "experiment_name=failing",
        "progress=false",
        f"tracking_uri=sqlite:///{tmp}/mlflow.db",
        f"artifact_root={tmp}/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.sweep.dir={tmp}/multirun",
    ]
    done = cli_runner.run(args, cwd=tmp, timeout=600)
    assert done.rc == 0, str(done)
    return MlflowClient(f"sqlite:///{tmp}/mlflow.db"), removed


def test_a_perfect_judge_that_fails_on_5_percent_has_gap_0_and_tau_1(failing):
    client, removed = failing
    rep = report_mod.build(client, "failing", options=report_mod.Options(bootstrap=50, formats=("md",)))
    for dataset, t1 in rep.table1.items():
        ref = rep.refs.column(dataset, "failing", t1.index)
        assert (t1["failing"] - ref).abs().max() < 1e-12, dataset  # gap exactly 0 on every system
        # ... while against the whole label set the failures would read as disagreement
        assert (t1["failing"] - t1["human_labelset"]).abs().max() > 1e-3, dataset
    t2 = rep.table2.set_index("dataset")
    assert set(t2["reference"]) == {"human_judged"}
    assert t2["tau_all"].tolist() == [1.0, 1.0] and t2["tau_oracles"].tolist() == [1.0, 1.0]
    assert t2["kappa_graded"].tolist() == [1.0, 1.0]
    assert t2.loc["dl19", "failed_pairs"] == removed["dl19"] and t2.loc["dl20", "failed_pairs"] == removed["dl20"]
    counts = rep.agreement_counts.set_index("dataset")
    assert (counts[["missed", "spurious", "reversed", "dropped"]].to_numpy() == 0).all()
    assert counts["agree"].tolist() == [21, 21] and counts["family"].tolist() == [21, 21]
    assert (rep.bias.filter(like="gap_").abs().to_numpy() < 1e-12).all()
    assert (rep.ci_tau[["query_tau_all", "query_tau_all_lo", "query_tau_all_hi"]].to_numpy() == 1.0).all()


# --------------------------------------------------------------------------- 3. run files inside the pool


def test_a_run_file_outside_the_pool_is_refused_restricted_or_kept(tmp_path, caplog):
    ds = load_trec_dl("dl19", 2019)
    pairs = set(zip(ds.pool["query_id"], ds.pool["doc_id"]))
    relevant = ds.qrels[ds.qrels["relevance"] >= 2]
    missed = relevant[[p not in pairs for p in zip(relevant["query_id"], relevant["doc_id"])]]
    q = missed["query_id"].value_counts().index[0]  # DL19 has relevant documents outside the BM25 top 100
    outside = missed.loc[missed["query_id"] == q, "doc_id"].tolist()[:2]
    assert len(outside) == 2
    pool = ds.pool[ds.pool["query_id"] == q].sort_values("rank")
    docs = [pool["doc_id"].iloc[0], *outside, *pool["doc_id"].iloc[1:10]]  # two outside documents at ranks 2 and 3
    path = tmp_path / "run.trec"
    path.write_text("".join(f"{q} Q0 {d} {i} {100 - i} mine\n" for i, d in enumerate(docs, 1)))
    with pytest.raises(DataError) as err:
        RunFileRanker(name="mine", path=str(path)).rank(ds, None)
    assert str(err.value).startswith(f"{path}: 2 of 12 documents (1 query) are outside dataset dl19's pool")
    assert "ranker.outside_pool=restrict" in str(err.value) and "dataset.pool_depth" in str(err.value)
    restricting = RunFileRanker(name="mine", path=str(path), outside_pool="restrict")
    kept = restricting.rank(ds, None)
    assert kept["doc_id"].tolist() == [docs[0], *docs[3:]] and kept["rank"].tolist() == list(range(1, 11))
    assert restricting.ranking_metrics() == {"outside_pool_dropped": 2, "outside_pool_of": 12}
    keeping = RunFileRanker(name="mine", path=str(path), outside_pool="keep")
    with caplog.at_level(logging.WARNING, logger="judgebench"):
        everything = keeping.rank(ds, None)
    assert everything["doc_id"].tolist() == docs and "outside_pool=keep" in caplog.text
    assert keeping.ranking_metrics() == {"outside_pool_kept": 2, "outside_pool_of": 12}
    inside = tmp_path / "inside.trec"
    inside.write_text("".join(f"{q} Q0 {d} {i} {100 - i} mine\n" for i, d in enumerate(pool["doc_id"].iloc[:10], 1)))
    plain = RunFileRanker(name="mine", path=str(inside), outside_pool="keep")
    assert len(plain.rank(ds, None)) == 10 and plain.ranking_metrics() == {}
    with pytest.raises(Exception, match="outside_pool='wide'"):
        RunFileRanker(name="mine", path=str(path), outside_pool="wide")


# --------------------------------------------------------------------------- 4. the label-level correction's normaliser


def test_the_label_correction_against_all_qrels_is_refused():
    with pytest.raises(CompareError, match="calibration=label with reference=human"):
        report_mod.build(None, "x", options=report_mod.Options(calibration=("label",), reference="human"))


# --------------------------------------------------------------------------- 5. one significance family


def _pq(judge: str, values: dict[str, np.ndarray], role: str = "judge") -> list[dict]:
    return [
        {"dataset": "d", "system": s, "judge": judge, "role": role, "query_id": f"q{i:02d}", "value": x}
        for s, v in values.items()
        for i, x in enumerate(v)
    ]


def test_holm_runs_over_the_pairs_both_sides_scored():
    # A vs B differ with raw p ~ 0.016, the smallest p: Holm over the 3 pairs of A, B, C multiplies it by 3
    # (significant), over the 6 pairs with D by 6 (not); D is noise around B.
    rng = np.random.default_rng(14)
    base = rng.normal(0.5, 0.05, 12)
    human = {
        "A": base + 0.02 + rng.normal(0, 0.025, 12),
        "B": base,
        "C": base + rng.normal(0, 0.05, 12),
        "D": base + rng.normal(0, 0.05, 12),
    }
    judged = {s: v for s, v in human.items() if s != "D"}  # the judge has no cell for D: the same values otherwise
    pq = pd.DataFrame(
        _pq("human_labelset", human, "human_labelset") + _pq("j", judged) + _pq("j", judged, "human_judged")
    )
    raw = pairwise_ttests(pd.DataFrame(_pq("h", human))[["system", "query_id", "value"]]).set_index(
        ["system_a", "system_b"]
    )
    p_ab = raw.at[("A", "B"), "p"]
    assert 0.05 / 6 < p_ab < 0.05 / 3 and p_ab == raw["p"].min()  # the construction holds
    six = pairwise_ttests(pd.DataFrame(_pq("h", human))[["system", "query_id", "value"]], correction="holm")
    assert not six.set_index(["system_a", "system_b"]).at[
        ("A", "B"), "significant"
    ]  # over all 6 pairs: not significant
    for reference in ("human_judged", "human_labelset"):
        counts, pairs = significance.decision_agreement(
            pq, {"d": list("ABCD")}, References(pq, reference), use_holm=True
        )
        row = counts.iloc[0]
        assert row["family"] == 3 and row["dropped"] == 3, reference  # the pairs with D are counted, not silently lost
        # a family of 6 on the human side would make A vs B "spurious" for a judge that has the human values
        assert row["agree"] == 3 and row[["missed", "spurious", "reversed"]].sum() == 0, reference
        assert significance.pair_lists(pairs).set_index("class").at["dropped", "n"] == 3
        cls = pairs.set_index(["system_a", "system_b"])["agreement"]
        assert cls[("A", "D")] == cls[("B", "D")] == cls[("C", "D")] == "dropped"
    tests = significance.ttests(pq, {"d": list("ABCD")})
    assert list(dict.fromkeys(tests["judge"])) == [
        "human_labelset",
        "j",
    ]  # the per-judge references are no judge of Table 3
    assert len(tests[tests["judge"] == "j"]) == 3  # j's tests are its own 3 pairs, not doubled by its human_judged rows
    # Holm over the judge's 3 pairs, by hand: sorted p times 3, 2, 1, running maximum, capped at 1
    j = tests[tests["judge"] == "j"].sort_values("p")
    by_hand = np.minimum(np.maximum.accumulate(j["p"].to_numpy() * np.array([3, 2, 1])), 1.0)
    assert j["p_holm"].to_numpy() == pytest.approx(by_hand)


def test_a_pair_only_one_side_tested_is_dropped_and_counted():
    judge = pd.DataFrame(
        {
            "system_a": ["A", "A"],
            "system_b": ["B", "C"],
            "mean_a": [1, 1],
            "mean_b": [0, 0],
            "t": [5, 5],
            "p": [0.01, 0.01],
            "significant": [True, True],
            "better": ["a", "a"],
        }
    )
    human = pd.DataFrame(
        {
            "system_a": ["B", "B"],
            "system_b": ["A", "C"],
            "mean_a": [0, 0],
            "mean_b": [1, 1],
            "t": [-5, 1],
            "p": [0.01, 0.4],
            "significant": [True, False],
            "better": ["b", None],
        }
    )
    cls = classify_decisions(judge, human).set_index(["system_a", "system_b"])["agreement"].to_dict()
    assert cls == {("A", "B"): "agree", ("A", "C"): "dropped", ("B", "C"): "dropped"}
