"""The paper's AI-content-bias experiments, as one job (`+experiment=content_bias`).

(1) a balanced sample of pairs per human level, judged on original and LLM-rewritten text: label
distributions; (2) the Perfect oracle evaluated by the judge on original vs rewritten text: nDCG@10
with a paired t-test; (3) a pointwise ranker scoring the sample on both texts: score differences.
Optionally (4) a prompt-injection probe: an instruction appended to non-relevant passages, and how
much the judge's labels inflate.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
from omegaconf import DictConfig, OmegaConf

from judgebench import secrets
from judgebench.checks import preflight
from judgebench.content_bias.figures import distribution_figure, histogram_figure
from judgebench.content_bias.statistics import label_distribution, paired_difference, shift_shares
from judgebench.data import fingerprint
from judgebench.data.datasets import Dataset
from judgebench.evaluation import cut, evaluate
from judgebench.exceptions import ConfigError, check_failed_share
from judgebench.identity import input_digests
from judgebench.identity.run_tags import RunTags
from judgebench.identity.text_view import ORIGINAL
from judgebench.jobs.cell import CellSettings
from judgebench.jobs.common import JobOutcome, config_hash, judge_tags, load_dataset, sweep_id
from judgebench.jobs.dry_run import plan_judging, plan_rewrites
from judgebench.jobs.skeleton import JobSteps, OpenRun, RunOpening, run_steps
from judgebench.metrics.agreement import LEVELS
from judgebench.rankers.base import Ranker
from judgebench.rankers.oracle import OracleRanker
from judgebench.rewriters.report import check_rewrite_failures, rewrite_report
from judgebench.tracking import job_run

log = logging.getLogger("judgebench")


@dataclass(frozen=True)
class ContentBiasSpec:
    """The experiment's own settings (``content_bias:`` in the config)."""

    per_level: int  # pairs sampled per human level
    seed: int
    injection: str | None  # the instruction appended to non-relevant passages; None: no probe
    score_with_ranker: bool  # design (3)

    @classmethod
    def from_tree(cls, node: dict) -> ContentBiasSpec:
        return cls(
            int(node["per_level"]),
            int(node["seed"]),
            node.get("injection") or None,
            bool(node.get("score_with_ranker", True)),
        )


@dataclass(frozen=True)
class ContentBiasCell:
    """What the content-bias job's stages receive, resolved once at its door."""

    dataset: Dataset
    judge: object
    rewriter: object
    scorer: Ranker | None  # the pointwise ranker of design (3), when it runs
    spec: ContentBiasSpec
    inputs: input_digests.JobInputs  # the files every component reads: their contents are in the config hash
    config: dict  # the whole resolved config: logged as params and config.yaml, hashed into the resume key
    sweep_id: str
    settings: CellSettings
    cache_dir: str | None

    @property
    def config_hash(self) -> str:
        return config_hash(self.config, self.inputs.digests(self.cache_dir))


def resolve_content_bias(tree: dict) -> ContentBiasCell:
    """The dataset, the judge, the rewriter (an LLM one) and the scorer (a pointwise ranker), refused before any
    work when the experiment cannot use them."""
    spec = ContentBiasSpec.from_tree(tree["content_bias"])
    inputs = input_digests.JobInputs()
    dataset = load_dataset(tree["dataset"])
    inputs.add("dataset", dataset.input_files)
    judge = inputs.build("judge", tree["judge"])
    rewriter = inputs.build("rewriter", tree["rewriter"])
    if rewriter.view == ORIGINAL:
        raise ConfigError("content_bias needs an LLM rewriter: rewriter=smollm2 | openai | gemini_flash")
    scorer = inputs.build("ranker", tree["ranker"]) if spec.score_with_ranker else None
    if scorer is not None and not hasattr(scorer, "score_pairs"):
        raise ConfigError(
            f"content_bias design (3) needs a pointwise ranker (rankt5, rg_*); ranker {scorer.name} has no score_pairs"
        )
    return ContentBiasCell(
        dataset,
        judge,
        rewriter,
        scorer,
        spec,
        inputs,
        tree,
        sweep_id(tree.get("sweep_id")),
        CellSettings.from_tree(tree),
        tree.get("cache_dir"),
    )


