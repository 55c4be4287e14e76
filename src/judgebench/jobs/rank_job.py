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

from omegaconf import DictConfig, OmegaConf

from judgebench import input_digests, offline_checks, preflight, rankings, tracking
from judgebench.data import fingerprint
from judgebench.exceptions import DataError
from judgebench.jobs.common import JobOutcome, load_dataset, open_job_run, sweep_id, system_name
from judgebench.rankers.perturbation import Perturbation
from judgebench.run_tags import RunTags
from judgebench.text_view import ORIGINAL

log = logging.getLogger("judgebench")
SEMANTIC = ("job", "dataset", "ranker", "perturbation", "rewriter")


def _finished(client, experiment_id: str, key: str) -> str | None:
    filt = (f"tags.`{tracking.TAG}kind` = '{rankings.KIND}' and tags.`{tracking.TAG}ranking_key` = '{key}' "
            "and attributes.status = 'FINISHED'")
    found = client.search_runs([experiment_id], filter_string=filt, max_results=1)
    return found[0].info.run_id if found else None


def run_rank(cfg: DictConfig) -> JobOutcome:
    started = time.perf_counter()
    inputs = input_digests.JobInputs()  # a run file or prompt the ranker (or rewriter) reads is part of the key
    ranker = inputs.build("ranker", cfg.ranker)
    perturbation = Perturbation(**OmegaConf.to_container(cfg.perturbation, resolve=True))
    system = system_name(ranker, perturbation)
    if not perturbation.is_identity and not ranker.perturbable:
        log.info("skip %s x %s: perturbations apply to oracle rankers (set ranker.perturbable=true)", ranker.name, perturbation.name)
        return JobOutcome("skipped-duplicate", system)
    dataset = load_dataset(cfg.dataset)
    if not dataset.has_pool:
        raise DataError(f"dataset {dataset.name}", "has no pool of candidates, so there is nothing to rank")
    inputs.add("dataset", dataset.input_files)
    rewriter = inputs.build("rewriter", cfg.rewriter)
    reads = rewriter.view != ORIGINAL or ranker.reads_texts(dataset)
    files = inputs.digests(cfg.cache_dir, rankings.FILE_ROLES)
    key = rankings.ranking_key(cfg, dataset, reads, files)
    if cfg.get("dry_run"):  # creates nothing in MLflow
        stored = rankings.RankingStore(cfg.cache_dir).read(key) is not None
        offline_checks.note(preflight.api_backends(rewriter=rewriter, ranker=ranker))
        print(f"[dry run] {dataset.name} / {system}: ranking {key} " + ("stored, nothing to compute" if stored else
              f"to compute ({ranker.kind} ranker {ranker.name})"))
        return JobOutcome("dry-run", system)
    client, exp_id = tracking.open_store(tracking.StoreSettings.from_config(cfg))
    # a rank job of this ranking killed with SIGKILL on this host could not end its run: KILLED, as grid cells are
    tracking.close_dead(client, exp_id, f"tags.`{tracking.TAG}kind` = '{rankings.KIND}' and tags.`{tracking.TAG}ranking_key` = '{key}'")
    done = None if cfg.force else _finished(client, exp_id, key)
    if done and rankings.RankingStore(cfg.cache_dir).read(key) is not None:
        log.info("skip rank %s / %s: ranking %s is logged (run %s) and stored", dataset.name, system, key, done)
        return JobOutcome("skipped-done", system, run_id=done)
    preflight.check(preflight.api_backends(rewriter=rewriter, ranker=ranker))  # an API ranker answers before any work
    tags = RunTags(
        kind=rankings.KIND, ranking_key=key, sweep_id=sweep_id(cfg.get("sweep_id")),
        dataset=dataset.name, system=system, ranker=ranker.name, ranker_type=ranker.kind, ranker_family=ranker.family or None,
        perturbation=perturbation.name, rewriter=rewriter.name, text_view=rewriter.view,
        git_commit=tracking.git_commit(), **fingerprint.tags(dataset, reads, ""),
    ).to_tags()
    used = OmegaConf.create({k: OmegaConf.to_container(cfg[k], resolve=True) if OmegaConf.is_config(cfg[k]) else cfg[k]
                             for k in SEMANTIC if k in cfg})
    note = f"{dataset.name}: ranking of system {system} ({ranker.kind} ranker {ranker.name}), computed once for every judge"
    job, _, long_values = open_job_run(client, exp_id, f"rank/{dataset.name}/{system}", tags, note, used, cfg.get("cache_dir"), dataset)
    try:
        texts = rewriter.rewrite(dataset)
        ranking = rankings.rank_once(rankings.RankSettings.from_config(cfg), dataset, ranker, perturbation, texts, system, reads,
                                     client, exp_id, files=files, recompute=bool(cfg.force))
        job.set_tags(RunTags(ranking_sha256=ranking.sha256).to_tags())
        metrics = {"ranking_computed": int(ranking.computed), "ranker_prompts_scored": ranking.scored,
                   "n_queries": int(ranking.run["query_id"].nunique()), "wall_time_s": time.perf_counter() - started,
                   **ranking.metrics}
        job.log_metrics(metrics)
        job.log_files({"run.trec": ranking.text, "input_digests.json": inputs.artifact(cfg.cache_dir),
                       **{f"params/{k}.txt": v for k, v in long_values.items()}})
        job.finish("FINISHED")
    except BaseException as exc:
        job.fail(exc)
        raise
    log.info("%s | %-12s | ranking %s %s (%d prompts scored, %.1fs)", dataset.name, system, key,
             "computed" if ranking.computed else "read back", ranking.scored, metrics["wall_time_s"])
    return JobOutcome("finished", system, run_id=job.run_id, metrics=metrics)
