"""The content-bias experiment end to end: rewriter and judge on the fake server, a tiny local ranker."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from judgebench.content_bias.statistics import label_distribution
from judgebench.jobs.content_bias import balanced_sample
from judgebench.testing.fake_process import FakeLLMServer
from tiny_models import tiny_causal

REPO = Path(__file__).resolve().parents[2]


def test_balanced_sample_takes_n_per_level_or_all_with_a_fixed_seed():
    ls = pd.DataFrame(
        {"query_id": "q", "doc_id": [f"d{i}" for i in range(20)], "relevance": [0] * 10 + [1] * 6 + [2] * 3 + [3] * 1}
    )
    s = balanced_sample(ls, 4, seed=1)
    assert s["relevance"].value_counts().sort_index().to_dict() == {0: 4, 1: 4, 2: 3, 3: 1}
    assert s.equals(balanced_sample(ls, 4, seed=1)) and not s.equals(balanced_sample(ls, 4, seed=2))


def test_label_distribution_counts_per_view_and_level():
    sample = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "relevance": [0, 0, 3]})
    orig = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "relevance": [0, 1, 3]})
    rew = pd.DataFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "relevance": [2, 2, 3]})
    d = label_distribution(sample, orig, rew).set_index(["view", "human"])
    assert d.loc[("original", 0)].tolist() == [1, 1, 0, 0] and d.loc[("rewritten", 0)].tolist() == [0, 0, 2, 0]
    assert d.loc[("rewritten", 3)].tolist() == [0, 0, 0, 1]


@pytest.mark.slow  # ~45 s: the content-bias job end to end (rewriter, judge, statistics, figures)
def test_content_bias_job_on_toy_with_fake_api_judge_and_rewriter(tmp_path):
    tiny = tiny_causal(tmp_path / "models")
    with FakeLLMServer(labels={"In other words": 3}) as srv:  # the fake judge rates every rewritten passage 3
        env = {**os.environ, "OPENAI_API_KEY": "k", "JUDGEBENCH_CACHE_DIR": str(tmp_path / "cache")}
        cmd = [
            sys.executable,
            str(REPO / "run.py"),
            "+experiment=content_bias",
            "rewriter=openai",
            f"rewriter.base_url={srv.openai_base_url}",
            "judge=gpt_4o_mini",
            f"judge.base_url={srv.openai_base_url}",
            "ranker=rg_smollm2",
            f"ranker.model_spec.model={tiny}",
            "content_bias.per_level=5",
            "progress=false",
            "hydra.run.dir=" + str(tmp_path / "out"),
        ]
        done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        first = srv.stats()["requests"]
        again = subprocess.run(
            [*cmd, "experiment_name=content_bias_again"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode == 0 and srv.stats()["requests"] == first  # the rerun makes no call
    client = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    run = client.search_runs([client.get_experiment_by_name("content_bias").experiment_id])[0]
    m = run.data.metrics
    assert m["labels_n"] == 20 and m["labels_mean_rewritten"] == 3.0 and m["labels_mean_original"] < 3.0
    assert m["labels_share_raised"] > 0 and m["labels_share_lowered"] == 0 and m["perfect_ndcg10_n"] == 12
    assert m["scores_n"] == 20 and m["injection_pairs"] == 5
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {
        "rewrites.tsv",
        "label_distribution.csv",
        "figure_label_distribution.png",
        "figure_score_differences.png",
        "scores.tsv",
    } <= names
    rewrites = pd.read_csv(client.download_artifacts(run.info.run_id, "rewrites.tsv", str(tmp_path)), sep="\t")
    assert rewrites["rewritten"].str.startswith("In other words: ").all()
    assert run.data.tags["text_view"] == "rewritten:openai"
    # every file its components opened is in its digests: the toy dataset's four files and the judge's prompt
    import hashlib

    from judgebench.data.datasets import TOY_DIR
    from judgebench.llm.prompts import PACKAGED

    digests = json.loads(
        Path(client.download_artifacts(run.info.run_id, "input_digests.json", str(tmp_path / "dg"))).read_text()
    )
    toy, prompt = Path(str(TOY_DIR)), Path(str(PACKAGED)) / "umbrela_bing.txt"
    expected = {f"dataset/{n}": toy / n for n in ("topics.tsv", "qrels.txt", "pool.trec", "corpus.jsonl")}
    expected["judge/umbrela_bing.txt"] = prompt
    assert digests == {
        k: {"sha256": hashlib.sha256(p.read_bytes()).hexdigest(), "path": str(p)} for k, p in expected.items()
    }


def test_a_finished_content_bias_job_is_skipped_on_rerun(tmp_path, monkeypatch):
    """The content-bias job runs in the job skeleton: a rerun with the same resume key finds its FINISHED run and
    does no work (its designs are not computed again, the rewriter's server is not asked, no second run is logged);
    a dry run finds it too; another seed is another job."""
    from hydra import compose, initialize_config_dir

    from judgebench.jobs import content_bias

    work = []
    distribution = content_bias.label_distribution
    # design (1), which only the work computes
    monkeypatch.setattr(content_bias, "label_distribution", lambda *a: work.append(1) or distribution(*a))
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with FakeLLMServer() as srv:

        def run(*overrides):
            with initialize_config_dir(config_dir=str(REPO / "src" / "judgebench" / "conf"), version_base="1.3"):
                cfg = compose(
                    config_name="config",
                    overrides=[
                        "+experiment=content_bias",
                        "judge=simulated",
                        "rewriter=openai",
                        f"rewriter.base_url={srv.openai_base_url}",
                        "content_bias.score_with_ranker=false",
                        "content_bias.per_level=3",
                        "progress=false",
                        "experiment_name=cb",
                        f"tracking_uri=sqlite:///{tmp_path}/mlruns/mlflow.db",
                        f"artifact_root={tmp_path}/artifacts",
                        f"cache_dir={tmp_path}/cache",
                        *overrides,
                    ],
                )
            return content_bias.run_content_bias(cfg)

        first = run()
        asked = srv.stats()["requests"]
        again, dry = run(), run("dry_run=true")
        assert srv.stats()["requests"] == asked > 0 and len(work) == 1
        other = run("content_bias.seed=1")
    client = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    runs = client.search_runs([client.get_experiment_by_name("cb").experiment_id])
    assert first.status == "finished"
    assert (again.status, again.run_id) == (dry.status, dry.run_id) == ("skipped-done", first.run_id)
    assert other.status == "finished" and len(work) == 2
    assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED"]
    assert {r.info.run_id for r in runs} == {first.run_id, other.run_id}
    assert len({r.data.tags["judgebench.config_hash"] for r in runs}) == 2  # the seed is in the resume key
