"""A job's config resolved once (jobs/cell.py; RankCell, LabelsCell, ContentBiasCell for the jobs of other shapes):
what it derives from the resolved tree is what the jobs derived from the Hydra config before, so resume keys,
ranking keys and run tags do not change."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from judgebench import rankings
from judgebench.exceptions import ConfigError, UserError
from judgebench.identity import input_digests
from judgebench.jobs import common
from judgebench.jobs.cell import resolve_cell, resolve_system
from judgebench.jobs.content_bias import ContentBiasSpec, resolve_content_bias
from judgebench.jobs.labels_only import resolve_labels_cell
from judgebench.jobs.rank_job import resolve_rank_cell
from judgebench.tracking.mlflow_store import StoreSettings

REPO = Path(__file__).resolve().parents[2]


def composed(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlruns/mlflow.db",
                f"artifact_root={tmp}/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=unit",
                *overrides,
            ],
        )


def cell_of(cfg):
    tree = OmegaConf.to_container(cfg, resolve=True)
    inputs = input_digests.JobInputs()
    return resolve_cell(tree, inputs, resolve_system(tree, inputs), lambda dataset: None)


@pytest.mark.parametrize(
    "overrides",
    [
        ("ranker=oracle", "perturbation=swap_1", "judge=simulated", "sweep_id=s1"),
        ("ranker=rankt5", "judge=smollm2", "max_failed_share=0.25", "progress=false"),
        ("ranker=prp_gemini_flash", "judge=simulated_unbiased", "dry_run=true", "force=true"),
    ],
)
def test_the_cell_derives_what_the_config_gave(tmp_path, overrides):
    cfg = composed(tmp_path, *overrides)
    cell = cell_of(cfg)
    # the resume key as the job computed it from its DictConfig, with the same input files
    assert cell.config_hash == common.config_hash(cfg, cell.inputs.digests(cfg.cache_dir))
    assert cell.identity.hashes == common.identity_tags(cfg)
    assert cell.identity.sweep_id == common.sweep_id(cfg.get("sweep_id"))
    assert cell.identity.dataset_name == cfg.dataset.name
    old_model = next(
        (
            str(v)
            for v in (
                OmegaConf.select(cfg, f"ranker.{k}", default=None)
                for k in ("model_spec.model", "backend.model", "model")
            )
            if v
        ),
        "",
    )
    assert cell.identity.ranker_model == old_model and bool(old_model) == ("ranker=oracle" not in overrides)
    assert cell.ranking.components.keys() == {"ranker", "perturbation", "rewriter"}
    for reads in (False, True):
        assert rankings.ranking_key(cell.ranking.components, cell.dataset, reads) == rankings.ranking_key(
            cfg, cell.dataset, reads
        )
    assert cell.settings.store == StoreSettings(cfg.tracking_uri, "unit", f"{tmp_path}/artifacts", bool(cfg.force))
    assert (cell.settings.dry_run, cell.settings.max_failed_share) == (bool(cfg.dry_run), float(cfg.max_failed_share))
    assert (cell.settings.stages.enabled, cell.ranking.force) == (bool(cfg.progress), bool(cfg.force))
    assert cell.ranking.cache_dir == cell.cache_dir == cfg.cache_dir


def semantic_config(cfg, keys):
    """The part of the config a job logs and hashes, built from the DictConfig as the jobs built it before."""
    return OmegaConf.create(
        {
            k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k]) else cfg[k]
            for k in keys
            if k in cfg
        }
    )


@pytest.mark.parametrize(
    "overrides",
    [
        ("job=rank", "ranker=simulated_llm", "perturbation=perfect", "sweep_id=s2"),
        ("job=rank", "ranker=bm25", "force=true", "dry_run=true"),
    ],
)
def test_the_rank_cell_derives_what_the_config_gave(tmp_path, overrides):
    cfg = composed(tmp_path, *overrides)
    tree = OmegaConf.to_container(cfg, resolve=True)
    inputs = input_digests.JobInputs()
    cell = resolve_rank_cell(tree, inputs, resolve_system(tree, inputs))
    reads = cell.rewriter.view != "original" or cell.system.ranker.reads_texts(cell.dataset)
    assert cell.reads_texts == reads
    files = cell.inputs.digests(cfg.cache_dir, rankings.FILE_ROLES)
    assert cell.files == files
    key = rankings.ranking_key(cell.ranking.components, cell.dataset, cell.reads_texts, cell.files)
    assert key == rankings.ranking_key(cfg, cell.dataset, reads, files)  # the key the job computed from its DictConfig
    assert common.resolved(cell.logged) == common.resolved(
        semantic_config(cfg, ("job", "dataset", "ranker", "perturbation", "rewriter"))
    )
    assert cell.logged["job"] == "rank" and "judge" not in cell.logged
    assert cell.sweep_id == common.sweep_id(cfg.get("sweep_id"))
    assert cell.settings.store == StoreSettings(cfg.tracking_uri, "unit", f"{tmp_path}/artifacts", bool(cfg.force))
    assert (cell.settings.dry_run, cell.ranking.force, cell.ranking.cache_dir) == (
        bool(cfg.dry_run),
        bool(cfg.force),
        cfg.cache_dir,
    )


@pytest.mark.parametrize(
    "overrides",
    [
        ("job=labels_only", "judge=simulated", "sweep_id=s3"),
        ("job=labels_only", "judge=human", "max_failed_share=0.25", "dry_run=true", "progress=false"),
    ],
)
def test_the_labels_cell_derives_what_the_config_gave(tmp_path, overrides):
    cfg = composed(tmp_path, *overrides)
    cell = resolve_labels_cell(OmegaConf.to_container(cfg, resolve=True))
    old_used = semantic_config(cfg, ("job", "dataset", "judge", "max_failed_share"))
    assert cell.config_hash == common.config_hash(old_used, cell.inputs.digests(cfg.cache_dir))  # the resume key
    assert cell.config_hash != common.config_hash(cfg, cell.inputs.digests(cfg.cache_dir))  # not the whole config's
    assert cell.hashes == {k: v for k, v in common.identity_tags(cfg).items() if k != "system_hash"}
    assert cell.where == f"{cfg.dataset.name} / {cfg.judge.name}" and cell.sweep_id == common.sweep_id(
        cfg.get("sweep_id")
    )
    assert (cell.settings.dry_run, cell.settings.max_failed_share) == (bool(cfg.dry_run), float(cfg.max_failed_share))
    assert cell.settings.stages.enabled == bool(cfg.progress) and cell.cache_dir == cfg.cache_dir


def test_the_labels_cell_refuses_a_rewriter(tmp_path):
    with pytest.raises(UserError, match="rewriter=smollm2 is not used"):
        resolve_labels_cell(
            OmegaConf.to_container(composed(tmp_path, "job=labels_only", "rewriter=smollm2"), resolve=True)
        )


@pytest.mark.parametrize(
    "overrides",
    [
        ("content_bias.per_level=7", "content_bias.seed=3"),
        ("content_bias.injection=null", "max_failed_share=0.5", "dry_run=true"),
    ],
)
def test_the_content_bias_cell_derives_what_the_config_gave(tmp_path, monkeypatch, overrides):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    cfg = composed(
        tmp_path,
        "+experiment=content_bias",
        "experiment_name=unit",
        "rewriter=openai",
        "judge=simulated",
        "content_bias.score_with_ranker=false",
        *overrides,
    )
    cell = resolve_content_bias(OmegaConf.to_container(cfg, resolve=True))
    spec = cfg.content_bias
    assert cell.spec == ContentBiasSpec(int(spec.per_level), int(spec.seed), spec.get("injection"), False)
    assert (cell.spec.per_level, cell.spec.seed) == ((7, 3) if "content_bias.seed=3" in overrides else (500, 0))
    assert cell.scorer is None and cell.rewriter.name == "openai"
    assert cell.config_hash == common.config_hash(
        cfg, cell.inputs.digests(cfg.cache_dir)
    )  # the whole config, as before
    assert cell.config == OmegaConf.to_container(cfg, resolve=True) and cell.sweep_id == common.sweep_id(
        cfg.get("sweep_id")
    )
    assert cell.settings.store == StoreSettings(cfg.tracking_uri, "unit", f"{tmp_path}/artifacts", False)
    assert (cell.settings.dry_run, cell.settings.max_failed_share) == (bool(cfg.dry_run), float(cfg.max_failed_share))


def test_the_content_bias_cell_refuses_what_cannot_run(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    base = ("+experiment=content_bias", "experiment_name=unit", "judge=simulated")
    with pytest.raises(ConfigError, match="needs an LLM rewriter"):
        resolve_content_bias(OmegaConf.to_container(composed(tmp_path, *base, "rewriter=none"), resolve=True))
    with pytest.raises(ConfigError, match="ranker BM25 has no score_pairs"):
        resolve_content_bias(
            OmegaConf.to_container(composed(tmp_path, *base, "rewriter=openai", "ranker=bm25"), resolve=True)
        )
