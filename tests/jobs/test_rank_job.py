"""Rank once, judge many: each ranking is computed once, every judge's cell reads back the same bytes.

The prompt counts are worked out here from the toy pool (one RG prompt per (query, passage) of the
re-ranked head; one PRP prompt per ordered pair of it), not read from the code under test.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

import cli_runner
from judgebench import rankings
from judgebench.data.trec_dl import load_trec_dl
from judgebench.jobs import pipeline
from rank_once import DEPTH, expected_prompts, run_artifact_bytes
from tiny_models import tiny_causal

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return tiny_causal(tmp_path_factory.mktemp("tiny"))


def _cfg(tmp: Path, tiny: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlflow.db",
                f"artifact_root={tmp}/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=once",
                "progress=false",
                "ranker=rg_smollm2",
                f"ranker.model_spec.model={tiny}",
                f"ranker.rerank_depth={DEPTH}",
                *overrides,
            ],
        )


# The sweeps below run in fresh interpreters: a fork of this process after torch ran a model in it can hang.


def test_the_second_judge_reads_the_ranking_back(tmp_path_factory, tiny):
    tmp = cli_runner.warm_store(tmp_path_factory)
    first = pipeline.run_job(_cfg(tmp, tiny, "judge=human"))
    second = pipeline.run_job(_cfg(tmp, tiny, "judge=simulated"))
    assert first.metrics["ranking_computed"] == 1 and first.metrics["ranker_prompts_scored"] == expected_prompts("rg")
    assert second.metrics["ranking_computed"] == 0 and second.metrics["ranker_prompts_scored"] == 0
    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    assert run_artifact_bytes(client, first.run_id) == run_artifact_bytes(client, second.run_id)
    key = client.get_run(first.run_id).data.tags["judgebench.ranking_key"]
    assert client.get_run(second.run_id).data.tags["judgebench.ranking_key"] == key
    assert (tmp / "cache" / "rankings" / f"{key}.trec").read_bytes() == run_artifact_bytes(client, first.run_id)
    # the same system on another pool is another ranking (the key holds the dataset's fingerprint, not its name)
    cfg = _cfg(tmp, tiny, "judge=human")
    full, half = load_trec_dl("dl19", 2019), load_trec_dl("dl19", 2019, pool_depth=50)
    assert rankings.ranking_key(cfg, full, False) != rankings.ranking_key(cfg, half, False)
    assert rankings.ranking_key(cfg, full, False) == rankings.ranking_key(cfg, load_trec_dl("dl19", 2019), False)


@pytest.mark.slow  # ~60 s: three sweeps in fresh interpreters, RG and PRP
def test_job_rank_then_the_grid_spends_nothing_and_mlflow_fills_an_empty_store(tmp_path, tiny):
    common = [
        f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"artifact_root={tmp_path}/artifacts",
        "experiment_name=stages",
        "progress=false",
        f"++ranker.model_spec.model={tiny}",
        f"++ranker.rerank_depth={DEPTH}",
    ]
    gpu = [*common, f"cache_dir={tmp_path}/gpu-cache", f"hydra.sweep.dir={tmp_path}/rank"]
    done = cli_runner.run(
        ["-m", "job=rank", "ranker=rg_smollm2,prp_smollm2", *gpu], cwd=tmp_path, timeout=600, fresh=True
    )
    assert done.rc == 0, str(done)
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.get_experiment_by_name("stages").experiment_id
    ranked = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'ranking'")
    scored = {r.data.tags["ranker"]: r.data.metrics["ranker_prompts_scored"] for r in ranked}
    assert scored == {"RG-SmolLM2": expected_prompts("rg"), "PRP-SmolLM2": expected_prompts("prp")}
    # the judging stage on "another machine": its own, empty cache dir; the rankings come from the MLflow runs
    cpu = [*common, f"cache_dir={tmp_path}/cpu-cache", f"hydra.sweep.dir={tmp_path}/judge"]
    done = cli_runner.run(
        ["-m", "ranker=rg_smollm2,prp_smollm2", "judge=human,simulated", *cpu], cwd=tmp_path, timeout=600, fresh=True
    )
    assert done.rc == 0, str(done)
    cells = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'job'")
    assert len(cells) == 4 and all(
        r.data.metrics["ranking_computed"] == 0 and r.data.metrics["ranker_prompts_scored"] == 0 for r in cells
    )
    by_key = {r.data.tags["judgebench.ranking_key"]: r.info.run_id for r in ranked}
    for r in cells:
        assert run_artifact_bytes(client, r.info.run_id) == run_artifact_bytes(
            client, by_key[r.data.tags["judgebench.ranking_key"]]
        )
        assert r.data.tags["ranker_family"] == "smollm"
    # PRP's order statistics travel with the ranking: logged by the rank job, read back from MLflow on the judging
    # machine, logged by both of its cells (there is no local store there to hold them)
    ranks = {r.data.tags["judgebench.ranking_key"]: r.data.metrics for r in ranked}
    prp = [r for r in cells if r.data.tags["ranker"] == "PRP-SmolLM2"]
    pairs = 12 * DEPTH * (DEPTH - 1) // 2  # every unordered pair of each query's head
    for r in prp:
        own = ranks[r.data.tags["judgebench.ranking_key"]]
        assert own["prp_pairs"] == pairs and 0 <= own["prp_order_consistency"] <= 1
        for name in ("prp_pairs", "prp_order_consistency", "prp_first_position"):
            assert r.data.metrics[name] == own[name], name
    assert len(prp) == 2 and not any(
        "prp_pairs" in r.data.metrics for r in cells if r.data.tags["ranker"] == "RG-SmolLM2"
    )
    # a rerun of the ranking stage finds everything done
    again = cli_runner.run(
        ["-m", "job=rank", "ranker=rg_smollm2,prp_smollm2", *gpu], cwd=tmp_path, timeout=600, fresh=True
    )
    assert again.rc == 0 and "2 cells - 0 ran, 2 skipped" in again.out, str(again)


def test_an_unwritable_rankings_folder_is_said_before_ranking_and_the_cell_still_finishes(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "rankings").write_text("not a folder")
    res = cli_runner.run(
        [
            "ranker=bm25",
            "judge=human",
            "progress=false",
            f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
            f"artifact_root={tmp_path}/artifacts",
            f"cache_dir={cache}",
            f"hydra.run.dir={tmp_path}/out",
        ],
        cwd=tmp_path,
    )
    assert res.rc == 0, str(res)
    log = res.out + res.err
    warned = next(line for line in log.splitlines() if "rankings is not writable" in line)
    assert f"cache {cache / 'rankings'} is not writable" in warned and "other cells will compute it again" in warned
    assert log.index("rankings is not writable") < log.index("not stored in")  # said before ranking, not only after
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    (run,) = client.search_runs(
        [client.get_experiment_by_name("judgebench").experiment_id], "tags.`judgebench.kind` = 'job'"
    )
    assert run.info.status == "FINISHED" and run.data.metrics["ranking_computed"] == 1
