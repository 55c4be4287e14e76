"""One grid cell through the pipeline, and a real `run.py -m` sweep read back by compare."""

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

from judgebench.compare.cli import main as compare_main
from judgebench.data.datasets import load_toy
from judgebench.data.trec import read_qrels, read_run
from judgebench.identity import run_tags
from judgebench.jobs.pipeline import run_job
from reference_impl import cohen_kappa, frame_rows, ndcg10_judged

REPO = Path(__file__).resolve().parents[2]


def cfg_for(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlruns/mlflow.db",
                f"artifact_root={tmp}/mlruns/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=unit",
                "sweep_id=s1",
                *overrides,
            ],
        )


def test_one_cell_logs_the_mlflow_contract(tmp_path):
    cfg = cfg_for(tmp_path, "ranker=oracle", "perturbation=swap_1", "judge=simulated")
    outcome = run_job(cfg)
    assert outcome.status == "finished" and outcome.system == "Swap[1]"

    client = MlflowClient(cfg.tracking_uri)
    run = client.get_run(outcome.run_id)
    assert run.info.status == "FINISHED"
    tags = run.data.tags
    assert (
        tags["ranker_type"] == "oracle"
        and tags["judge_family"] == "simulated-2024"
        and tags["ranker_family"] == "oracle"
        and tags["dataset"] == "toy"
    )
    assert tags["judgebench.sweep_id"] == "s1" and tags["text_view"] == "original"
    assert run.data.params["ranker.depth"] == "10" and run.data.params["judge.weight"] == "1.0"
    names = {a.path for a in client.list_artifacts(outcome.run_id)}
    assert {"run.trec", "judge_labels.csv", "per_query.csv", "config.yaml", "judge_qrels.txt"} <= names

    # the three logged means are the nDCG of the logged run under all qrels, the human labels of the label set
    # and the judge's logged labels, recomputed here by the textbook formula (tests/helpers/reference_impl.py)
    logged_run = read_run(Path(client.download_artifacts(outcome.run_id, "run.trec", str(tmp_path))))
    assert logged_run.groupby("query_id").size().max() == 10  # oracle emitted at depth 10
    judge_qrels = read_qrels(Path(client.download_artifacts(outcome.run_id, "judge_qrels.txt", str(tmp_path))))
    ds = load_toy()
    pool = set(zip(ds.pool["query_id"], ds.pool["doc_id"]))
    human = frame_rows(ds.qrels, "query_id", "doc_id", "relevance")
    labelset = [r for r in human if (r[0], r[1]) in pool]
    run_rows = frame_rows(logged_run, "query_id", "doc_id", "rank")
    for name, qrels in (
        ("human", human),
        ("human_labelset", labelset),
        ("judge", frame_rows(judge_qrels, "query_id", "doc_id", "relevance")),
    ):
        expected = ndcg10_judged(run_rows, qrels, ds.judged_queries())
        assert run.data.metrics[f"ndcg10_{name}"] == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12), (
            name
        )
    # judge-level statistics are not on the system's run but on the judge's summary run, logged once
    assert "kappa_graded" not in run.data.metrics and "label_set_size" not in run.data.metrics
    summary = client.get_run(tags["judgebench.judge_summary"])
    assert summary.data.tags["judgebench.kind"] == "judge_summary" and summary.data.tags["judge"] == "simulated"
    assert summary.data.metrics["label_set_size"] == len(labelset) == 241
    judged = dict(((q, d), r) for q, d, r in frame_rows(judge_qrels, "query_id", "doc_id", "relevance"))
    pairs = [(r[2], judged[(r[0], r[1])]) for r in labelset]
    assert summary.data.metrics["kappa_graded"] == pytest.approx(
        cohen_kappa([h for h, _ in pairs], [j for _, j in pairs]), abs=1e-12
    )

    # the same cell again is skipped (resume), unless forced
    assert run_job(cfg).status == "skipped-done"
    assert (
        run_job(cfg_for(tmp_path, "ranker=oracle", "perturbation=swap_1", "judge=simulated", "force=true")).status
        == "finished"
    )
    # the rerun's labels are the same: it found the judge summary instead of logging a second one
    exp = client.get_experiment_by_name("unit").experiment_id
    assert len(client.search_runs([exp], "tags.`judgebench.kind` = 'judge_summary'")) == 1


def test_non_oracle_ranker_skips_perturbed_duplicates(tmp_path):
    assert run_job(cfg_for(tmp_path, "ranker=simulated_llm", "perturbation=swap_2")).status == "skipped-duplicate"


def test_multirun_then_compare_reads_it_back(tmp_path):
    cmd = [
        sys.executable,
        str(REPO / "run.py"),
        "-m",
        "ranker=simulated_llm,oracle",
        "perturbation=perfect,swap_1,swap_1_2",
        "judge=human,simulated",
        "experiment_name=sweep",
        f"hydra.sweep.dir={tmp_path}/multirun",
        "progress=false",
        f"cache_dir={tmp_path}/cache",
    ]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    client = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    exp = client.get_experiment_by_name("sweep")
    runs = client.search_runs([exp.experiment_id], "tags.`judgebench.kind` = 'job'")
    assert len(runs) == 8  # 2 judges x (3 oracles + SimLLM); SimLLM x swaps skipped as duplicates
    summaries = client.search_runs([exp.experiment_id], "tags.`judgebench.kind` = 'judge_summary'")
    assert sorted(r.data.tags["judge"] for r in summaries) == ["human", "simulated"]  # once per judge, not per system
    assert {r.data.tags["system"] for r in runs} == {"Perfect", "Swap[1]", "Swap[1,2]", "SimLLM"}

    out = tmp_path / "report"
    assert compare_main(["experiment=sweep", f"tracking_uri=sqlite:///{tmp_path}/mlruns/mlflow.db", f"out={out}"]) == 0
    t1 = pd.read_csv(out / "table1_toy.csv", index_col="system")
    assert list(t1.columns) == ["type", "human", "human_labelset", "simulated"]
    # under humans the oracles beat the simulated LLM ranker; the biased judge inverts it
    assert t1.loc["Perfect", "human"] > t1.loc["SimLLM", "human"]
    assert t1.loc["SimLLM", "simulated"] > t1.loc["Perfect", "simulated"]
    assert t1.loc["Perfect", "human"] > t1.loc["Swap[1]", "human"] > t1.loc["Swap[1,2]", "human"]
    t2 = pd.read_csv(out / "table2.csv")
    assert t2.loc[0, "judge"] == "simulated" and t2.loc[0, "tau_oracles"] == pytest.approx(1.0)
    assert (out / "figure_ndcg_bars.png").stat().st_size > 10_000
    compare_runs = client.search_runs([exp.experiment_id], filter_string="tags.`judgebench.kind` = 'compare'")
    assert len(compare_runs) == 1
    # every tag of ours on every run (the sweep's parent, cells, judge summaries, compare) is declared in RunTags
    everything = client.search_runs([exp.experiment_id])
    (sweep,) = [r for r in everything if r.data.tags.get("judgebench.kind") == "sweep"]
    assert (sweep.data.tags["judgebench.cells"], sweep.data.tags["judgebench.failed"]) == ("12", "0")
    undeclared = {k for r in everything for k in r.data.tags if not k.startswith("mlflow.")} - run_tags.NAMES
    assert not undeclared, sorted(undeclared)
