"""``job=import_results``: existing per-query evaluations into the MLflow store, as cells compare reads.

The ``results`` config node (docs/datasets.md, "Existing evaluations as input"; ``+experiment=dl2023_leaderboard``)
names the files of each set of labels (a judge; the set named ``human`` is the human reference), the measure to
import and the table of what each run is. Every (run, judge) becomes one job run tagged like a grid cell (system =
run, judge = the labels' name, its ranker type and family from the runs table) with the ``per_query.csv`` a grid
cell logs, plus the tag ``imported`` naming the measure; its resume key is the content of every file it read, so a
rerun imports nothing twice. Runs and queries present under one set of labels and missing under another are
printed, and logged as ``import_gaps.csv`` on the import's own run (kind ``import``), under which the cells nest.
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
import time
from pathlib import Path

import pandas as pd
from omegaconf import DictConfig, OmegaConf

from judgebench import __version__
from judgebench.data.imported_results import (
    Results,
    RunInfo,
    cell_means,
    cell_per_query,
    gaps,
    read_judge,
    read_run_table,
)
from judgebench.data.trec import read_qrels
from judgebench.evaluation import HUMAN, METRIC_VERSION
from judgebench.exceptions import ConfigError
from judgebench.identity.run_tags import RunTags
from judgebench.identity.text_view import ORIGINAL
from judgebench.jobs import judge_summary
from judgebench.jobs.common import JobOutcome, frame_text, sweep_id
from judgebench.tracking import job_run, mlflow_store, run_params

log = logging.getLogger("judgebench")
KIND = "import"  # the import's own run; its cells are of kind "job", found by compare as grid cells are


def _files(data_dir: Path, patterns, what: str) -> list[Path]:
    """Paths (globs allowed) relative to ``data_dir``, sorted; a pattern that matches nothing is a ConfigError."""
    out = []
    for pattern in [patterns] if isinstance(patterns, str) else list(patterns or []):
        full = str(pattern if Path(pattern).is_absolute() else data_dir / pattern)
        hits = sorted(glob.glob(full))
        if not hits:
            raise ConfigError(f"{what}: {full} matches no file")
        out += [Path(h) for h in hits]
    if not out:
        raise ConfigError(f"{what}: no files given")
    return out


def _digest(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes())
    return h.hexdigest()


def _settings(tree: dict) -> dict:
    spec = tree.get("results")
    if not isinstance(spec, dict):
        raise ConfigError(
            "job=import_results needs a results node (see +experiment=dl2023_leaderboard and docs/datasets.md)"
        )
    raw = spec.get("data_dir")
    if not raw or not Path(str(raw)).is_dir():
        env = spec.get("data_dir_env") or "results.data_dir"
        raise ConfigError(
            f"results.data_dir={raw}: not a directory; point it (or {env}) at the folder of the results files"
        )
    judges = spec.get("judges") or {}
    if HUMAN not in judges or len(judges) < 2:
        raise ConfigError(
            f"results.judges: expected the human reference's labels under the name {HUMAN!r} and at least one "
            f"other set of labels, got {', '.join(judges) or 'none'}"
        )
    for key in ("dataset", "measure"):
        if not spec.get(key):
            raise ConfigError(f"results.{key}: expected a name")
    return spec


def load(spec: dict) -> tuple[Results, dict[str, dict]]:
    """The results of every judge, and per judge its files, qrels and the digest of both."""
    data_dir = Path(str(spec["data_dir"]))
    frames, judges = [], {}
    for name, j in spec["judges"].items():
        files = _files(data_dir, j.get("files"), f"results.judges.{name}.files")
        qrels = _files(data_dir, j["qrels"], f"results.judges.{name}.qrels")[0] if j.get("qrels") else None
        judges[name] = {
            "files": files,
            "qrels": qrels,
            "family": str(j.get("family") or ""),
            "model": str(j.get("model") or name),
            "digest": _digest(files + ([qrels] if qrels else [])),
        }
        frames.append(read_judge(name, files, str(spec["measure"])))
    runs: dict[str, RunInfo] = {}
    table = spec.get("runs") or {}
    if table.get("table"):
        path = _files(data_dir, table["table"], "results.runs.table")[0]
        runs = read_run_table(
            path,
            str(table.get("id_column", "run_id")),
            str(table.get("type_column", "type")),
            table.get("llm_column"),
            dict(table.get("families") or {}),
        )
        judges["_runs"] = {"digest": _digest([path])}
    return Results(str(spec["measure"]), pd.concat(frames, ignore_index=True), runs), judges


def _done_hashes(client, exp_id: str) -> set[str]:
    """The config hashes of every finished job run of the experiment, in one paged search (not one per cell)."""
    out, page = set(), None
    filt = RunTags.where(kind="job", status="FINISHED")
    while True:
        runs = client.search_runs([exp_id], filter_string=filt, max_results=5000, page_token=page)
        out.update(RunTags.from_tags(r.data.tags).config_hash for r in runs)
        page = runs.token
        if not page:
            return out


def _key(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


def run_import(cfg: DictConfig) -> JobOutcome:
    started = time.perf_counter()
    tree = OmegaConf.to_container(cfg, resolve=True)
    spec = _settings(tree)
    results, judges = load(spec)
    name, measure = str(spec["dataset"]), results.measure
    missing = gaps(results, HUMAN)
    for row in missing.itertuples(index=False):
        what = "every query" if row.missing == "run" else f"queries {row.queries}"
        log.warning(
            "%s: run %s has no %s values under %s for %s (present under another set of labels)",
            name,
            row.run,
            measure,
            row.judge,
            what,
        )
    unknown = [r for r in results.systems() if results.runs and r not in results.runs]
    if unknown:
        raise ConfigError(
            f"results.runs.table: runs {', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''} are in the "
            "results but not in the runs table; add them, or drop results.runs.table"
        )
    store = mlflow_store.StoreSettings.from_config(tree)
    client, exp_id = mlflow_store.open_store(store)
    done = set() if store.force else _done_hashes(client, exp_id)
    dataset_hash = _key(sorted(j["digest"] for j in judges.values()), measure)[:16]
    sweep, commit = sweep_id(tree.get("sweep_id")), job_run.git_commit()
    labels = _labels(judges)
    parent = job_run.JobRun(
        client,
        exp_id,
        f"import/{name}/{measure}",
        RunTags(kind=KIND, dataset=name, sweep_id=sweep, git_commit=commit).to_tags(),
        note=f"{name}: per-query {measure} of {len(results.systems())} runs under "
        f"{', '.join(results.judges())} imported as grid cells",
        parent="",
    )
    imported = skipped = 0
    try:
        summaries = _summaries(client, exp_id, name, judges, labels, dataset_hash, sweep, commit, tree)
        for run, rows in results.values.groupby("run", sort=False):
            info = results.runs.get(run, RunInfo())
            for judge in results.judges():
                if not (rows["judge"] == judge).any():
                    continue  # listed in the gaps; compare reports the cell as missing
                chash = _key(
                    "import_results",
                    name,
                    run,
                    judge,
                    measure,
                    judges[judge]["digest"],
                    judges[HUMAN]["digest"],
                    judges.get("_runs", {}).get("digest"),
                    info,
                    METRIC_VERSION,
                )[:16]
                if chash in done:
                    skipped += 1
                    continue
                per_query = cell_per_query(rows, judge, HUMAN)
                _log_cell(
                    client,
                    exp_id,
                    parent.run_id,
                    name,
                    run,
                    judge,
                    info,
                    judges[judge],
                    measure,
                    chash,
                    dataset_hash,
                    sweep,
                    commit,
                    per_query,
                    labels.get(judge),
                    summaries.get(judge),
                )
                imported += 1
        parent.log_metrics(
            {
                "cells_imported": imported,
                "cells_skipped": skipped,
                "gaps": len(missing),
                "wall_time_s": time.perf_counter() - started,
            }
        )
        parent.log_files({"import_gaps.csv": frame_text(missing)})
        parent.finish()
    except BaseException as exc:
        parent.fail(exc)
        raise
    log.info(
        "%s: %d cells imported, %d already imported (skipped), %d gaps (%.1fs)",
        name,
        imported,
        skipped,
        len(missing),
        time.perf_counter() - started,
    )
    print(
        f"imported {imported} cells of {name} ({measure}), {skipped} already in the store; {len(missing)} gaps"
        f"{' (listed above and in import_gaps.csv)' if len(missing) else ''}"
    )
    return JobOutcome(
        "finished" if imported else "skipped-done",
        name,
        run_id=parent.run_id,
        metrics={"cells_imported": imported, "cells_skipped": skipped, "gaps": len(missing)},
    )


def _labels(judges: dict) -> dict[str, pd.DataFrame]:
    """Per judge with qrels (the reference's too): its labels of the reference's pairs beside the human label, as
    a grid cell's judge_labels.csv (Table 2's kappa reads them)."""
    ref = judges[HUMAN].get("qrels")
    if ref is None:
        return {}
    human = read_qrels(ref).rename(columns={"relevance": "human"})
    out = {}
    for name, j in judges.items():
        if name.startswith("_") or name == HUMAN or j.get("qrels") is None:
            continue
        out[name] = read_qrels(j["qrels"]).merge(human, on=["query_id", "doc_id"], how="inner")
    return out


def _summaries(client, exp_id, name, judges, labels, dataset_hash, sweep, commit, tree) -> dict[str, str]:
    """One judge-summary run per judge with labels (labelled pairs, kappa on the label set), as a grid's judges have."""
    out = {}
    for judge, lab in labels.items():
        tags = RunTags(
            dataset=name,
            judge=judge,
            judge_family=judges[judge]["family"],
            judge_model=judges[judge]["model"],
            rewriter="none",
            text_view=ORIGINAL,
            git_commit=commit,
            judge_hash=judges[judge]["digest"][:10],
            metric_version=METRIC_VERSION,
            sweep_id=sweep,
            dataset_hash=dataset_hash,
            dataset_parts="imported results",
        ).to_tags()
        label_set = lab[["query_id", "doc_id", "human"]].rename(columns={"human": "relevance"})
        out[judge] = judge_summary.ensure(
            client, exp_id, tags, lab[["query_id", "doc_id", "relevance"]], label_set, 0, lock_dir=None
        )
    return out


