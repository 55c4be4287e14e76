"""A grid cell's config resolved once, at the job's door, into typed parts.

``run_job`` turns its Hydra config into one resolved tree and this module builds from it what the stages
receive: the system (ranker, perturbation, its name), the dataset, the judge, the rewriter, the cell's
identity (its resolved semantic config, hashes, sweep id), its paths and its settings (dry run, force, the
failed-call limit, the store, progress). No stage after it reads the config: a new setting is one field here.
The tree is ``OmegaConf.to_container(cfg, resolve=True)``, the same data the resume key has always hashed,
so resume keys, ranking keys and run tags are what they were. The jobs of other shapes (``job=rank``,
``job=labels_only``, content bias) resolve theirs at their own door from the same parts (:class:`CellSystem`,
:class:`CellSettings`, :func:`semantic_part`) into a sibling cell of their own.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from judgebench.data.datasets import Dataset
from judgebench.identity import input_digests
from judgebench.identity.text_view import ORIGINAL
from judgebench.jobs.common import JobOutcome, config_hash, identity_tags, load_dataset, sweep_id, system_name
from judgebench.progress import StageSettings
from judgebench.rankers.base import Ranker
from judgebench.rankers.perturbation import Perturbation
from judgebench.rankings import Ranking, RankSettings, rank_once
from judgebench.tracking.mlflow_store import StoreSettings

log = logging.getLogger("judgebench")
RANKER_MODEL_KEYS = (("model_spec", "model"), ("backend", "model"), ("model",))  # where a ranker config names its model


@dataclass(frozen=True)
class CellSystem:
    """The system the cell judges: its ranker, its perturbation and its paper name."""

    ranker: Ranker
    perturbation: Perturbation
    name: str

    @property
    def duplicate(self) -> bool:
        """A perturbation of a ranker that takes none: the same system as the unperturbed cell."""
        return not self.perturbation.is_identity and not self.ranker.perturbable


@dataclass(frozen=True)
class CellIdentity:
    """What names the cell: its resolved config (logged as params, hashed into the resume key), the
    component hashes compare keys its columns by, the sweep id and the ranker's model."""

    config: dict
    dataset_name: str  # as configured (``dataset.name``): the cell's tag and the name in its messages
    hashes: dict[str, str]
    sweep_id: str
    ranker_model: str


@dataclass(frozen=True)
class CellSettings:
    """How the cell runs: dry run, the failed-call share that fails it, its store, its progress bars."""

    dry_run: bool
    max_failed_share: float
    gpu_estimate: dict | None
    store: StoreSettings
    stages: StageSettings

    @classmethod
    def from_tree(cls, tree: dict) -> CellSettings:
        """Read from a job's resolved config; every job (grid cell, rank, labels-only, content bias) runs by these."""
        return cls(
            dry_run=bool(tree.get("dry_run")),
            max_failed_share=float(tree.get("max_failed_share", 1.0)),
            gpu_estimate=tree.get("gpu_estimate"),
            store=StoreSettings.from_config(tree),
            stages=StageSettings.from_config(tree),
        )


@dataclass(frozen=True)
class JobCell:
    """Everything a grid cell's stages receive, resolved once (see the module's docstring)."""

    system: CellSystem
    dataset: Dataset
    judge: object
    rewriter: object
    inputs: input_digests.JobInputs  # the files the components opened: their contents join the resume key
    identity: CellIdentity
    settings: CellSettings
    ranking: RankSettings
    cache_dir: str | None
    digests: dict[str, str]  # of the files in ``inputs``: with ``identity.config``, the resume key

    @property
    def lock_dir(self) -> Path:
        return Path(self.cache_dir) / "locks"

    @property
    def config_hash(self) -> str:
        """The resume key (jobs/common.py ``config_hash``)."""
        return config_hash(self.identity.config, self.digests)

    @property
    def where(self) -> str:
        return f"{self.identity.dataset_name} / {self.system.name}"


def _ranker_model(tree: dict) -> str:
    """The model a ranker config names (``model_spec.model``, ``backend.model`` or ``model``), else ''."""
    for path in RANKER_MODEL_KEYS:
        node = tree.get("ranker")
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if node:
            return str(node)
    return ""


def semantic_part(tree: dict, keys: tuple[str, ...]) -> dict:
    """The keys of the resolved config a job's result depends on (a job that uses less than a grid cell logs and
    hashes only these)."""
    return {k: tree[k] for k in keys if k in tree}


def skipped_duplicate(system: CellSystem) -> JobOutcome:
    """A perturbed system whose ranker takes no perturbation is the unperturbed one: nothing to do."""
    log.info(
        "skip %s x %s: perturbations apply to oracle rankers (set ranker.perturbable=true)",
        system.ranker.name,
        system.perturbation.name,
    )
    return JobOutcome("skipped-duplicate", system.name)


def ranking_reads_texts(rewriter, ranker: Ranker, dataset: Dataset) -> bool:
    """Whether a system's ranking depends on the passage texts (a rewritten view, or a ranker that reads them): then
    their digest is part of its ranking key."""
    return rewriter.view != ORIGINAL or ranker.reads_texts(dataset)


def rank_system(
    system: CellSystem,
    settings: RankSettings,
    dataset: Dataset,
    rewriter,
    texts,
    files: dict[str, str],
    client,
    experiment_id: str,
    recompute: bool = False,
) -> Ranking:
    """The system's ranking of the ``rewriter``'s ``texts``, computed once for every judge (rankings.rank_once): the
    grid cell and the ranking job (``job=rank``) both ask for it here, so they key it alike and each finds the other's.
    ``files``: the digests of the ranker's and rewriter's input files (rankings.FILE_ROLES)."""
    ranker, perturbation = system.ranker, system.perturbation
    reads = ranking_reads_texts(rewriter, ranker, dataset)
    return rank_once(
        settings, dataset, ranker, perturbation, texts, system.name, reads, client, experiment_id, files, recompute
    )


def resolve_system(tree: dict, inputs: input_digests.JobInputs) -> CellSystem:
    """The ranker (its input files recorded in ``inputs``) and the perturbation: cheap, and enough to tell a
    duplicate cell before any dataset loads."""
    ranker: Ranker = inputs.build("ranker", tree["ranker"])
    perturbation = Perturbation(**tree["perturbation"])
    return CellSystem(ranker, perturbation, system_name(ranker, perturbation))


def resolve_cell(tree: dict, inputs: input_digests.JobInputs, system: CellSystem, check_dataset) -> JobCell:
    """The rest of the cell: the dataset (``check_dataset`` refuses one the job cannot use before any other
    component is built), the judge, the rewriter, the identity and the settings."""
    dataset = load_dataset(tree["dataset"])  # cheap, as is building the judge and rewriter: the key needs their files
    inputs.add("dataset", dataset.input_files)
    check_dataset(dataset)
    judge = inputs.build("judge", tree["judge"])
    rewriter = inputs.build("rewriter", tree["rewriter"])
    cache_dir = tree.get("cache_dir")
    identity = CellIdentity(
        tree, str(tree["dataset"]["name"]), identity_tags(tree), sweep_id(tree.get("sweep_id")), _ranker_model(tree)
    )
    ranking = RankSettings.from_config(tree)
    return JobCell(
        system,
        dataset,
        judge,
        rewriter,
        inputs,
        identity,
        CellSettings.from_tree(tree),
        ranking,
        cache_dir,
        inputs.digests(cache_dir),
    )
