"""One preflight per sweep: what does not depend on the cell is checked once, before the launcher starts any cell.

Why: each cell runs the preflight (checks/preflight.py) for itself, so a sweep of N cells without a key, or with a
retired model id, an unreachable server or a missing run file, said the same thing N times (a per-cell ERROR
line, Hydra's "Error executing job", the cell's ``judgebench: error:``, Hydra's HYDRA_FULL_ERROR hint and the
summary's CellError each time), after starting every cell (SLURM jobs included).

What is checked here, once per distinct part of the grid (the covering cells the sweeper composes anyway):

- every typed setting (checks/settings.py), as a cell would check it first;
- the input files a ranker or judge names (``ranker.path``, ``judge.path``): read by checks/input_checks.py;
- each API backend a grid cell or labels-only job would call, by the cell's own rule (preflight.check_cell:
  a backend whose every answer is cached is not checked, so a finished grid still reruns offline; a key,
  a retired model id, the server and the model are checked otherwise). Distinct (dataset, judge, rewriter,
  API ranker) parts are checked once; a dry run checks offline only (checks/offline_checks.py).

The first problem is one ``judgebench: error:`` line, exit 2, no cell started and nothing in MLflow (the store
and the sweep's parent run are opened only after this check: sweep_store.open_sweep_store). Anything that is not
a user's error (a bug, an unusual job)
is left to the cells, which report it as before: this check never stops a sweep that would have run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable

from omegaconf import DictConfig, OmegaConf

log = logging.getLogger("judgebench.sweep")

CHECKED_JOBS = ("grid_cell", "labels_only")  # rank and content_bias jobs check their backends in the cell


def _part(cfg: DictConfig, key: str) -> str:
    node = OmegaConf.select(cfg, key)
    return OmegaConf.to_yaml(node, resolve=False) if OmegaConf.is_config(node) else str(node)


def _calls_api(node) -> bool:
    """A ranker whose config has a backend: it calls a model (an API one is checked by the cell's rule)."""
    return node is not None and OmegaConf.select(node, "backend._target_", default=None) is not None


def _check_files(cfg: DictConfig) -> None:
    from judgebench.checks import input_checks

    input_checks.check_config_files(cfg)


def _check_backends(cfg: DictConfig) -> None:
    from hydra.utils import instantiate

    from judgebench.checks import preflight
    from judgebench.jobs.common import load_dataset
    from judgebench.llm.remote.gemini_models import refuse_retired

    kind = cfg.get("job", "grid_cell")
    if not _calls_api(cfg.get("judge")) and not _calls_api(cfg.get("rewriter")) and not _calls_api(cfg.get("ranker")):
        return  # no model API in this part: nothing to check (and nothing to load)
    judge = instantiate(cfg.judge)
    if kind == "labels_only":
        parts = {"judge": judge}
    else:
        parts = {
            "judge": judge,
            "rewriter": instantiate(cfg.rewriter),
            "ranker": instantiate(cfg.ranker) if _calls_api(cfg.ranker) else None,
        }
    backends = preflight.api_backends(**parts)
    if not backends:
        return
    if cfg.get("dry_run"):
        for role, backend in backends:
            refuse_retired(role, backend.backend, backend.model)
        return
    dataset = load_dataset(cfg.dataset)  # kept for the cells that run in this process
    if kind == "labels_only":
        preflight.check_labels(dataset, judge)
    else:
        preflight.check_cell(dataset, parts["judge"], parts["rewriter"], parts["ranker"])


def problem(configs: Iterable[DictConfig]) -> str | None:
    """The first user's error the sweep would meet in every cell that has it, as one line; None when none."""
    from hydra.core.hydra_config import HydraConfig

    seen: set[tuple[str, ...]] = set()
    saved = HydraConfig.instance().cfg
    try:
        for cfg in configs:
            HydraConfig.instance().set_config(cfg)  # as the launcher does for each job: ${hydra:...} resolves
            found = _cell_problem(cfg, seen)
            if found is not False:
                return found
    finally:
        if saved is not None:
            HydraConfig.instance().cfg = saved
    return None


def _cell_problem(cfg: DictConfig, seen: set[tuple[str, ...]]) -> str | None | bool:
    """One covering cell: its problem as a line, None to leave the sweep to the cells, False when it is fine."""
    from judgebench import errors, secrets
    from judgebench.checks import settings
    from judgebench.exceptions import UserError

    uri = OmegaConf.select(cfg, "tracking_uri", default=None, throw_on_resolution_failure=False)
    kind = str(cfg.get("job", "grid_cell"))
    if kind not in CHECKED_JOBS:
        return False
    try:
        secrets.refuse_secrets_in_config(cfg)
        settings.validate(cfg)
        files = ("files", _part(cfg, "ranker.path"), _part(cfg, "judge.path"), _part(cfg, "dataset"))
        if files not in seen:
            seen.add(files)
            _check_files(cfg)
        part = (
            "api",
            kind,
            _part(cfg, "dataset"),
            _part(cfg, "judge"),
            _part(cfg, "rewriter"),
            _part(cfg, "ranker") if _calls_api(cfg.get("ranker")) else "",
            str(bool(cfg.get("dry_run"))),
        )
        if part not in seen:
            seen.add(part)
            _check_backends(cfg)
    except UserError as exc:
        return errors.scrub(errors.user_message(exc, uri) or str(exc))
    except Exception as exc:  # not a user's error: the cells meet it and report it as they always did
        log.debug("sweep preflight left to the cells: %s", exc)
        return None
    return False


def _discard_parent_run() -> None:
    """The sweep's MLflow parent run, where one was started before the checks (a sweeper other than judgebench's
    opens none before them): deleted, since no cell started. MLflow is imported only when there is one."""
    from judgebench.cli.sweep_state import SWEEP

    SWEEP["pending"] = None
    run, SWEEP["parent"] = SWEEP["parent"], None
    if run is not None:
        from judgebench.tracking import job_run

        os.environ.pop(job_run.PARENT_ENV, None)
        try:
            run.client.delete_run(run.run_id)
        except Exception as exc:  # the one error line matters more
            log.debug("could not delete the sweep's parent run: %s", exc)


def check(configs: Iterable[DictConfig]) -> None:
    """Print the sweep's problem once and exit 2 before any cell starts; return when there is none."""
    from judgebench import errors

    if errors.hydra_full_error():  # the user asked for tracebacks: the cells give them
        return
    message = problem(configs)
    if message is None:
        return
    _discard_parent_run()
    errors.print_error(message + " (checked once for the sweep; no cell was started)", flush=True)
    raise SystemExit(errors.EXIT_CODE)
