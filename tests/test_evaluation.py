"""The evaluation core: references on equal terms, the hole partner, cell identity, the metric version.

Known answers are computed by hand (the arithmetic is in the comments) or by the textbook formulas of
tests/helpers/reference_impl.py; the DL tests run real sweeps through run.py on the TREC DL files.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

import cli_runner
from judgebench.compare import report as report_mod
from judgebench.compare.cli import main as compare_main
from judgebench.evaluation import evaluate, references
from judgebench.exceptions import CompareError
from judgebench.jobs import common, pipeline
from judgebench.rankers.base import scores_from_order
from judgebench.rankers.perturbation import Perturbation

REPO = Path(__file__).resolve().parents[1]


def _frame(rows, cols):
    return pd.DataFrame(rows, columns=cols)


# ------------------------------------------------------------------ the two human references


def test_labelset_reference_normalises_like_a_judge():
    # q1: qrels a=3 (in the pool), b=2 (not in the pool); the run retrieves a then x (unjudged).
    # human: DCG = 3/log2(2) = 3; ideal over all qrels = 3 + 2/log2(3) = 3 + 1.26186 = 4.26186 -> 0.70392
    # human_labelset: ideal over the label set {a} = 3 -> 1.0 (what a perfect judge scores)
    # q2: qrels c=0 only, in the pool: nothing to gain, 0 under both. q3: judged, absent from the run: 0.
    qrels = _frame(
        [("q1", "a", 3), ("q1", "b", 2), ("q2", "c", 0), ("q3", "d", 1)], ["query_id", "doc_id", "relevance"]
    )
    pool = _frame([("q1", "a"), ("q1", "x"), ("q2", "c")], ["query_id", "doc_id"])
    run = scores_from_order(pool)
    got = evaluate(run, references(qrels, pool), ["q1", "q2", "q3"]).set_index("query_id")
    assert got.at["q1", "human"] == pytest.approx(3 / (3 + 2 / math.log2(3)), abs=1e-12)
    assert got.at["q1", "human_labelset"] == pytest.approx(1.0, abs=1e-12)
    assert got.loc[["q2", "q3"], ["human", "human_labelset"]].to_numpy().tolist() == [[0.0, 0.0], [0.0, 0.0]]


# ------------------------------------------------------------------ Swap[k]: mirror and hole partners


def _ranking(docs):
    return scores_from_order(_frame([("q", d) for d in docs], ["query_id", "doc_id"]))


def _order(run):
    return list(run.sort_values("rank")["doc_id"])


def test_swap_partners_mirror_and_hole():
    docs = ["r1", "r2", "r3", "r4", "u5", "r6", "u7", "r8"]  # u*: unjudged; r8 judged at the bottom
    judged = {("q", d) for d in docs if d.startswith("r")}
    # mirror: rank 1 <-> rank n-1+1 = 8 (r8, judged: the mirror brings up a judged document here)
    assert _order(Perturbation("Swap[1]", [1]).apply(_ranking(docs))) == [
        "r8",
        "r2",
        "r3",
        "r4",
        "u5",
        "r6",
        "u7",
        "r1",
    ]
    # hole: rank 1 <-> the lowest-ranked unjudged document, u7
    hole = Perturbation("Swap[1]", [1], partner="hole")
    assert _order(hole.apply(_ranking(docs), judged)) == ["u7", "r2", "r3", "r4", "u5", "r6", "r1", "r8"]
    # hole, two ranks: rank 1 takes u7, rank 2 the next unjudged one up, u5
    two = Perturbation("Swap[1,2]", [1, 2], partner="hole")
    assert _order(two.apply(_ranking(docs), judged)) == ["u7", "u5", "r3", "r4", "r2", "r6", "r1", "r8"]
    # a fully judged ranking takes a document of another query's ranking that has no judgment for it,
    # and the displaced document goes to the bottom
    two_queries = scores_from_order(
        _frame([("q", d) for d in ["r1", "r2"]] + [("p", "r1"), ("p", "u9")], ["query_id", "doc_id"])
    )
    out = Perturbation("Swap[1]", [1], partner="hole").apply(two_queries, {("q", "r1"), ("q", "r2"), ("p", "r1")})
    assert _order(out[out["query_id"] == "q"]) == ["u9", "r2", "r1"]
    assert _order(out[out["query_id"] == "p"]) == ["u9", "r1"]
    with pytest.raises(ValueError, match="partner='both'"):
        Perturbation("x", [1], partner="both")


# ------------------------------------------------------------------ cell identity and the metric version


def _cfg(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlruns/mlflow.db",
                f"artifact_root={tmp}/mlruns/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=ident",
                "progress=false",
                *overrides,
            ],
        )


def _report(tmp: Path, **options) -> report_mod.Report:
    client = MlflowClient(f"sqlite:///{tmp}/mlruns/mlflow.db")
    return report_mod.build(client, "ident", options=report_mod.Options(bootstrap=0, formats=("md",), **options))


def test_two_judge_configs_with_one_name_are_two_columns(tmp_path):
    for extra in ([], ["judge.weight=0.5"], ["judge.model=other-prior"]):
        for system in ("ranker=oracle", "ranker=simulated_llm"):
            assert pipeline.run_job(_cfg(tmp_path, system, "judge=simulated", *extra)).status == "finished"
    t1 = _report(tmp_path).table1["toy"]
    judges = [c for c in t1.columns if c.startswith("simulated")]  # (besides the virtual majority, mean, panel)
    # same name and model, other weight: told apart by a hash suffix; another model: by name@model
    assert len(judges) == 3 and "simulated@other-prior" in judges, judges
    hashed = sorted(j for j in judges if j.startswith("simulated#"))
    assert len(hashed) == 2
    # the two weights give different labels, so different numbers: nothing merged or overwritten
    assert t1.loc["SimLLM", hashed[0]] != t1.loc["SimLLM", hashed[1]]


def test_metric_version_bump_recomputes_and_compare_refuses_to_mix(tmp_path, monkeypatch):
    cfg = _cfg(tmp_path, "ranker=oracle", "judge=simulated")
    assert (
        pipeline.run_job(_cfg(tmp_path, "ranker=simulated_llm", "judge=simulated")).status == "finished"
    )  # stays at "3"
    first = pipeline.run_job(cfg)
    assert first.status == "finished" and pipeline.run_job(cfg).status == "skipped-done"
    monkeypatch.setattr(common, "METRIC_VERSION", "999")  # as a release that changes a metric would
    second = pipeline.run_job(cfg)
    assert second.status == "finished" and second.run_id != first.run_id
    client = MlflowClient(cfg.tracking_uri)
    assert client.get_run(second.run_id).data.tags["judgebench.metric_version"] == "999"
    with pytest.raises(CompareError, match=r"mixes runs of metric versions \['3', '999'\]"):
        _report(tmp_path)
    assert _report(tmp_path, allow_mixed_versions=True).versions["metric_version"] == ["3", "999"]


# ------------------------------------------------------------------ a perfect judge on TREC DL


SYSTEMS = "bm25,oracle_perfect,oracle_swap_3,oracle_swap_1,oracle_swap_1_2,rankgpt_gpt35,simulated_llm"
HUMAN_TABLE1 = {  # the paper's human column (all qrels), unchanged by the evaluation core
    "dl19": {
        "Perfect": 0.8922,
        "Swap[3]": 0.8219,
        "Swap[1]": 0.7963,
        "Swap[1,2]": 0.7037,
        "RankGPT-gpt-3.5": 0.6832,
        "BM25": 0.5058,
    },
    "dl20": {
        "Perfect": 0.8707,
        "Swap[3]": 0.7945,
        "Swap[1]": 0.7637,
        "Swap[1,2]": 0.6722,
        "RankGPT-gpt-3.5": 0.6441,
        "BM25": 0.4829,
    },
}


@pytest.fixture(scope="module")
def dl_grid(tmp_path_factory):
    """dl19 + dl20 x 7 systems under the human judge and a judge that returns exactly the human labels, on the
    shipped TREC DL files alone (no passage text is read: the judges read none)."""
    tmp = cli_runner.warm_store(tmp_path_factory)
    env = {k: v for k, v in os.environ.items() if k != "JUDGEBENCH_TREC_DL_DIR"}
    common = [
        "-m",
        "dataset=dl19,dl20",
        f"+system={SYSTEMS}",
        "experiment_name=perfect",
        "progress=false",
        f"tracking_uri=sqlite:///{tmp}/mlflow.db",
        f"artifact_root={tmp}/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.sweep.dir={tmp}/multirun",
    ]
    for judge in (["judge=human"], ["judge=simulated", "judge.name=perfect", "judge.weight=0", "judge.noise=0"]):
        done = cli_runner.run([*common, *judge], cwd=tmp, env=env, timeout=600)
        assert done.rc == 0, str(done)
    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    return tmp, client


def _trec_rows(path: Path, columns: tuple[int, ...]) -> list[tuple[str, ...]]:
    return [tuple(line.split()[i] for i in columns) for line in path.read_text().splitlines() if line.strip()]


def _labelset_reference(dataset: str) -> dict[str, float]:
    """Mean nDCG@10 (judged only) of the two run-file systems against the human labels of the label set (BM25
    pool ∩ qrels), over every judged query, by tests/helpers/reference_impl.py straight from the shipped files."""
    from judgebench.data.trec_dl import SHIPPED
    from reference_impl import ndcg10_judged

    qrels = _trec_rows(SHIPPED / f"qrels.{dataset}-passage.txt", (0, 2, 3))
    pool = _trec_rows(SHIPPED / f"bm25.{dataset}.top100.trec", (0, 2, 3))
    in_pool = {(q, d) for q, d, _ in pool}
    label_set = [row for row in qrels if (row[0], row[1]) in in_pool]
    queries = sorted({q for q, _, _ in qrels})
    runs = {
        "BM25": pool,
        "RankGPT-gpt-3.5": _trec_rows(
            SHIPPED / f"reranker-runs/rankgpt-gpt-3.5-turbo.bm25top100.{dataset}.trec", (0, 2, 3)
        ),
    }
    out = {}
    for system, run in runs.items():
        per_query = ndcg10_judged(run, label_set, queries)
        out[system] = sum(per_query.values()) / len(queries)
    return out


def test_a_perfect_judge_reproduces_human_labelset_exactly(dl_grid):
    tmp, client = dl_grid
    rep = report_mod.build(client, "perfect", options=report_mod.Options(bootstrap=0, formats=("md",)))
    for dataset, t1 in rep.table1.items():
        # both columns against the textbook formula on the shipped files (not against evaluate() itself)
        for system, value in _labelset_reference(dataset).items():
            assert t1.at[system, "human_labelset"] == pytest.approx(value, abs=1e-9), (dataset, system)
            assert t1.at[system, "perfect"] == pytest.approx(value, abs=1e-9), (dataset, system)
        # gap 0 for every system: the perfect judge's column *is* the label-set reference
        assert (t1["perfect"] - t1["human_labelset"]).abs().max() < 1e-12, dataset
        # a run-file ranker reads another file per dataset and is still one system, under its own name
        assert "RankGPT-gpt-3.5" in t1.index and not any("#" in s for s in t1.index), list(t1.index)
        for system, value in HUMAN_TABLE1[dataset].items():
            assert t1.at[system, "human"] == pytest.approx(value, abs=1e-4), (dataset, system)
        # ... while the paper's all-qrels column differs from it (the Perfect oracle scores below 1 there)
        assert t1.at["Perfect", "human"] < t1.at["Perfect", "human_labelset"] == pytest.approx(1.0)
    t2 = rep.table2.set_index("dataset")
    assert set(t2["reference"]) == {"human_judged"}  # = human_labelset for a judge without failures
    assert t2["tau_all"].tolist() == [1.0, 1.0] and t2["tau_oracles"].tolist() == [1.0, 1.0]
    assert t2["kappa_graded"].tolist() == [1.0, 1.0]
    counts = rep.agreement_counts.set_index("dataset")
    assert (counts[["missed", "spurious", "reversed"]].to_numpy() == 0).all()
    assert counts["agree"].tolist() == [21, 21]  # every one of the C(7, 2) = 21 pairs, on both years
    gaps = rep.bias.filter(like="gap_")
    assert (gaps.abs().to_numpy() < 1e-12).all()


def test_the_paper_reference_is_one_option_away_and_named(dl_grid):
    tmp, client = dl_grid
    out = tmp / "report-human"
    uri = f"sqlite:///{tmp}/mlflow.db"
    assert (
        compare_main(
            ["experiment=perfect", f"tracking_uri={uri}", f"out={out}", "reference=human", "bootstrap=0", "log=false"]
        )
        == 0
    )
    t2 = pd.read_csv(out / "table2.csv")
    assert set(t2["reference"]) == {"human"}
    # against all qrels even a perfect judge shows a gap: BM25 and the oracles gain for nothing
    bias = pd.read_csv(out / "ranker_bias.csv").set_index("dataset")
    assert bias.at["dl19", "gap_oracle"] > 0 and bias.at["dl20", "gap_lexical"] > 0
    text = (out / "report.md").read_text()
    assert "Reference for every judge-vs-human statistic: **human**" in text
    assert compare_main(["experiment=perfect", f"tracking_uri={uri}", f"out={out}", "reference=nist"]) == 2


def test_a_user_pool_is_not_recorded_as_bm25(tmp_path):
    """Where a pool came from is recorded truthfully: only the standard TREC DL pool file is the known BM25 run."""
    from judgebench.data.trec_dl import load_trec_dl

    files = cli_runner.write_dataset(tmp_path / "mine")
    ds = load_trec_dl("dl19", 2019, **{k: str(v) for k, v in files.items()})
    assert ds.pool_provenance == {"ranker": "unknown", "depth": 100, "source": "file:pool.trec"}
    assert ds.summary()["pool_provenance"]["ranker"] == "unknown"
    standard = tmp_path / "std" / "bm25.dl19.top100.trec"
    standard.parent.mkdir()
    standard.write_text(files["pool"].read_text())
    ds = load_trec_dl("dl19", 2019, **{**{k: str(v) for k, v in files.items()}, "pool": str(standard)}, k1=1.2)
    # the file's own parameters, not the k1 asked of the bm25 ranker
    assert ds.pool_provenance["ranker"] == "bm25" and ds.pool_provenance["k1"] == 0.9 and ds.pool_provenance["b"] == 0.4
