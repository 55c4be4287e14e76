"""One job: one cell of the grid, the data flow of docs/architecture.md and nothing else."""

from __future__ import annotations

import functools
import json
import logging
import os
import time

from omegaconf import DictConfig, OmegaConf

from judgebench import rankings, secrets
from judgebench.checks import preflight
from judgebench.data import fingerprint
from judgebench.data.datasets import Dataset
from judgebench.data.trec import write_qrels
from judgebench.evaluation import HUMAN, HUMAN_JUDGED, HUMAN_LABELSET, METRIC_VERSION, evaluate, means, references
from judgebench.exceptions import DataError, check_failed_share
from judgebench.identity import input_digests
from judgebench.identity.run_tags import RunTags
from judgebench.identity.text_view import ORIGINAL
from judgebench.jobs import judge_summary
from judgebench.jobs.cell import JobCell, rank_system, resolve_cell, resolve_system, skipped_duplicate
from judgebench.jobs.common import JobOutcome, file_text, frame_text, judge_tags
from judgebench.jobs.dry_run import dry_run
from judgebench.jobs.skeleton import JobSteps, OpenRun, RunOpening, run_steps
from judgebench.label_scale import LabelScale
from judgebench.rankers.base import Ranker
from judgebench.rewriters.report import rewrites_checked
from judgebench.tracking import job_run

log = logging.getLogger("judgebench")

# what a cell's judge-summary run carries of the cell's tags: the judge and its data, not the system
SUMMARY_TAGS = (
    "dataset",
    "judge",
    "judge_family",
    "judge_model",
    "judge_scale",
    "rewriter",
    "text_view",
    "git_commit",
    "judge_hash",
    "metric_version",
    "sweep_id",
    "dataset_hash",
    "dataset_parts",
)


def _ranker_truncated(ranker: Ranker) -> dict:
    """Documents a local-model ranker cut to fit its context in this job (absent when it scored nothing now)."""
    model = getattr(ranker, "_model", None)
    n = getattr(model, "truncated", None)
    if n is None:
        return {}
    if n:
        log.warning(
            "ranker %s: %d prompts were truncated to fit the model's context (max_input_tokens=%s)",
            ranker.name,
            n,
            model.max_input_tokens,
        )
    return {"ranker_truncated": int(n)}


def reads_texts(ranker: Ranker, judge, rewriter, dataset: Dataset) -> bool:
    """Whether the cell reads passage texts: then their digest is part of its dataset identity."""
    return bool(rewriter.view != ORIGINAL or getattr(judge, "reads_texts", True) or ranker.reads_texts(dataset))


def _usable(dataset: Dataset) -> None:
    if not dataset.has_pool:
        raise DataError(
            f"dataset {dataset.name}",
            "has human labels but no passages and no pool of systems, so there is nothing to rank; compare "
            "judges on its labels in a labels-only experiment (job=labels_only, e.g. python run.py -m "
            "+experiment=llmjudge)",
        )


def run_job(cfg: DictConfig) -> JobOutcome:
    started = time.perf_counter()
    tree = OmegaConf.to_container(cfg, resolve=True)  # the config, resolved once: nothing below reads cfg
    inputs = input_digests.JobInputs()  # the files each component opens: their contents are in the resume key
    system = resolve_system(tree, inputs)
    if system.duplicate:
        return skipped_duplicate(system)
    return run_cell(resolve_cell(tree, inputs, system, _usable), started)


