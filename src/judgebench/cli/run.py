"""`judgebench run [-m] key=value ...`: the Hydra entry point (one job = one grid cell).

The config groups ship inside the package (``judgebench/conf``), so the same command works from a clone
(``python run.py`` there is a thin wrapper over :func:`cli`) and from a wheel install in any directory.
Outputs (``mlruns/``, ``multirun/``, ``outputs/``, ``.cache/judgebench``) go to the working directory;
inputs (configs, the toy data, the TREC DL files) are read from the package.

Errors the user must fix (a bad setting or input file, a missing API key, an unusable cache, a cell
with too many failed calls, an unreachable tracking server) print one line, ``judgebench: error:
<message>``, on stderr and exit with code 2, without a traceback; ``--verbose`` (anywhere on the command
line) or JUDGEBENCH_VERBOSE=1 or HYDRA_FULL_ERROR=1 show it. In a multirun a failed cell is recorded
and the sweep goes on with the other cells, then exits 2, whatever failed. Ctrl-C: one line, exit 130. See errors.py.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import hydra
from omegaconf import DictConfig

from judgebench import errors, secrets
from judgebench.checks import cli_checks
from judgebench.cli import override_errors, sweep_settings
from judgebench.config.config_dir import CONF_DIR
from judgebench.exceptions import NoSystems, SecretInConfig, UserError
from judgebench.identity import NON_SEMANTIC

JOBS = ("grid_cell", "rank", "content_bias", "labels_only", "import_results")
_STATUSES: list[str] = []  # outcomes of the cells run in this process (the basic launcher runs them all here)


def job(cfg: DictConfig) -> str:
    """One Hydra job. A plain module-level function, so that submitit (SLURM, local_parallel) pickles it
    by reference and the job process imports it from the installed package."""
    secrets.install_log_scrubbing()  # also in jobs started elsewhere (SLURM), which never run cli()
    try:
        return _dispatch(cfg)
    except KeyboardInterrupt:
        from judgebench.cli import hydra_callbacks

        hydra_callbacks.record_interrupted()
        errors.interrupted(errors.sweep_cell()[1] or None)
        raise


# The package's conf/ as a directory (Hydra's pkg:// source wants conf/ to be an importable module).
main = hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")(job)


def _dispatch(cfg: DictConfig) -> str:
    with errors.reported(cfg.get("tracking_uri")):
        secrets.refuse_secrets_in_config(cfg)
        from judgebench.checks import settings

        kind = cfg.get("job", "grid_cell")
        if kind not in JOBS:
            raise UserError(f"job={kind}: expected one of {', '.join(JOBS)}")
        settings.validate(cfg)  # every typed setting, before any work
        from judgebench.checks import input_checks

        input_checks.check_config_files(cfg)  # run files and qrels, before the heavy imports and the MLflow store
        if cfg.get("dry_run"):
            from judgebench.checks import offline_checks

            offline_checks.go_offline()  # no model download, no server asked (checks/offline_checks.py)
        if kind == "content_bias":
            from judgebench.jobs.content_bias import run_content_bias

            status = run_content_bias(cfg).status
        elif kind == "rank":
            from judgebench.jobs.rank_job import run_rank

            status = run_rank(cfg).status
        elif kind == "import_results":
            from judgebench.jobs.import_results import run_import

            status = run_import(cfg).status
        elif kind == "labels_only":
            from judgebench.jobs.labels_only import run_labels_only

            status = run_labels_only(cfg).status
        else:
            from judgebench.jobs.pipeline import run_job

            status = run_job(cfg).status
        _STATUSES.append(status)
        if status == "skipped-duplicate" and not errors.sweep_cell()[0]:
            raise NoSystems(
                f"{cfg.ranker.name} x {cfg.perturbation.name} evaluates no system: perturbations apply to oracle "
                "rankers only (use ranker=oracle, perturbation=perfect, or set ranker.perturbable=true)"
            )
        return status


def _no_systems_in_sweep() -> str | None:
    """After a multirun: a message when no cell evaluated a system (every cell a skipped duplicate)."""
    from judgebench.cli import sweep_records, sweep_state

    directory = sweep_state.SWEEP.get("dir")
    statuses = [r["status"] for r in sweep_records.read_records(directory)] if directory else []
    statuses = statuses or _STATUSES
    if statuses and all(s == "skipped-duplicate" for s in statuses):
        return (
            f"no cell of this sweep evaluates a system: all {len(statuses)} cells cross a ranker that is not "
            "perturbable with a perturbation (perturbations apply to oracle rankers only; add ranker=oracle or "
            "perturbation=perfect, or set ranker.perturbable=true)"
        )
    return None


def _failed_sweep() -> str | None:
    """After a multirun started: its first failed cell as one line ("the sweep failed" without a record);
    None when no sweep started."""
    from judgebench.cli import sweep_records, sweep_state

    directory = sweep_state.SWEEP.get("dir")
    if directory is None:
        return None
    for r in sweep_records.read_records(directory):
        if sweep_records.category(r["status"]) == "failed":
            shown = " ".join(o for o in r["overrides"] if o.partition("=")[0].lstrip("+~") not in NON_SEMANTIC)
            return f"cell #{r['num']} ({shown or 'no overrides'}): {r.get('error') or r['status']}"
    return "the sweep failed"


def cli(argv: Sequence[str] | None = None) -> int:
    """Checks made before Hydra starts, then Hydra (which reads sys.argv), then the exit code."""
    secrets.install_log_scrubbing()
    errors.count_stored_answers_from_now()
    args = list(sys.argv[1:] if argv is None else argv)
    sys.argv = errors.strip_verbose([sys.argv[0], *args])
    try:
        secrets.refuse_secret_overrides(sys.argv[1:])
    except SecretInConfig as exc:  # before Hydra writes anything: one line, exit 2
        errors.print_error(str(exc))
        return errors.EXIT_CODE
    cli_checks.unset_empty_env()
    cli_checks.refuse_unknown_options(sys.argv[1:], CONF_DIR)
    sys.argv = sweep_settings.defer(sys.argv, CONF_DIR)  # a sweep's per-component settings: applied by the sweeper
    override_errors.report_hydra_errors()  # Hydra's own errors (a misspelt key) as one line, exit 2
    try:
        main()
    except SystemExit as exc:
        raise SystemExit(errors.exit_code(exc, _failed_sweep())) from None
    except KeyboardInterrupt:  # Ctrl-C: one line (what stopped, what is kept, how to resume), exit 130
        errors.interrupted()
        return errors.INTERRUPTED_CODE
    message = _no_systems_in_sweep()
    if message:
        errors.print_error(message)
        return errors.EXIT_CODE
    return 0


if __name__ == "__main__":  # python -m judgebench.cli.run: run the package's module, not this __main__ copy of it
    from judgebench.cli.run import cli as _cli

    raise SystemExit(_cli())
