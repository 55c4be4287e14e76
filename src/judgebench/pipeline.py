"""One job: one cell of the grid, the data flow of docs/architecture.md and nothing else."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from judgebench import __version__, files_read, input_digests, judge_summary, preflight, rankings, tracking
from judgebench.data.datasets import TOY_DIR, Dataset
from judgebench.data.trec import write_qrels
from judgebench.exceptions import DataError, TooManyFailures, check_failed_share  # noqa: F401  (TooManyFailures: the cell's failure)
from judgebench.dry_run import dry_run  # noqa: F401  (run_job's dry_run=true; asks nothing, rewrites included)
from judgebench.data import fingerprint
from judgebench.evaluation import HUMAN, HUMAN_JUDGED, HUMAN_LABELSET, METRIC_VERSION, evaluate, means, references
from judgebench.identity import component_hash
from judgebench.judges.parsing import PARSE_VERSION
from judgebench.progress import job_stage
from judgebench.rankers.base import Ranker
from judgebench.rankers.perturbation import Perturbation
from judgebench.rewriters.report import rewrites_checked

log = logging.getLogger("judgebench")

# Keys that say where or how a job runs, not what it computes: left out of the config hash.
NON_SEMANTIC = ("tracking_uri", "artifact_root", "cache_dir", "force", "progress", "progress_interval_s", "sweep_id", "experiment_name", "dry_run",
                "gpu_estimate", "memory_gb", "params_b")


@dataclass
class JobOutcome:
    status: str  # finished | skipped-duplicate | skipped-done
    system: str
    run_id: str | None = None
    metrics: dict | None = None


def config_hash(cfg: DictConfig, digests: dict[str, str]) -> str:
    """The resume key: the cell's semantic config, the contents of the input files its components read
    (``digests``, see input_digests.py), the metric version and the answer-parsing version (a finished run of
    an older evaluation core or parser is recomputed, not reused)."""
    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in NON_SEMANTIC and k != "hydra"}
        return node

    tree = strip(OmegaConf.to_container(cfg, resolve=True))
    tree["input_digests"] = dict(digests)  # file contents, not only paths: an edited qrels reruns its cell
    tree = {"config": tree, "metric_version": METRIC_VERSION, "parse_version": PARSE_VERSION}
    return hashlib.sha256(json.dumps(tree, sort_keys=True, default=str).encode()).hexdigest()[:16]


def identity_tags(cfg: DictConfig) -> dict[str, str]:
    """Hashes of the judge, the system (ranker + perturbation) and the rewriter: compare keys columns by them."""
    node = lambda key: OmegaConf.to_container(cfg[key], resolve=True) if key in cfg else None  # noqa: E731
    return {
        f"{tracking.TAG}judge_hash": component_hash(node("judge")),
        f"{tracking.TAG}system_hash": component_hash(node("ranker"), node("perturbation")),
        f"{tracking.TAG}rewriter_hash": component_hash(node("rewriter")),
        f"{tracking.TAG}metric_version": METRIC_VERSION,
        f"{tracking.TAG}version": __version__,
    }


def system_name(ranker: Ranker, perturbation: Perturbation) -> str:
    """Paper vocabulary: oracle cells are named by their perturbation (Perfect, Swap[3], ...)."""
    name = perturbation.name if perturbation.partner == "mirror" or perturbation.is_identity else f"{perturbation.name} hole"
    if ranker.kind == "oracle":
        return name
    return ranker.name if perturbation.is_identity else f"{ranker.name}+{name}"


_DATASETS: dict[str, tuple[Dataset, tuple]] = {}  # resolved dataset config -> (dataset, its files' stamps)


def load_dataset(cfg: DictConfig) -> Dataset:
    """Loaded once per process (every job of a local multirun shares it) and again when one of the files its
    loader read changed since; ``dataset.input_files`` lists those files (their digests join the resume key)."""
    key = OmegaConf.to_yaml(cfg, resolve=True)
    hit = _DATASETS.get(key)
    if hit is not None and hit[1] == input_digests.stamps(hit[0].input_files):
        return hit[0]
    with files_read.recording() as opened:
        dataset = instantiate(OmegaConf.create(key))
    dataset.input_files = tuple(dict.fromkeys(opened))
    if len(_DATASETS) >= 4:
        _DATASETS.pop(next(iter(_DATASETS)))
    _DATASETS[key] = (dataset, input_digests.stamps(dataset.input_files))
    return dataset


def sweep_id(cfg: DictConfig) -> str:
    if cfg.get("sweep_id"):
        return str(cfg.sweep_id)
    try:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
        return str(hc.sweep.dir if hc.mode.name == "MULTIRUN" else hc.run.dir)
    except ValueError:  # not under Hydra (tests calling run_job directly)
        return "adhoc"


def _frame_text(frame: pd.DataFrame, sep: str = ",") -> str:
    """A table artifact as CSV (MLflow's UI renders CSV as a table; a TSV is one block of text)."""
    buf = io.StringIO()
    frame.to_csv(buf, sep=sep, index=False)
    return buf.getvalue()


def _file_text(writer, frame: pd.DataFrame, **kw) -> str:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out"
        writer(frame, path, **kw)
        return path.read_text(encoding="utf-8")


def log_dataset_input(job: tracking.JobRun, cfg: DictConfig, dataset: Dataset) -> None:
    """The dataset as the run's dataset input: the label set's schema and size, a digest of every input file
    its loader read, and where it comes from (its qrels file; the directory of the bundled toy files)."""
    inputs = input_digests.JobInputs()
    inputs.add("dataset", dataset.input_files)
    digests = inputs.digests(cfg.get("cache_dir"))
    digest = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:16]
    files = list(dataset.input_files)
    qrels = [p for p in files if "qrel" in p.name.lower()] or files
    toy = Path(str(TOY_DIR))
    if not qrels or qrels[0].parent == toy:
        source = str(qrels[0].parent if qrels else Path(__file__).parent / "data")
    else:
        source = str(qrels[0])
    try:
        job.log_dataset(dataset.name, dataset.label_set(), source, digest)
    except Exception as exc:  # noqa: BLE001 - the UI's Dataset column is not worth a cell
        log.warning("%s: the dataset input was not logged (%s: %s)", dataset.name, type(exc).__name__, exc)


