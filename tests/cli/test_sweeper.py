"""The default sweeper checks fewer configs up front, yet every override value of the sweep in at least one."""

import itertools

import yaml

from hydra_plugins.judgebench_sweeper import covering


def test_covering_checks_every_value_once_not_every_cell():
    systems = [f"+system=s{i}" for i in range(10)]
    seeds = [f"judge.seed={j}" for j in range(100)]
    batch = [list(c) for c in itertools.product(seeds, systems)]  # seeds outer, systems inner
    chosen = covering(batch)
    assert chosen[0] == batch[0] and all(c in batch for c in chosen)
    assert set(systems) | set(seeds) == {o for c in chosen for o in c}  # a bad value anywhere is still composed
    # the first seed's 10 cells bring a new system each, every later seed one new value: 10 + 99 cells of 1,000
    assert len(chosen) == 109


def test_covering_keeps_a_single_cell_and_a_repeated_one_once():
    assert covering([["a=1"]]) == [["a=1"]]
    assert covering([[], []]) == [[]]  # no overrides: the one config is still composed
    assert covering([["a=1", "b=2"], ["a=1", "b=2"], ["b=2", "a=1"]]) == [["a=1", "b=2"]]


def _compose_all(cells, memo: bool):
    """Each cell's config as Hydra composes it for a sweep (load_sweep_config), as YAML, and the config files parsed
    (the sweep's own config too)."""
    from unittest import mock

    from hydra import initialize_config_dir
    from hydra._internal.config_repository import ConfigRepository
    from hydra.core.global_hydra import GlobalHydra
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from hydra_plugins.judgebench_sweeper.config_memo import MemoConfigRepository
    from judgebench.config.config_dir import CONF_DIR

    parsed = []
    real = ConfigRepository.load_config
    with (
        initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"),
        mock.patch.object(
            ConfigRepository,
            "load_config",
            lambda self, config_path: parsed.append(config_path) or real(self, config_path),
        ),
    ):
        loader = GlobalHydra.instance().config_loader()
        if memo:
            loader.repository = MemoConfigRepository.wrapping(loader.repository)
        master = loader.load_configuration(config_name="config", overrides=[], run_mode=RunMode.MULTIRUN)
        return [OmegaConf.to_yaml(loader.load_sweep_config(master, list(c))) for c in cells], parsed


def test_the_config_memo_composes_the_configs_hydra_composes_and_parses_each_file_once():
    # value overrides, group overrides and a cell that edits a nested value: a memo that handed out shared
    # objects would carry one cell's edit into the next cell's config
    cells = [
        ["+system=bm25", "judge=simulated", "judge.seed=1"],
        ["+system=oracle_swap_1", "judge=simulated", "judge.seed=2"],
        ["+system=bm25", "judge=human"],
        ["+system=bm25", "judge=simulated", "judge.seed=1"],
        ["+system=simulated_llm", "judge=simulated_unbiased", "dataset=toy"],
        ["+system=bm25", "judge=simulated"],
    ]
    plain, plain_parsed = _compose_all(cells, memo=False)
    memo, memo_parsed = _compose_all(cells, memo=True)
    assert memo == plain
    seeds = [yaml.safe_load(c)["judge"].get("seed") for c in plain]
    assert seeds[:2] == [1, 2] and seeds[3] == 1 and plain[0] == plain[3] and seeds[5] not in (1, 2)
    assert sorted(memo_parsed) == sorted(set(plain_parsed))  # each file the sweep reads, parsed once
    assert len(plain_parsed) > 2 * len(set(plain_parsed))  # Hydra alone re-parses them for every cell
