"""A component's own setting beside a sweep over components: kept in the cells whose component has it, and one
line when none has it (the rule in docs/running.md, "Settings in a sweep")."""

from __future__ import annotations

import pytest
import yaml
from hydra import initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.types import RunMode
from omegaconf import OmegaConf

import cli_runner
from hydra_plugins.judgebench_sweeper import group_settings
from hydra_plugins.judgebench_sweeper.config_memo import MemoConfigRepository
from judgebench.cli import sweep_settings
from judgebench.config.config_dir import CONF_DIR

MODEL_SYSTEMS = {"rg_smollm2", "prp_smollm2", "rg_gemma3", "prp_gemma3"}  # the circularity systems that load a model
MODEL_JUDGES = {"smollm2", "gemma3"}


def _sweep(argv: list[str]):
    """Each cell's overrides as the covering sweeper hands them to the launcher, and each cell's composed config,
    through the config repository that the sweeper gives the launcher (each YAML file parsed once a sweep)."""
    rest = sweep_settings.defer(["run.py", "-m", *argv], CONF_DIR)[2:]
    with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
        loader = GlobalHydra.instance().config_loader()
        loader.repository = MemoConfigRepository.wrapping(loader.repository)  # as CoveringSweeper.setup does
        parser = OverridesParser.create(config_loader=loader)
        master = loader.load_configuration(
            config_name="config", overrides=[o for o in rest if "," not in o], run_mode=RunMode.MULTIRUN
        )
        params = [f"{k}={v}" for k, v in (master.hydra.sweeper.get("params") or {}).items()]
        chunks = BasicSweeper.split_arguments(parser.parse_overrides([*params, *rest]), None)
        compose = lambda cell: loader.load_sweep_config(master, list(cell))  # noqa: E731
        cells = [c for chunk in group_settings.applied(chunks, compose) for c in chunk]
        return cells, [compose(c) for c in cells]


def _choice(cell: list[str], group: str) -> str:
    return next(o.partition("=")[2] for o in cell if o.lstrip("+").startswith(f"{group}="))


def test_the_documented_gpu_recipe_of_the_circularity_grid_sets_the_device_where_a_model_is_loaded():
    cells, configs = _sweep(
        ["+experiment=circularity", "ranker.model_spec.device=cuda", "judge.model_spec.device=cuda"]
    )
    assert len(cells) == 33
    for cell, cfg in zip(cells, configs):
        system, judge = _choice(cell, "system"), _choice(cell, "judge")
        assert ("ranker.model_spec.device=cuda" in cell) == (system in MODEL_SYSTEMS), cell
        assert ("judge.model_spec.device=cuda" in cell) == (judge in MODEL_JUDGES), cell
        if system in MODEL_SYSTEMS:
            assert cfg.ranker.model_spec.device == "cuda"
        if judge in MODEL_JUDGES:
            assert cfg.judge.model_spec.device == "cuda"
        else:
            assert "model_spec" not in cfg.judge


@pytest.mark.parametrize(
    "argv, key, value, holders",
    [
        (
            ["judge=gemini_pro,gemini_flash", "judge.backend.max_retries=2"],
            "judge.backend.max_retries",
            2,
            {"gemini_pro", "gemini_flash"},
        ),
        (["judge=human,gemini_flash", "judge.backend.max_retries=7"], "judge.backend.max_retries", 7, {"gemini_flash"}),
        (["judge=simulated,human", "judge.noise=0.5"], "judge.noise", 0.5, {"simulated"}),
        # one judge's own server beside the human judge (the case: ++ would have added it to human too)
        (
            ["judge=human,gemini_flash", "judge.base_url=http://127.0.0.1:9"],
            "judge.base_url",
            "http://127.0.0.1:9",
            {"gemini_flash"},
        ),
    ],
)
def test_a_setting_beside_a_list_of_judges_goes_to_the_judges_that_have_it(argv, key, value, holders):
    cells, configs = _sweep(argv)
    assert len(cells) == 2
    for cell, cfg in zip(cells, configs):
        held = _choice(cell, "judge") in holders
        assert (f"{key}={argv[1].partition('=')[2]}" in cell) == held
        if held:
            assert OmegaConf.select(cfg, key) == value


def test_a_setting_no_member_has_is_one_line_and_the_sweep_runs_nothing(tmp_path):
    cli_runner.warm()
    res = cli_runner.run(
        [
            "-m",
            "judge=human,simulated",
            "judge.backend.max_retries=2",
            "dry_run=true",
            f"hydra.sweep.dir={tmp_path}/sweep",
        ],
        cwd=tmp_path,
    )
    assert res.rc == 2, str(res)
    (line,) = res.error_lines
    assert "judge.backend.max_retries" in line and "human, simulated" in line and "+judge.backend.max_retries" in line
    assert "Traceback" not in res.err and not (tmp_path / "sweep" / "0").exists()


def test_the_sweep_runs_with_the_setting_in_the_cells_that_have_it(tmp_path):
    cli_runner.warm()
    res = cli_runner.run(
        ["-m", "judge=human,simulated", "judge.noise=0.9", "dry_run=true", f"hydra.sweep.dir={tmp_path}/sweep"],
        cwd=tmp_path,
    )
    assert res.rc == 0, str(res)
    got = {}
    for n in (0, 1):
        cfg = yaml.safe_load((tmp_path / "sweep" / str(n) / ".hydra" / "config.yaml").read_text())
        got[n] = cfg["judge"].get("noise")
    assert sorted(got.values(), key=str) == [0.9, None]


def test_sentence_a_key_under_a_null_setting_is_named_as_such_not_unknown():
    """irds's ``local`` exists, null by default: ``dataset.local.docs=`` in a sweep names it and says how to set it."""
    with pytest.raises(ValueError) as e:
        _sweep(["dataset=irds", "dataset.id=x/y", "dataset.local.docs=docs.tsv", "judge=human,simulated"])
    assert str(e.value) == (
        "dataset.local.docs: dataset.local is a setting of dataset irds, null by default, so it has no key "
        "'docs' yet; set it whole in one argument, e.g. \"dataset.local={docs: VALUE, ...}\""
    )
