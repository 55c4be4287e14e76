"""Two sweeps (or runs) started in the same second get two folders and two sweep ids; the cells of one share it."""

from __future__ import annotations

import re
from datetime import datetime

from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf

import cli_runner
from judgebench.config.config_dir import CONF_DIR

FROZEN = datetime(2026, 12, 5, 10, 0, 0)


def _sweep_dirs(n: int) -> tuple[list[str], list[str], list[str]]:
    """hydra.sweep.dir of ``n`` sweeps composed within one frozen second, the run dirs, and one sweep's cells' dirs."""
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            # after Hydra registered its own ${now:}: a clock frozen within one second
            OmegaConf.register_new_resolver(
                "now", lambda pattern: FROZEN.strftime(pattern), use_cache=True, replace=True
            )
            loader = GlobalHydra.instance().config_loader()
            masters = [
                loader.load_configuration(config_name="config", overrides=[], run_mode=RunMode.MULTIRUN)
                for _ in range(n)
            ]
            sweeps = [str(m.hydra.sweep.dir) for m in masters]
            runs = [
                str(loader.load_configuration(config_name="config", overrides=[], run_mode=RunMode.RUN).hydra.run.dir)
                for _ in range(n)
            ]
            cells = [
                str(loader.load_sweep_config(masters[0], [f"judge={j}"]).hydra.sweep.dir)
                for j in ("human", "simulated")
            ]
    finally:
        from hydra.core.utils import setup_globals

        setup_globals()  # Hydra's own ${now:} again
    return sweeps, runs, cells


def test_sweeps_and_runs_started_in_one_second_never_share_a_folder():
    sweeps, runs, cells = _sweep_dirs(20)
    assert len(set(sweeps)) == 20 and len(set(runs)) == 20
    assert all(s.startswith("multirun/2026-12-05/10-00-00") for s in sweeps), sweeps[:2]
    assert cells == [sweeps[0], sweeps[0]]  # every cell of a sweep is in that sweep's folder


def test_two_sweeps_started_together_have_two_ids(tmp_path):
    cli_runner.warm()
    children = [
        cli_runner.start(["-m", "judge=human", "dry_run=true", "progress=false"], cwd=tmp_path) for _ in range(2)
    ]
    done = [c.wait(300) for c in children]
    assert all(d.rc == 0 for d in done), [str(d) for d in done]
    dirs = [re.search(r"judgebench sweep: .*\((.*)\)", d.out + d.err).group(1) for d in done]
    assert len(set(dirs)) == 2, dirs
