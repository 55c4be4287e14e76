"""What every job shares: its outcome, its resume key and identity tags, the dataset (loaded once per
process), the sweep id, opening its MLflow run, and table artifacts as text."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from judgebench import __version__
from judgebench.data.datasets import TOY_DIR, Dataset
from judgebench.evaluation import METRIC_VERSION
from judgebench.exceptions import ConfigError
from judgebench.identity import (
    NON_SEMANTIC,
    component_hash,
    files_read,
    input_digests,
    stable_targets,
    without_late_defaults,
)
from judgebench.judges.parsing import PARSE_VERSION
from judgebench.rankers.base import Ranker
from judgebench.rankers.perturbation import Perturbation
from judgebench.tracking import job_run, mlflow_store, run_params

log = logging.getLogger("judgebench")


@dataclass
class JobOutcome:
    status: str  # finished | skipped-duplicate | skipped-done
    system: str
    run_id: str | None = None
    metrics: dict | None = None


def resolved(config) -> dict:
    """A config as plain resolved data (a DictConfig is converted; a resolved tree is returned as is)."""
    return OmegaConf.to_container(config, resolve=True) if OmegaConf.is_config(config) else config


def config_hash(config, digests: dict[str, str]) -> str:
    """The resume key: the cell's semantic config, the contents of the input files its components read
    (``digests``, see identity/input_digests.py), the metric version and the answer-parsing version (a finished run of
    an older evaluation core or parser is recomputed, not reused). ``config``: a DictConfig or its resolved tree,
    which give the same key. A class that moved is hashed by its stable path (identity/__init__.py
    ``stable_targets``)."""

    def strip(node):
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k not in NON_SEMANTIC and k != "hydra"}
        return node

    tree = strip(stable_targets(without_late_defaults(resolved(config))))
    tree["input_digests"] = dict(digests)  # file contents, not only paths: an edited qrels reruns its cell
    tree = {"config": tree, "metric_version": METRIC_VERSION, "parse_version": PARSE_VERSION}
    return hashlib.sha256(json.dumps(tree, sort_keys=True, default=str).encode()).hexdigest()[:16]


def identity_tags(config) -> dict[str, str]:
    """Hashes of the judge, the system (ranker + perturbation) and the rewriter, by RunTags field: compare keys
    columns by them. ``config``: a DictConfig or its resolved tree."""
    node = lambda key: resolved(config[key]) if key in config else None  # noqa: E731
    return {
        "judge_hash": component_hash(None if node("judge") is None else without_late_defaults(node("judge"), "judge")),
        "system_hash": component_hash(node("ranker"), node("perturbation")),
        "rewriter_hash": component_hash(node("rewriter")),
        "metric_version": METRIC_VERSION,
        "version": __version__,
    }


def judge_tags(judge) -> dict[str, str]:
    """The judge's names as every job that judges tags its run with them, by RunTags field: compare shows a judge's
    column by its name and model, and self-preference reads its family, whichever job wrote the run."""
    return {"judge": judge.name, "judge_family": judge.family, "judge_model": judge.model}


def system_name(ranker: Ranker, perturbation: Perturbation) -> str:
    """Paper vocabulary: oracle cells are named by their perturbation (Perfect, Swap[3], ...)."""
    name = (
        perturbation.name
        if perturbation.partner == "mirror" or perturbation.is_identity
        else f"{perturbation.name} hole"
    )
    if ranker.kind == "oracle":
        return name
    return ranker.name if perturbation.is_identity else f"{ranker.name}+{name}"


_DATASETS: dict[str, tuple[Dataset, tuple]] = {}  # resolved dataset config -> (dataset, its files' stamps)


def load_dataset(cfg: DictConfig | dict) -> Dataset:
    """Loaded once per process (every job of a local multirun shares it) and again when one of the files its
    loader read changed since; ``dataset.input_files`` lists those files (their digests join the resume key)."""
    key = OmegaConf.to_yaml(cfg, resolve=True)
    hit = _DATASETS.get(key)
    if hit is not None and hit[1] == input_digests.stamps(hit[0].input_files):
        return hit[0]
    node = OmegaConf.create(key)
    relevant_from = node.pop("relevant_from", None)  # the collection's relevance threshold: no loader's argument
    with files_read.recording() as opened:
        dataset = instantiate(node)
    if relevant_from is not None:
        dataset.relevant_from = _relevant_from(relevant_from, dataset)
    dataset.input_files = tuple(dict.fromkeys(opened))
    if len(_DATASETS) >= 4:
        _DATASETS.pop(next(iter(_DATASETS)))
    _DATASETS[key] = (dataset, input_digests.stamps(dataset.input_files))
    return dataset


def _relevant_from(value, dataset: Dataset) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 3:
        raise ConfigError(
            f"dataset.relevant_from={value!r}: expected the lowest human level (1-3) that counts as relevant "
            f"in {dataset.name} (TREC DL: 2)"
        )
    return value


def find_done(
    store: mlflow_store.StoreSettings, dry_run: bool, chash: str, what: str
) -> tuple[str | None, tuple | None]:
    """(the id of the job's finished run, or None; the store to log in as (client, experiment id)). A dry run
    reads the store if there is one and creates nothing in MLflow: its store is None."""
    if dry_run:
        return mlflow_store.find_done_readonly(store, chash, what), None
    client, exp_id, done = mlflow_store.resume(store, chash, what)
    return done, (client, exp_id)


def sweep_id(configured) -> str:
    """The sweep a job belongs to: ``configured`` (its config's ``sweep_id``) when set, else the Hydra sweep's
    (or single run's) directory."""
    if configured:
        return str(configured)
    try:
        from hydra.core.hydra_config import HydraConfig

        hc = HydraConfig.get()
        return str(hc.sweep.dir if hc.mode.name == "MULTIRUN" else hc.run.dir)
    except ValueError:  # not under Hydra (tests calling run_job directly)
        return "adhoc"


def frame_text(frame: pd.DataFrame, sep: str = ",") -> str:
    """A table artifact as CSV (MLflow's UI renders CSV as a table; a TSV is one block of text)."""
    buf = io.StringIO()
    frame.to_csv(buf, sep=sep, index=False)
    return buf.getvalue()


def file_text(writer, frame: pd.DataFrame, **kw) -> str:
    """What ``writer`` (e.g. ``write_qrels``) writes for ``frame``, as text."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out"
        writer(frame, path, **kw)
        return path.read_text(encoding="utf-8")


def log_dataset_input(job: job_run.JobRun, cache_dir: str | None, dataset: Dataset) -> None:
    """The dataset as the run's dataset input: the label set's schema and size, a digest of every input file
    its loader read, and where it comes from (its qrels file; the directory of the bundled toy files)."""
    inputs = input_digests.JobInputs()
    inputs.add("dataset", dataset.input_files)
    digests = inputs.digests(cache_dir)
    digest = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:16]
    files = list(dataset.input_files)
    qrels = [p for p in files if "qrel" in p.name.lower()] or files
    toy = Path(str(TOY_DIR))
    if not qrels or qrels[0].parent == toy:
        source = str(qrels[0].parent if qrels else Path(__file__).parents[1] / "data")
    else:
        source = str(qrels[0])
    try:
        job.log_dataset(dataset.name, dataset.label_set(), source, digest)
    except Exception as exc:  # noqa: BLE001 - the UI's Dataset column is not worth a cell
        log.warning("%s: the dataset input was not logged (%s: %s)", dataset.name, type(exc).__name__, exc)


def open_job_run(
    client, exp_id: str, name: str, tags: dict, note: str, logged, cache_dir: str | None, dataset: Dataset
) -> tuple[job_run.JobRun, dict, dict]:
    """Start a job's MLflow run and log what every job logs first: ``logged`` (the config it uses, a DictConfig
    or its resolved tree) as params and the dataset input. Returns the run, ``logged`` as a container and the param
    values too
    long for MLflow (the job logs them as files). A failure here ends the run FAILED."""
    job = job_run.JobRun(client, exp_id, name, tags, note=note)
    try:
        config = resolved(logged)
        params, long_values = run_params.params_from_config(config)
        job.log_params(params)
        log_dataset_input(job, cache_dir, dataset)
    except BaseException as exc:
        job.fail(exc)
        raise
    return job, config, long_values