def open_job_run(client, exp_id: str, name: str, tags: dict, note: str, logged: DictConfig, cfg: DictConfig,
                 dataset: Dataset) -> tuple[tracking.JobRun, dict, dict]:
    """Start a job's MLflow run and log what every job logs first: ``logged`` (the config it uses) as
    params and the dataset input. Returns the run, ``logged`` as a container and the param values too
    long for MLflow (the job logs them as files). A failure here ends the run FAILED."""
    job = tracking.JobRun(client, exp_id, name, tags, note=note)
    try:
        config = OmegaConf.to_container(logged, resolve=True)
        params, long_values = tracking.params_from_config(config)
        job.log_params(params)
        log_dataset_input(job, cfg, dataset)
    except BaseException as exc:
        job.fail(exc)
        raise
    return job, config, long_values


def _ranker_truncated(ranker: Ranker) -> dict:
    """Documents a local-model ranker cut to fit its context in this job (absent when it scored nothing now)."""
    model = getattr(ranker, "_model", None)
    n = getattr(model, "truncated", None)
    if n is None:
        return {}
    if n:
        log.warning("ranker %s: %d prompts were truncated to fit the model's context (max_input_tokens=%s)", ranker.name, n, model.max_input_tokens)
    return {"ranker_truncated": int(n)}