def run_cell(cell: JobCell, started: float) -> JobOutcome:
    """The cell's stages, each given the parts of ``cell`` it needs, in the job skeleton (jobs/skeleton.py)."""
    ranker, perturbation, system = cell.system.ranker, cell.system.perturbation, cell.system.name
    dataset, judge, rewriter, settings = cell.dataset, cell.judge, cell.rewriter, cell.settings
    name = cell.identity.dataset_name
    chash = cell.config_hash

    @functools.cache
    def scale_and_tags() -> tuple[LabelScale, RunTags]:
        scale = judge.label_scale(dataset.relevant_from)
        slurm = {
            "slurm_job_id": "SLURM_JOB_ID",
            "slurm_array_job_id": "SLURM_ARRAY_JOB_ID",
            "slurm_array_task_id": "SLURM_ARRAY_TASK_ID",
        }
        return scale, RunTags(
            kind="job",
            config_hash=chash,
            sweep_id=cell.identity.sweep_id,
            **cell.identity.hashes,
            dataset=name,
            system=system,
            ranker=ranker.name,
            ranker_type=ranker.kind,
            ranker_family=ranker.family or None,
            ranker_model=cell.identity.ranker_model,
            perturbation=perturbation.name,
            **judge_tags(judge),
            judge_scale=scale.tag(),
            rewriter=rewriter.name,
            text_view=rewriter.view,
            git_commit=job_run.git_commit(),
            **fingerprint.tags(dataset, reads_texts(ranker, judge, rewriter, dataset), ""),
            **{tag: os.environ[var] for tag, var in slurm.items() if os.environ.get(var)},  # a SLURM job's ids
        )

    def opening() -> RunOpening:
        note = (
            f"{name}: system {system} ({ranker.kind} ranker {ranker.name}, {perturbation.name}) judged by "
            f"{judge.name} ({judge.family}, {judge.model}), text view {rewriter.view}; nDCG@10 judged only, "
            f"metric version {METRIC_VERSION}"
        )
        return RunOpening(
            f"{name}/{system}/{judge.name}/{rewriter.name}",
            scale_and_tags()[1].to_tags(),
            note,
            cell.identity.config,
            cell.cache_dir,
            dataset,
        )

    def work(run: OpenRun) -> dict:
        job, client, exp_id, config, long_values = run.job, run.client, run.experiment_id, run.config, run.long_values
        scale, run_tags = scale_and_tags()
        with settings.stages.stage(f"rewrite {rewriter.name}"):
            texts = rewriter.rewrite(dataset)
        where = f"{name} / {system} / rewriter {rewriter.name}"
        rewrite_files, rewrite_metrics = rewrites_checked(
            rewriter, dataset, texts, job, settings.max_failed_share, where
        )
        files = cell.inputs.digests(cell.cache_dir, rankings.FILE_ROLES)
        ranking = rank_system(cell.system, cell.ranking, dataset, rewriter, texts, files, client, exp_id)
        run = ranking.run
        # the ranking's own statistics (PRP's order consistency), on every cell that uses it
        job.set_tags(RunTags(ranking_key=ranking.key, ranking_sha256=ranking.sha256).to_tags(), metrics=ranking.metrics)

        label_set = dataset.label_set()
        with settings.stages.stage(f"judge {judge.name}"):
            result = judge.judge(label_set[["query_id", "doc_id"]], dataset, texts)
        # the judge's labels score with their human levels (its scale's map: a binary 1 is relevant, not "related")
        qrels = {**references(dataset.qrels, label_set, judged=result.qrels), "judge": scale.gains(result.qrels)}
        scores = evaluate(run, qrels, dataset.judged_queries())
        per_query = scores.rename(columns={name: f"ndcg10_{name}" for name in qrels})
        metrics = {
            **means(per_query),
            "n_queries": len(per_query),
            **result.usage.as_metrics(),
            **rewrite_metrics,
            **_ranker_truncated(ranker),
            "ranking_computed": int(ranking.computed),
            "ranker_prompts_scored": ranking.scored,
            "wall_time_s": time.perf_counter() - started,
        }
        job.log_metrics(metrics)
        summary_tags = RunTags(**{k: v for k, v in run_tags.values().items() if k in SUMMARY_TAGS}).to_tags()
        summary_id = judge_summary.ensure(
            client,
            exp_id,
            summary_tags,
            result.qrels,
            label_set,
            result.usage.calls_failed,
            lock_dir=cell.lock_dir,
            scale=scale,
        )
        job.set_tags(RunTags(judge_summary=summary_id).to_tags())
        labels_out = result.labels.merge(
            label_set.rename(columns={"relevance": "human"}), on=["query_id", "doc_id"], how="left"
        )
        files = {
            "run.trec": ranking.text,  # the stored ranking's bytes: every judge's cell logs the same file
            "judge_labels.csv": frame_text(labels_out),
            "judge_qrels.txt": file_text(write_qrels, result.qrels),
            "judge_failures.csv": frame_text(result.failed),
            "per_query.csv": frame_text(per_query),
            "config.yaml": OmegaConf.to_yaml(OmegaConf.create(secrets.mask_secrets(config))),
            "dataset_summary.json": json.dumps(dataset.summary(), indent=2),
            "input_digests.json": cell.inputs.artifact(cell.cache_dir),
        }
        files.update({f"params/{k}.txt": v for k, v in long_values.items()})
        files.update(rewrite_files)
        job.log_files(files)
        check_failed_share(
            result.usage.calls_failed,
            len(label_set),
            settings.max_failed_share,
            f"{name} / {system} / {judge.name}",
            getattr(judge, "refused_key", lambda _: None)(result)  # a refused key: name its variable
            or "its answers are cached: a rerun asks again only for failed calls; judge.retry_unparsable=true "
            "also re-asks answers that gave no score",
        )
        return metrics

    def finished(metrics: dict) -> None:
        log.info(
            "%s | %-12s | judge=%-12s nDCG@10 human=%.4f human_labelset=%.4f human_judged=%.4f judge=%.4f (%.1fs)",
            name,
            system,
            judge.name,
            metrics[f"ndcg10_{HUMAN}"],
            metrics[f"ndcg10_{HUMAN_LABELSET}"],
            metrics[f"ndcg10_{HUMAN_JUDGED}"],
            metrics["ndcg10_judge"],
            metrics["wall_time_s"],
        )

    return run_steps(
        JobSteps(
            system,
            f"{name} / {system} / {judge.name}",
            chash,
            settings,
            {"judge": judge, "rewriter": rewriter, "ranker": ranker},
            plan=lambda: dry_run(ranker, dataset, judge, rewriter, system, cell.where, settings.gpu_estimate),
            check=lambda: preflight.check_cell(dataset, judge, rewriter, ranker),  # each API backend answers first
            opening=opening,
            work=work,
            finished=finished,
        )
    )