def balanced_sample(label_set: pd.DataFrame, per_level: int, seed: int) -> pd.DataFrame:
    """`per_level` pairs per human level (all of them where fewer exist), drawn with a fixed seed."""
    rng = np.random.default_rng(seed)
    parts = []
    for level in LEVELS:
        pool = label_set[label_set["relevance"] == level].sort_values(["query_id", "doc_id"]).reset_index(drop=True)
        take = rng.choice(len(pool), size=min(per_level, len(pool)), replace=False) if len(pool) else []
        parts.append(pool.iloc[sorted(take)])
    return pd.concat(parts, ignore_index=True)


def _check_judge_failures(metrics: dict, limit: float, where: str) -> None:
    check_failed_share(
        metrics["judge_calls_failed"],
        metrics["judge_pairs"],
        limit,
        where,
        "its answers are cached: a rerun asks again only for failed calls",
    )


def _dry_run(injection: str | None, dataset, judge, rewriter, pairs: pd.DataFrame, sample: pd.DataFrame):
    """The job's rewrites and its three judgings (original, rewritten, injected), planned without asking anything."""
    where = f"content_bias / {dataset.name}"
    texts, pending = plan_rewrites(rewriter, dataset, where, pairs["doc_id"].unique())
    plan_judging(judge, pairs, dataset, dataset.corpus, set(), f"{where} (original)")
    plan_judging(judge, pairs, dataset, texts, pending, f"{where} (rewritten)")
    if injection:
        zeros = sample[sample["relevance"] == 0][["query_id", "doc_id"]]
        injected = {**dataset.corpus, **{d: f"{dataset.corpus[d]} {injection}" for d in zeros["doc_id"]}}
        plan_judging(judge, zeros, dataset, injected, set(), f"{where} (injection)")
    return JobOutcome("dry-run", "content_bias")


def run_content_bias(cfg: DictConfig) -> JobOutcome:
    started = time.perf_counter()
    tree = OmegaConf.to_container(cfg, resolve=True)  # the config, resolved once: nothing below reads cfg
    return content_bias_cell(resolve_content_bias(tree), started)