def reads_texts(ranker: Ranker, judge, rewriter, dataset: Dataset) -> bool:
    """Whether the cell reads passage texts: then their digest is part of its dataset identity."""
    return bool(rewriter.view != "original" or getattr(judge, "reads_texts", True) or ranker.reads_texts(dataset))


def run_job(cfg: DictConfig) -> JobOutcome:
    started = time.perf_counter()
    inputs = input_digests.JobInputs()  # the files each component opens: their contents are in the resume key
    ranker: Ranker = inputs.build("ranker", cfg.ranker)
    perturbation = Perturbation(**OmegaConf.to_container(cfg.perturbation, resolve=True))
    system = system_name(ranker, perturbation)
    if not perturbation.is_identity and not ranker.perturbable:
        log.info("skip %s x %s: perturbations apply to oracle rankers (set ranker.perturbable=true)", ranker.name, perturbation.name)
        return JobOutcome("skipped-duplicate", system)

    dataset = load_dataset(cfg.dataset)  # cheap, as is building the judge and rewriter: the key needs their files
    inputs.add("dataset", dataset.input_files)
    if not dataset.has_pool:
        raise DataError(
            f"dataset {dataset.name}",
            "has human labels but no passages and no pool of systems, so there is nothing to rank; compare "
            "judges on its labels in a labels-only experiment (job=labels_only, e.g. python run.py -m +experiment=llmjudge)",
        )
    judge = inputs.build("judge", cfg.judge)
    rewriter = inputs.build("rewriter", cfg.rewriter)
    chash = config_hash(cfg, inputs.digests(cfg.cache_dir))
    what = f"{cfg.dataset.name} / {system} / {cfg.judge.name}"
    if cfg.get("dry_run"):  # reads the store if there is one, creates nothing in MLflow
        done = tracking.find_done_readonly(cfg, chash, what)
        if done:
            return JobOutcome("skipped-done", system, run_id=done)
        preflight.check_cell(dataset, judge, rewriter, ranker)  # each API backend answers (dry runs too)
        return dry_run(cfg, dataset, judge, rewriter, system)
    client, exp_id, done = tracking.resume(cfg, chash, what)
    if done:
        return JobOutcome("skipped-done", system, run_id=done)
    preflight.check_cell(dataset, judge, rewriter, ranker)  # each API backend answers before any work
    tags = {
        f"{tracking.TAG}kind": "job",
        f"{tracking.TAG}config_hash": chash,
        f"{tracking.TAG}sweep_id": sweep_id(cfg),
        **identity_tags(cfg),
        "dataset": cfg.dataset.name,
        "system": system,
        "ranker": ranker.name,
        "ranker_type": ranker.kind,
        **({"ranker_family": ranker.family} if ranker.family else {}),
        "ranker_model": next((str(v) for v in (OmegaConf.select(cfg, f"ranker.{k}", default=None)
                                                for k in ("model_spec.model", "backend.model", "model")) if v), ""),
        "perturbation": perturbation.name,
        "judge": judge.name,
        "judge_family": judge.family,
        "judge_model": judge.model,
        "rewriter": rewriter.name,
        "text_view": rewriter.view,
        "git_commit": tracking.git_commit(),
        **fingerprint.tags(dataset, reads_texts(ranker, judge, rewriter, dataset), tracking.TAG),
    }
    slurm = {"slurm_job_id": "SLURM_JOB_ID", "slurm_array_job_id": "SLURM_ARRAY_JOB_ID", "slurm_array_task_id": "SLURM_ARRAY_TASK_ID"}
    tags.update({tag: os.environ[var] for tag, var in slurm.items() if os.environ.get(var)})  # a SLURM job's ids
    note = (f"{cfg.dataset.name}: system {system} ({ranker.kind} ranker {ranker.name}, {perturbation.name}) judged by "
            f"{judge.name} ({judge.family}, {judge.model}), text view {rewriter.view}; nDCG@10 judged only, metric version {METRIC_VERSION}")
    job, config, long_values = open_job_run(client, exp_id, f"{cfg.dataset.name}/{system}/{judge.name}/{rewriter.name}", tags, note, cfg, cfg, dataset)
    try:
        with job_stage(cfg, f"rewrite {rewriter.name}"):
            texts = rewriter.rewrite(dataset)
        where = f"{cfg.dataset.name} / {system} / rewriter {rewriter.name}"
        rewrite_files, rewrite_metrics = rewrites_checked(rewriter, dataset, texts, job, float(cfg.get("max_failed_share", 1.0)), where)
        ranking = rankings.rank_once(cfg, dataset, ranker, perturbation, texts, system,
                                     rewriter.view != "original" or ranker.reads_texts(dataset), client, exp_id,
                                     files=inputs.digests(cfg.cache_dir, rankings.FILE_ROLES))
        run = ranking.run
        job.set_tags({f"{tracking.TAG}ranking_key": ranking.key})
        job.log_metrics(ranking.metrics)  # the ranking's own statistics (PRP's order consistency), on every cell that uses it

        label_set = dataset.label_set()
        with job_stage(cfg, f"judge {judge.name}"):
            result = judge.judge(label_set[["query_id", "doc_id"]], dataset, texts)
        qrels = {**references(dataset.qrels, label_set, judged=result.qrels), "judge": result.qrels}
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
        summary_tags = {k: tags[k] for k in ("dataset", "judge", "judge_family", "judge_model", "rewriter", "text_view", "git_commit",
                                             f"{tracking.TAG}judge_hash", f"{tracking.TAG}metric_version", f"{tracking.TAG}sweep_id",
                                             f"{tracking.TAG}dataset_hash", f"{tracking.TAG}dataset_parts") if k in tags}
        summary_id = judge_summary.ensure(client, exp_id, summary_tags, result.qrels, label_set, result.usage.calls_failed,
                                          lock_dir=Path(cfg.cache_dir) / "locks")
        job.set_tags({f"{tracking.TAG}judge_summary": summary_id})
        labels_out = result.labels.merge(label_set.rename(columns={"relevance": "human"}), on=["query_id", "doc_id"], how="left")
        files = {
            "run.trec": ranking.text,  # the stored ranking's bytes: every judge's cell logs the same file
            "judge_labels.csv": _frame_text(labels_out),
            "judge_qrels.txt": _file_text(write_qrels, result.qrels),
            "judge_failures.csv": _frame_text(result.failed),
            "per_query.csv": _frame_text(per_query),
            "config.yaml": OmegaConf.to_yaml(OmegaConf.create(tracking.mask_secrets(config))),
            "dataset_summary.json": json.dumps(dataset.summary(), indent=2),
            "input_digests.json": inputs.artifact(cfg.cache_dir),
        }
        files.update({f"params/{k}.txt": v for k, v in long_values.items()})
        files.update(rewrite_files)
        job.log_files(files)
        check_failed_share(result.usage.calls_failed, len(label_set), float(cfg.get("max_failed_share", 1.0)),
                           f"{cfg.dataset.name} / {system} / {judge.name}",
                           "its answers are cached: a rerun asks again only for failed calls; judge.retry_unparsable=true "
                           "also re-asks answers that gave no score")
        job.finish("FINISHED")
    except BaseException as exc:
        job.fail(exc)
        raise
    log.info(
        "%s | %-12s | judge=%-12s nDCG@10 human=%.4f human_labelset=%.4f human_judged=%.4f judge=%.4f (%.1fs)",
        cfg.dataset.name, system, judge.name, metrics[f"ndcg10_{HUMAN}"], metrics[f"ndcg10_{HUMAN_LABELSET}"],
        metrics[f"ndcg10_{HUMAN_JUDGED}"], metrics["ndcg10_judge"], metrics["wall_time_s"],
    )
    return JobOutcome("finished", system, run_id=job.run_id, metrics=metrics)
