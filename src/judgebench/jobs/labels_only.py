"""A labels-only job (``job: labels_only``): one judge's labels against the human labels, no rankers.

Some collections have human labels but no passages and no pool of systems (LLMJudge); some questions
need no systems (how well do these labels agree?). Such a job labels the dataset's label set with the
judge and logs one MLflow run per (dataset, judge) with tag ``judgebench.kind=labels``: every agreement
statistic of the grid cells as metrics, and the same label artifacts (``judge_labels.csv``,
``judge_qrels.txt``, ``judge_failures.csv``), so compare reads them the same way. There are no nDCG or
tau numbers, and none are made up.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from dataclasses import dataclass

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from judgebench import secrets
from judgebench.checks import preflight
from judgebench.data import fingerprint
from judgebench.data.corpus import available
from judgebench.data.datasets import Dataset
from judgebench.data.trec import write_qrels
from judgebench.exceptions import DataError, UserError, check_failed_share
from judgebench.identity import input_digests
from judgebench.identity.run_tags import RunTags
from judgebench.identity.text_view import ORIGINAL
from judgebench.jobs.cell import CellSettings, semantic_part
from judgebench.jobs.common import (
    JobOutcome,
    config_hash,
    file_text,
    frame_text,
    identity_tags,
    judge_tags,
    load_dataset,
    sweep_id,
)
from judgebench.jobs.dry_run import plan_judging
from judgebench.jobs.skeleton import JobSteps, OpenRun, RunOpening, run_steps
from judgebench.metrics import AGREEMENT_COLUMNS, label_agreement
from judgebench.tracking import job_run

log = logging.getLogger("judgebench")
KIND = "labels"
# What a labels-only job's result depends on: rankers, perturbations and rewriters play no part.
SEMANTIC = ("job", "dataset", "judge", "max_failed_share")


@dataclass(frozen=True)
class LabelsCell:
    """What a labels-only job's stages receive, resolved once at its door: a grid cell's parts without a system
    or a rewriter."""

    dataset: Dataset
    judge: object
    inputs: input_digests.JobInputs  # the files the dataset and the judge read: their contents are in the key
    logged: dict  # the SEMANTIC part of the resolved config: hashed for resume, logged as params
    where: str  # the configured ``dataset.name / judge.name``: how its messages name the job
    hashes: dict[str, str]  # the judge's configuration hash and the versions, as on grid cells (no system here)
    sweep_id: str
    settings: CellSettings
    cache_dir: str | None
    digests: dict[str, str]  # of the files in ``inputs``: with ``logged``, the resume key

    @property
    def config_hash(self) -> str:
        return config_hash(self.logged, self.digests)


def resolve_labels_cell(tree: dict) -> LabelsCell:
    """The dataset and the judge, refused before any model loads when the job cannot use them."""
    if str(tree["rewriter"].get("name", "none")) != "none":
        raise UserError(
            f"job=labels_only compares the labels of the original texts; rewriter={tree['rewriter']['name']} is "
            "not used (drop it)"
        )
    inputs = input_digests.JobInputs()
    dataset = load_dataset(tree["dataset"])
    inputs.add("dataset", dataset.input_files)
    if get_class(tree["judge"]["_target_"]).reads_texts and (
        not available(dataset.corpus) or not dataset.corpus
    ):  # no model loads
        raise DataError(
            f"dataset {dataset.name}",
            f"has no passage texts, and judge {tree['judge']['name']} reads passages; a labels-only "
            "experiment on it needs labels that already exist (judge=qrels judge.path=FILE) or judge=human",
        )
    judge = inputs.build("judge", tree["judge"])
    cache_dir = tree.get("cache_dir")
    hashes = {k: v for k, v in identity_tags(tree).items() if k != "system_hash"}
    return LabelsCell(
        dataset,
        judge,
        inputs,
        semantic_part(tree, SEMANTIC),
        f"{tree['dataset']['name']} / {tree['judge']['name']}",
        hashes,
        sweep_id(tree.get("sweep_id")),
        CellSettings.from_tree(tree),
        cache_dir,
        inputs.digests(cache_dir),
    )


def run_labels_only(cfg: DictConfig) -> JobOutcome:
    started = time.perf_counter()
    tree = OmegaConf.to_container(cfg, resolve=True)  # the config, resolved once: nothing below reads cfg
    return label_cell(resolve_labels_cell(tree), started)


def label_cell(cell: LabelsCell, started: float) -> JobOutcome:
    """The labels-only job's stages, each given the parts of ``cell`` it needs, in the job skeleton
    (jobs/skeleton.py)."""
    dataset, judge, settings = cell.dataset, cell.judge, cell.settings
    chash = cell.config_hash
    scale = functools.cache(lambda: judge.label_scale(dataset.relevant_from))

    def plan() -> JobOutcome:
        plan_judging(
            judge,
            dataset.label_set()[["query_id", "doc_id"]],
            dataset,
            dataset.corpus,
            set(),
            f"{dataset.name} / labels",
        )
        return JobOutcome("dry-run", KIND)

    def opening() -> RunOpening:
        tags = RunTags(
            kind=KIND,
            config_hash=chash,
            sweep_id=cell.sweep_id,
            # the judge's configuration hash (and the versions), as on grid cells: compare names judges alike in both
            **cell.hashes,
            dataset=dataset.name,
            **judge_tags(judge),
            judge_scale=scale().tag(),
            rewriter="none",
            text_view=ORIGINAL,
            git_commit=job_run.git_commit(),
            **fingerprint.tags(dataset, judge.reads_texts, ""),
        ).to_tags()
        note = (
            f"{dataset.name}: labels of judge {judge.name} ({judge.family}, {judge.model}) against the human "
            "labels, no systems"
        )
        return RunOpening(f"{dataset.name}/labels/{judge.name}", tags, note, cell.logged, cell.cache_dir, dataset)

    def work(run: OpenRun) -> dict:
        job, config, long_values = run.job, run.config, run.long_values
        label_set = dataset.label_set()
        with settings.stages.stage(f"judge {judge.name}"):
            result = judge.judge(label_set[["query_id", "doc_id"]], dataset, dataset.corpus)
        agreement = label_agreement(result.qrels, label_set, scale())
        metrics = {
            **{name: agreement[name] for name in AGREEMENT_COLUMNS},
            "label_set_size": len(label_set),
            "labelled_pairs": len(result.labels),
            "n_queries": int(label_set["query_id"].nunique()),
            **result.usage.as_metrics(),
            "wall_time_s": time.perf_counter() - started,
        }
        job.log_metrics(metrics)
        labels_out = result.labels.merge(
            label_set.rename(columns={"relevance": "human"}), on=["query_id", "doc_id"], how="left"
        )
        files = {
            "judge_labels.csv": frame_text(labels_out),
            "judge_qrels.txt": file_text(write_qrels, result.qrels),
            "judge_failures.csv": frame_text(result.failed),
            "config.yaml": OmegaConf.to_yaml(OmegaConf.create(secrets.mask_secrets(config))),
            "dataset_summary.json": json.dumps(dataset.summary(), indent=2),
            "input_digests.json": cell.inputs.artifact(cell.cache_dir),
        }
        files.update({f"params/{k}.txt": v for k, v in long_values.items()})
        job.log_files(files)
        check_failed_share(
            result.usage.calls_failed,
            len(label_set),
            settings.max_failed_share,
            f"{dataset.name} / {judge.name}",
            "the pairs are listed in its judge_failures.csv",
        )
        return metrics

    def finished(metrics: dict) -> None:
        log.info(
            "%s | labels | judge=%-24s kappa=%.3f kappa_relevant=%.3f alpha_ordinal=%.3f (%d pairs, scale %s, %.1fs)",
            dataset.name,
            judge.name,
            metrics["kappa_graded"],
            metrics["kappa_relevant"],
            metrics["alpha_ordinal"],
            metrics["labelled_pairs"],
            scale().describe(),
            metrics["wall_time_s"],
        )

    return run_steps(
        JobSteps(
            KIND,
            cell.where,
            chash,
            settings,
            {"judge": judge},
            plan=plan,
            check=lambda: preflight.check_labels(dataset, judge),  # an API judge answers first
            opening=opening,
            work=work,
            finished=finished,
        )
    )
