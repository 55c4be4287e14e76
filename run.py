"""Hydra entry point: python run.py [-m] key=value ... (one job = one grid cell).

Errors the user must fix (a bad setting or input file, a missing API key, an unusable cache, a cell
with too many failed calls, an unreachable tracking server) print one line, ``judgebench: error:
<message>``, on stderr and exit with code 2, without a traceback; ``--verbose`` (anywhere on the command
line) or JUDGEBENCH_VERBOSE=1 or HYDRA_FULL_ERROR=1 show it. In a multirun a failed cell is recorded
and the sweep goes on with the other cells, then exits 2. See src/judgebench/errors.py.
"""

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from judgebench import cli_checks, errors, masking
from judgebench.exceptions import NoSystems, UserError

JOBS = ("grid_cell", "content_bias", "labels_only")
_STATUSES: list[str] = []  # outcomes of the cells run in this process (the basic launcher runs them all here)


@hydra.main(config_path="conf", config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> str:
    masking.install_log_scrubbing()  # also in jobs started elsewhere (SLURM), which never run the __main__ block
    try:
        return _job(cfg)
    except KeyboardInterrupt:
        from judgebench import hydra_callbacks

        hydra_callbacks.record_interrupted()
        errors.interrupted(errors.sweep_cell()[1] or None)
        raise


def _job(cfg: DictConfig) -> str:
    with errors.reported(cfg.get("tracking_uri")):
        errors.refuse_secrets_in_config(cfg)
        from judgebench import settings

        kind = cfg.get("job", "grid_cell")
        if kind not in JOBS:
            raise UserError(f"job={kind}: expected one of {', '.join(JOBS)}")
        settings.validate(cfg)  # every typed setting, before any work
        if kind == "content_bias":
            from judgebench.content_bias.job import run_content_bias

            status = run_content_bias(cfg).status
        elif kind == "labels_only":
            from judgebench.labels_only import run_labels_only

            status = run_labels_only(cfg).status
        else:
            from judgebench.pipeline import run_job

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
    from judgebench import hydra_callbacks

    directory = hydra_callbacks._SWEEP.get("dir")
    statuses = [r["status"] for r in hydra_callbacks.read_records(directory)] if directory else []
    statuses = statuses or _STATUSES
    if statuses and all(s == "skipped-duplicate" for s in statuses):
        return (
            f"no cell of this sweep evaluates a system: all {len(statuses)} cells cross a ranker that is not "
            "perturbable with a perturbation (perturbations apply to oracle rankers only; add ranker=oracle or "
            "perturbation=perfect, or set ranker.perturbable=true)"
        )
    return None


if __name__ == "__main__":
    masking.install_log_scrubbing()
    errors.count_stored_answers_from_now()
    sys.argv = errors.strip_verbose(sys.argv)
    errors.refuse_secret_overrides(sys.argv[1:])
    cli_checks.unset_empty_env()
    cli_checks.refuse_unknown_options(sys.argv[1:], Path(__file__).resolve().parent / "conf", errors.PREFIX, errors.EXIT_CODE)
    try:
        main()
    except SystemExit as exc:
        sys.exit(errors.exit_code(exc))
    except KeyboardInterrupt:  # Ctrl-C: one line (what stopped, what is kept, how to resume), exit 130
        errors.interrupted()
        sys.exit(errors.INTERRUPTED_CODE)
    message = _no_systems_in_sweep()
    if message:
        print(errors.PREFIX + message, file=sys.stderr)
        sys.exit(errors.EXIT_CODE)