def content_bias_cell(cell: ContentBiasCell, started: float) -> JobOutcome:
    """The experiment's four designs, each given the parts of ``cell`` it needs, in the job skeleton
    (jobs/skeleton.py): a finished content-bias job is found by its resume key and skipped."""
    dataset, judge, rewriter, scorer, spec, settings = (
        cell.dataset,
        cell.judge,
        cell.rewriter,
        cell.scorer,
        cell.spec,
        cell.settings,
    )
    chash = cell.config_hash
    shown: list[str] = []  # the label distribution, printed once the run is closed

    @functools.cache
    def design() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
        """(label set, balanced sample, Perfect's top 10, its labelled pairs, every pair judged)."""
        label_set = dataset.label_set()
        sample = balanced_sample(label_set, spec.per_level, spec.seed)
        perfect = cut(OracleRanker(name="Perfect").rank(dataset, dataset.corpus), 10)
        top = perfect.merge(label_set[["query_id", "doc_id"]], on=["query_id", "doc_id"])
        pairs = (
            pd.concat([sample[["query_id", "doc_id"]], top[["query_id", "doc_id"]]])
            .drop_duplicates()
            .reset_index(drop=True)
        )
        log.info(
            "content bias on %s: %d sampled pairs (%s per level), %d Perfect top-10 pairs, %d documents to rewrite",
            dataset.name,
            len(sample),
            sample["relevance"].value_counts().sort_index().to_dict(),
            len(top),
            pairs["doc_id"].nunique(),
        )
        return label_set, sample, perfect, top, pairs

    def plan() -> JobOutcome:
        _, sample, _, _, pairs = design()
        return _dry_run(spec.injection, dataset, judge, rewriter, pairs, sample)

    def opening() -> RunOpening:
        tags = RunTags(
            kind="content_bias",
            config_hash=chash,
            sweep_id=cell.sweep_id,
            dataset=dataset.name,
            **judge_tags(judge),
            rewriter=rewriter.name,
            text_view=rewriter.view,
            ranker=scorer.name if scorer else "none",
            git_commit=job_run.git_commit(),
            **fingerprint.tags(dataset, True, ""),
        ).to_tags()
        note = (
            f"{dataset.name}: judge {judge.name} ({judge.family}, {judge.model}) on original and rewritten "
            f"({rewriter.name}) texts: label distributions, the Perfect oracle's nDCG@10"
            + (f", {scorer.name}'s scores" if scorer else "")
            + (", a prompt-injection probe" if spec.injection else "")
        )
        return RunOpening(
            f"content_bias/{dataset.name}/{judge.name}/{rewriter.name}",
            tags,
            note,
            cell.config,
            cell.cache_dir,
            dataset,
        )

    def work(run: OpenRun) -> dict:
        label_set, sample, perfect, top, pairs = design()
        rewritten = rewriter.rewrite(dataset, pairs["doc_id"].unique())
        original = judge.judge(pairs, dataset, dataset.corpus)
        changed = judge.judge(pairs, dataset, rewritten)

        # (1) label distributions on the sample
        dist = label_distribution(sample, original.labels, changed.labels)
        both = sample.merge(original.qrels.rename(columns={"relevance": "orig"}), on=["query_id", "doc_id"]).merge(
            changed.qrels.rename(columns={"relevance": "rew"}), on=["query_id", "doc_id"]
        )
        metrics = {f"labels_{k}": v for k, v in paired_difference(both["orig"], both["rew"]).items()}
        metrics["labels_share_raised"], metrics["labels_share_lowered"] = shift_shares(both["orig"], both["rew"])

        # (2) the Perfect oracle under the judge, original vs rewritten text (same pairs, same ideal)
        keep = pairs.set_index(["query_id", "doc_id"]).index
        q_o = original.qrels[original.qrels.set_index(["query_id", "doc_id"]).index.isin(keep)]
        q_r = changed.qrels[changed.qrels.set_index(["query_id", "doc_id"]).index.isin(keep)]
        nd = evaluate(perfect, {"original": q_o, "rewritten": q_r}, list(dict.fromkeys(top["query_id"])))
        metrics.update(
            {f"perfect_ndcg10_{k}": v for k, v in paired_difference(nd["original"], nd["rewritten"]).items()}
        )

        files: dict[str, str | bytes] = {}
        # (3) a pointwise ranker's scores on the sample, original vs rewritten
        if scorer is not None:
            sp = list(zip(sample["query_id"], sample["doc_id"]))
            s_o = pd.Series(scorer.score_pairs(sp, dataset, dataset.corpus))
            s_r = pd.Series(scorer.score_pairs(sp, dataset, rewritten))
            metrics.update({f"scores_{k}": v for k, v in paired_difference(s_o, s_r).items()})
            scores = sample.assign(score_original=s_o.values, score_rewritten=s_r.values, diff=(s_r - s_o).values)
            files["scores.tsv"] = scores.to_csv(sep="\t", index=False)

        # (4) prompt injection into non-relevant passages
        if spec.injection:
            zeros = sample[sample["relevance"] == 0][["query_id", "doc_id"]]
            injected = {**dataset.corpus, **{d: f"{dataset.corpus[d]} {spec.injection}" for d in zeros["doc_id"]}}
            inj = judge.judge(zeros, dataset, injected)
            base = zeros.merge(original.qrels, on=["query_id", "doc_id"]).merge(
                inj.qrels.rename(columns={"relevance": "inj"}), on=["query_id", "doc_id"]
            )
            metrics["injection_pairs"] = len(base)
            metrics["injection_mean_inflation"] = (
                float((base["inj"] - base["relevance"]).mean()) if len(base) else float("nan")
            )
            metrics["injection_share_raised"] = (
                float((base["inj"] > base["relevance"]).mean()) if len(base) else float("nan")
            )
            metrics["injection_share_labelled_3"] = float((base["inj"] == 3).mean()) if len(base) else float("nan")
            files["injection_labels.tsv"] = base.to_csv(sep="\t", index=False)

        rewrite_files, rewrite_metrics = rewrite_report(rewriter, dataset, rewritten, pairs["doc_id"].unique())
        metrics.update({k: v for k, v in rewrite_metrics.items() if k != "rewritten_docs"})
        judged = [original, changed, *([inj] if spec.injection else [])]
        metrics["judge_calls_made"] = sum(r.usage.calls_made for r in judged)
        metrics["judge_calls_failed"] = sum(r.usage.calls_failed for r in judged)
        metrics["judge_pairs"] = sum(len(r.labels) + r.usage.calls_failed for r in judged)
        metrics["wall_time_s"] = time.perf_counter() - started

        import tempfile
        from pathlib import Path

        with tempfile.TemporaryDirectory() as tmp:
            distribution_figure(
                dist,
                Path(tmp) / "labels.png",
                f"{dataset.name}: judge {judge.name} labels, original vs rewritten by {rewriter.name}",
            )
            files["figure_label_distribution.png"] = (Path(tmp) / "labels.png").read_bytes()
            if scorer is not None:
                histogram_figure(
                    scores["diff"], Path(tmp) / "hist.png", f"{scorer.name}: score differences ({len(scores)} pairs)"
                )
                files["figure_score_differences.png"] = (Path(tmp) / "hist.png").read_bytes()
        docs = pairs["doc_id"].unique()
        files["rewrites.tsv"] = pd.DataFrame(
            {"doc_id": docs, "original": [dataset.corpus[d] for d in docs], "rewritten": [rewritten[d] for d in docs]}
        ).to_csv(sep="\t", index=False)
        files["label_distribution.csv"] = dist.to_csv(index=False)
        files["labels.tsv"] = (
            pairs.merge(label_set, on=["query_id", "doc_id"], how="left")
            .merge(
                original.qrels.rename(columns={"relevance": "judge_original"}), on=["query_id", "doc_id"], how="left"
            )
            .merge(
                changed.qrels.rename(columns={"relevance": "judge_rewritten"}), on=["query_id", "doc_id"], how="left"
            )
            .to_csv(sep="\t", index=False)
        )
        files["perfect_ndcg_per_query.csv"] = nd.to_csv(index=False)
        files["config.yaml"] = OmegaConf.to_yaml(OmegaConf.create(secrets.mask_secrets(run.config)))
        files["summary.json"] = json.dumps(metrics, indent=2, default=float)
        files["input_digests.json"] = cell.inputs.artifact(cell.cache_dir)

        files.update({f"params/{k}.txt": v for k, v in run.long_values.items()})
        run.job.log_metrics({k: v for k, v in metrics.items() if isinstance(v, (int, float)) and v == v})
        run.job.log_files({**files, "rewrite_failures.tsv": rewrite_files["rewrite_failures.tsv"]})
        # max_failed_share, as for grid cells: a judge that never scores (or a rewriter that fails) ends FAILED
        where = f"content_bias / {dataset.name} / {judge.name}"
        check_rewrite_failures(rewriter, settings.max_failed_share, f"{where} / rewriter {rewriter.name}")
        _check_judge_failures(metrics, settings.max_failed_share, where)
        shown.append(dist.to_markdown(index=False))
        return metrics

    def finished(metrics: dict) -> None:
        print(*shown)
        print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}, indent=1))

    return run_steps(
        JobSteps(
            "content_bias",
            f"content_bias / {dataset.name} / {judge.name} / {rewriter.name}",
            chash,
            settings,
            {"judge": judge, "rewriter": rewriter, "ranker": scorer},
            plan=plan,
            # each API backend answers before any work
            check=lambda: preflight.check(preflight.api_backends(judge=judge, rewriter=rewriter, ranker=scorer)),
            opening=opening,
            work=work,
            finished=finished,
        )
    )
