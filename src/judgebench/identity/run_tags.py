"""The MLflow run tags judgebench writes and reads, declared once.

Jobs find each other's runs, and compare reads every run, by tags alone (docs/tracking.md). Written as string
literals in each job and read back by string in compare, the tags were a schema nobody could see: a new tag
meant edits on both sides that nothing checked. Here each tag is a field of :class:`RunTags`, its MLflow name
derived from the field (``judgebench.<field>`` for our own bookkeeping, the bare field name for the names the
MLflow UI shows as columns: dataset, system, judge, ...). Jobs write ``RunTags(...).to_tags()``; compare reads
``RunTags.from_tags(run.data.tags)``; a search for runs by tag is ``RunTags.where(...)``. Adding a tag is one field
here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

PREFIX = "judgebench."


def _own(help: str):
    """A tag of judgebench's bookkeeping, named ``judgebench.<field>``."""
    return field(default=None, metadata={"prefix": PREFIX, "help": help})


def _shown(help: str):
    """A tag named as the field: what the MLflow UI shows as a column of the runs table."""
    return field(default=None, metadata={"prefix": "", "help": help})


@dataclass(frozen=True)
class RunTags:
    """Every tag a judgebench run may carry; None: not written. Values are text, as MLflow stores them."""

    # what the run is, and how it is found again
    kind: str | None = _own("job, labels, ranking, content_bias, judge_summary, sweep, compare")
    config_hash: str | None = _own("the resume key (jobs/common.py config_hash)")
    sweep_id: str | None = _own("the sweep's folder; 'adhoc' outside Hydra")
    ranking_key: str | None = _own("the stored ranking a cell used (rankings.py)")
    ranking_sha256: str | None = _own("SHA-256 of the stored ranking's bytes, checked on every read (rankings.py)")
    judge_summary: str | None = _own("the run id of the cell's judge-summary run")
    labels_digest: str | None = _own("the judge summary's labels, hashed (jobs/judge_summary.py)")
    imported: str | None = _own("an imported cell (job=import_results): the measure its per-query values are")
    imported_labels: str | None = _own(
        "an imported cell: 'true' when it logged judge_labels.csv (the labels' qrels were given)"
    )
    # identity: compare keys columns by these, and refuses to mix versions
    judge_hash: str | None = _own("the judge's configuration, hashed")
    system_hash: str | None = _own("ranker and perturbation configuration, hashed")
    rewriter_hash: str | None = _own("the rewriter's configuration, hashed")
    metric_version: str | None = _own("evaluation.METRIC_VERSION")
    version: str | None = _own("judgebench's version")
    dataset_hash: str | None = _own("the dataset's content (data/fingerprint.py)")
    dataset_parts: str | None = _own("what the dataset hash covers")
    texts_hash: str | None = _own("the passages' content, when the job read them")
    # names, shown in the MLflow UI
    dataset: str | None = _shown("dataset name")
    system: str | None = _shown("system name (an oracle cell: its perturbation)")
    ranker: str | None = _shown("ranker name")
    ranker_type: str | None = _shown("ranker kind (oracle, bm25, llm, ...)")
    ranker_family: str | None = _shown("the ranker's model family, when it has one")
    ranker_model: str | None = _shown("the ranker's model id ('' when none)")
    perturbation: str | None = _shown("perturbation name")
    judge: str | None = _shown("judge name")
    judge_family: str | None = _shown("the judge's model family")
    judge_model: str | None = _shown("the judge's model id")
    judge_scale: str | None = _own(
        "the judge's label scale as the cell applied it (label_scale.py; absent: graded 0-3)"
    )
    rewriter: str | None = _shown("rewriter name")
    text_view: str | None = _shown("original or rewritten:<rewriter> (identity/text_view.py)")
    git_commit: str | None = _shown("the judgebench checkout's commit")
    slurm_job_id: str | None = _shown("SLURM_JOB_ID of the job that ran the cell")
    slurm_array_job_id: str | None = _shown("SLURM_ARRAY_JOB_ID")
    slurm_array_task_id: str | None = _shown("SLURM_ARRAY_TASK_ID")
    # where the process lives (tracking/job_run.py's process_tags: a dead job's RUNNING run is closed by a later one)
    host: str | None = _own("host name of the run's process")
    pid: str | None = _own("process id of the run's process")
    # a sweep's parent run (cli/sweep_store.py)
    cells: str | None = _own("cells of the sweep")
    failed: str | None = _own("failed cells of the sweep")
    # a compare run (compare/store/compare_run.py)
    compare_key: str | None = _own("what the compare run reported, hashed")
    superseded_by: str | None = _own("the compare run that replaced this one")
    inputs: str | None = _own("how many runs of each kind compare read")
    input_sweeps: str | None = _own("the sweeps compare read")

    @staticmethod
    def name(field_name: str) -> str:
        """The MLflow tag name of a field (KeyError for a field that is not declared)."""
        return _NAMES[field_name]

    @staticmethod
    def where(status: str | None = None, **values: str) -> str:
        """An MLflow search filter: the runs whose tags have these values (by field name), and this status when
        given: ``RunTags.where(kind="ranking", ranking_key=k, status="FINISHED")``."""
        terms = [f"tags.`{_NAMES[f]}` = '{v}'" for f, v in values.items()]
        return " and ".join([*terms, *([f"attributes.status = '{status}'"] if status else [])])

    def to_tags(self) -> dict[str, str]:
        """The tags to write: every field that is set, as text, under its MLflow name."""
        return {_NAMES[f]: str(v) for f, v in self.values().items()}

    def values(self) -> dict[str, str]:
        """The fields that are set, by field name."""
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_tags(cls, tags: Mapping[str, str]) -> RunTags:
        """A run's tags read back; tags of others (``mlflow.*``) and undeclared ones are left out."""
        return cls(**{f: tags[n] for f, n in _NAMES.items() if n in tags})


_NAMES = {f.name: f"{f.metadata['prefix']}{f.name}" for f in fields(RunTags)}
NAMES = frozenset(_NAMES.values())  # every declared tag name