def _log_cell(
    client,
    exp_id,
    parent,
    name,
    run,
    judge,
    info: RunInfo,
    spec: dict,
    measure,
    chash,
    dataset_hash,
    sweep,
    commit,
    per_query: pd.DataFrame,
    labels: pd.DataFrame | None,
    summary: str | None,
) -> None:
    tags = RunTags(
        kind="job",
        config_hash=chash,
        sweep_id=sweep,
        judge_hash=spec["digest"][:10],
        system_hash=_key(run, info)[:10],
        rewriter_hash="none",
        metric_version=METRIC_VERSION,
        version=__version__,
        dataset_hash=dataset_hash,
        dataset_parts="imported results",
        dataset=name,
        system=run,
        ranker=run,
        ranker_type="llm" if info.llm else "external",
        ranker_family=info.family or None,
        ranker_model=info.kind or None,
        perturbation="none",
        judge=judge,
        judge_family=spec["family"] or ("human" if judge == HUMAN else ""),
        judge_model=spec["model"],
        rewriter="none",
        text_view=ORIGINAL,
        git_commit=commit,
        imported=measure,
        imported_labels=str(labels is not None).lower(),
        judge_summary=summary,
    ).to_tags()
    note = f"{name}: run {run} ({info.kind or 'type unknown'}) under {judge}'s labels, per-query {measure} imported"
    job = job_run.JobRun(client, exp_id, f"{name}/{run}/{judge}/imported", tags, note=note, parent=parent)
    try:
        job.log_params_and_metrics(
            {
                "job": "import_results",
                "results.measure": measure,
                "results.files": ",".join(p.name for p in spec["files"])[: run_params.PARAM_MAX],
            },
            cell_means(per_query),
        )
        files = {"per_query.csv": frame_text(per_query)}
        if labels is not None:
            files["judge_labels.csv"] = frame_text(labels)
        job.log_files(files)
        job.finish()
    except BaseException as exc:
        job.fail(exc)
        raise
