"""A grid cell's config resolved once (jobs/cell.py): what it derives from the resolved tree is what the jobs
derived from the Hydra config before, so resume keys, ranking keys and run tags do not change."""

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from judgebench import input_digests, rankings
from judgebench.jobs import common
from judgebench.jobs.cell import resolve_cell, resolve_system
from judgebench.tracking import StoreSettings

REPO = Path(__file__).resolve().parents[1]


def composed(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(config_name="config", overrides=[
            f"tracking_uri=sqlite:///{tmp}/mlruns/mlflow.db", f"artifact_root={tmp}/artifacts", f"cache_dir={tmp}/cache",
            "experiment_name=unit", *overrides])


def cell_of(cfg):
    tree = OmegaConf.to_container(cfg, resolve=True)
    inputs = input_digests.JobInputs()
    return resolve_cell(tree, inputs, resolve_system(tree, inputs), lambda dataset: None)


@pytest.mark.parametrize("overrides", [
    ("ranker=oracle", "perturbation=swap_1", "judge=simulated", "sweep_id=s1"),
    ("ranker=rankt5", "judge=smollm2", "max_failed_share=0.25", "progress=false"),
    ("ranker=prp_gemini_flash", "judge=simulated_unbiased", "dry_run=true", "force=true"),
])
def test_the_cell_derives_what_the_config_gave(tmp_path, overrides):
    cfg = composed(tmp_path, *overrides)
    cell = cell_of(cfg)
    # the resume key as the job computed it from its DictConfig, with the same input files
    assert cell.config_hash == common.config_hash(cfg, cell.inputs.digests(cfg.cache_dir))
    assert cell.identity.hashes == common.identity_tags(cfg)
    assert cell.identity.sweep_id == common.sweep_id(cfg.get("sweep_id"))
    assert cell.identity.dataset_name == cfg.dataset.name
    old_model = next((str(v) for v in (OmegaConf.select(cfg, f"ranker.{k}", default=None)
                                       for k in ("model_spec.model", "backend.model", "model")) if v), "")
    assert cell.identity.ranker_model == old_model and bool(old_model) == ("ranker=oracle" not in overrides)
    assert cell.ranking.components.keys() == {"ranker", "perturbation", "rewriter"}
    for reads in (False, True):
        assert rankings.ranking_key(cell.ranking.components, cell.dataset, reads) == rankings.ranking_key(cfg, cell.dataset, reads)
    assert cell.settings.store == StoreSettings(cfg.tracking_uri, "unit", f"{tmp_path}/artifacts", bool(cfg.force))
    assert (cell.settings.dry_run, cell.settings.max_failed_share) == (bool(cfg.dry_run), float(cfg.max_failed_share))
    assert (cell.settings.stages.enabled, cell.ranking.force) == (bool(cfg.progress), bool(cfg.force))
    assert cell.ranking.cache_dir == cell.cache_dir == cfg.cache_dir

