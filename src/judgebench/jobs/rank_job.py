"""A ranking job (``job=rank``): compute and log one system's ranking, no judge.

On a cluster the ranking is the GPU work (PRP all pairs on FLAN-UL2 is hours per dataset) and the judging
is API calls: ``python run.py -m job=rank hydra/launcher=slurm_gpu dataset=dl19,dl20 ranker=prp_ul2,rankt5``
ranks each system once on the GPU partition, then the grid on CPU nodes reads every ranking back
(``rankings.rank_once``) and spends no GPU time. Each job logs one MLflow run of kind ``ranking``: the run
file, the ranking key, the prompts scored and the wall time; a store on another machine gets the ranking
from that run.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from judgebench import rankings
from judgebench.checks import offline_checks, preflight
from judgebench.data import fingerprint
from judgebench.data.datasets import Dataset
from judgebench.exceptions import DataError
from judgebench.identity import input_digests
from judgebench.identity.run_tags import RunTags
from judgebench.jobs.cell import (
    CellSettings,
    CellSystem,
    rank_system,
    ranking_reads_texts,
    resolve_system,
    semantic_part,
    skipped_duplicate,
)
from judgebench.jobs.common import JobOutcome, load_dataset, open_job_run, sweep_id
from judgebench.tracking import job_run, mlflow_store

log = logging.getLogger("judgebench")
SEMANTIC = ("job", "dataset", "ranker", "perturbation", "rewriter")


@dataclass(frozen=True)
class RankCell:
    """What a ranking job's stages receive, resolved once at its door: a grid cell's parts without a judge."""

    system: CellSystem
    dataset: Dataset
    rewriter: object
    inputs: input_digests.JobInputs  # the files the ranker, the rewriter and the dataset read
    logged: dict  # the SEMANTIC part of the resolved config: logged as params
    sweep_id: str
    settings: CellSettings
    ranking: rankings.RankSettings

    @property
    def reads_texts(self) -> bool:
        return ranking_reads_texts(self.rewriter, self.system.ranker, self.dataset)

    @property
    def files(self) -> dict[str, str]:
        """Digests of the ranker's and rewriter's input files: part of the ranking key."""
        return self.inputs.digests(self.ranking.cache_dir, rankings.FILE_ROLES)


def resolve_rank_cell(tree: dict, inputs: input_digests.JobInputs, system: CellSystem) -> RankCell:
    """The dataset (refused when it has no pool to rank), the rewriter and the settings."""
    dataset = load_dataset(tree["dataset"])
    if not dataset.has_pool:
        raise DataError(f"dataset {dataset.name}", "has no pool of candidates, so there is nothing to rank")
    inputs.add("dataset", dataset.input_files)
    rewriter = inputs.build("rewriter", tree["rewriter"])
    return RankCell(
        system,
        dataset,
        rewriter,
        inputs,
        semantic_part(tree, SEMANTIC),
        sweep_id(tree.get("sweep_id")),
        CellSettings.from_tree(tree),
        rankings.RankSettings.from_config(tree),
    )


def _finished(client, experiment_id: str, key: str) -> str | None:
    found = client.search_runs(
        [experiment_id],
        filter_string=RunTags.where(kind=rankings.KIND, ranking_key=key, status="FINISHED"),
        max_results=1,
    )
    return found[0].info.run_id if found else None


def run_rank(cfg: DictConfig) -> JobOutcome:
    started = time.perf_counter()
    tree = OmegaConf.to_container(cfg, resolve=True)  # the config, resolved once: nothing below reads cfg
    inputs = input_digests.JobInputs()  # a run file or prompt the ranker (or rewriter) reads is part of the key
    system = resolve_system(tree, inputs)
    if system.duplicate:
        return skipped_duplicate(system)
    return rank_cell(resolve_rank_cell(tree, inputs, system), started)


def rank_cell(cell: RankCell, started: float) -> JobOutcome:
    """The ranking job's stages, each given the parts of ``cell`` it needs."""
    ranker, perturbation, system = cell.system.ranker, cell.system.perturbation, cell.system.name
    dataset, rewriter, settings = cell.dataset, cell.rewriter, cell.settings
    reads, files = cell.reads_texts, cell.files
    key = rankings.ranking_key(cell.ranking.components, dataset, reads, files, ranker.key_inputs(dataset))
    if key is None:
        rankings.refuse_unkeyed(dataset)
    store = rankings.RankingStore(cell.ranking.cache_dir)
    if settings.dry_run:  # creates nothing in MLflow
        stored = store.read(key) is not None
        offline_checks.note(preflight.api_backends(rewriter=rewriter, ranker=ranker))
        print(
            f"[dry run] {dataset.name} / {system}: ranking {key} "
            + ("stored, nothing to compute" if stored else f"to compute ({ranker.kind} ranker {ranker.name})")
        )
        return JobOutcome("dry-run", system)
    client, exp_id = mlflow_store.open_store(settings.store)
    # a rank job of this ranking killed with SIGKILL on this host could not end its run: KILLED, as grid cells are
    job_run.close_dead(client, exp_id, RunTags.where(kind=rankings.KIND, ranking_key=key))
    done = None if settings.store.force else _finished(client, exp_id, key)
    if done and store.read(key) is not None:
        log.info("skip rank %s / %s: ranking %s is logged (run %s) and stored", dataset.name, system, key, done)
        return JobOutcome("skipped-done", system, run_id=done)
    preflight.check(preflight.api_backends(rewriter=rewriter, ranker=ranker))  # an API ranker answers before any work
    tags = RunTags(
        kind=rankings.KIND,
        ranking_key=key,
        sweep_id=cell.sweep_id,
        dataset=dataset.name,
        system=system,
        ranker=ranker.name,
        ranker_type=ranker.kind,
        ranker_family=ranker.family or None,
        perturbation=perturbation.name,
        rewriter=rewriter.name,
        text_view=rewriter.view,
        git_commit=job_run.git_commit(),
        **fingerprint.tags(dataset, reads, ""),
    ).to_tags()
    note = (
        f"{dataset.name}: ranking of system {system} ({ranker.kind} ranker {ranker.name}), computed once for every "
        "judge"
    )
    job, _, long_values = open_job_run(
        client, exp_id, f"rank/{dataset.name}/{system}", tags, note, cell.logged, cell.ranking.cache_dir, dataset
    )
    try:
        texts = rewriter.rewrite(dataset)
        ranking = rank_system(
            cell.system, cell.ranking, dataset, rewriter, texts, files, client, exp_id, cell.ranking.force
        )
        job.set_tags(RunTags(ranking_sha256=ranking.sha256).to_tags())
        metrics = {
            "ranking_computed": int(ranking.computed),
            "ranker_prompts_scored": ranking.scored,
            "n_queries": int(ranking.run["query_id"].nunique()),
            "wall_time_s": time.perf_counter() - started,
            **ranking.metrics,
        }
        job.log_metrics(metrics)
        job.log_files(
            {
                "run.trec": ranking.text,
                "input_digests.json": cell.inputs.artifact(cell.ranking.cache_dir),
                **{f"params/{k}.txt": v for k, v in long_values.items()},
            }
        )
        job.finish("FINISHED")
    except BaseException as exc:
        job.fail(exc)
        raise
    log.info(
        "%s | %-12s | ranking %s %s (%d prompts scored, %.1fs)",
        dataset.name,
        system,
        key,
        "computed" if ranking.computed else "read back",
        ranking.scored,
        metrics["wall_time_s"],
    )
    return JobOutcome("finished", system, run_id=job.run_id, metrics=metrics)
