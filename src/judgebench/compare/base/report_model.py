"""What a compare report is: the options a user sets, the inputs ``report.build`` gathers and the sections' results.

Its own module so that the renderers (markdown, latex, views, console) read a Report without importing the
module that builds and writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import pandas as pd

from judgebench import __version__
from judgebench.compare.base import dataset_identity
from judgebench.compare.base.reference import HUMAN_JUDGED, References
from judgebench.evaluation import REFERENCES
from judgebench.identity.text_view import ORIGINAL

FORMATS = ("md", "csv", "tex", "png", "html")
DEFAULT_K = ("5", "10", "20", "all")  # the human-budget experiment's k values (budget/experiment.py), by default


@dataclass(frozen=True)
class VirtualJudge:
    """A judge made of other judges' labels (compare/analyses/ensembles.py builds and scores it): its name, its members
    and how their labels are combined (majority or mean)."""

    name: str
    members: tuple[str, ...]
    rule: Literal["majority", "mean"]

    def describe(self) -> str:
        how = "majority vote (ties: lower label)" if self.rule == "majority" else "mean label rounded half up"
        return f"{self.name} = {how} of {', '.join(self.members)}"


@dataclass
class Options:
    """What the user can set on the command line, declared once: name, type and default here;
    compare/command/schema.py derives its schema of arguments (``CompareArgs``) from these fields and adds how each
    reads there (its help)."""

    datasets: list[str] | None = None
    judges: list[str] | None = None
    alpha: float = 0.05
    correction: str = "none"  # holm | none: which decisions the agreement classes use
    bootstrap: int = 1000
    seed: int = 0
    level: float = 0.95
    panel: list[str] | None = None
    formats: tuple[str, ...] = FORMATS
    # The human values every judge is compared with (compare/base/reference.py): human_judged (the human labels of
    # the pairs the judge labelled), human_labelset (of the whole label set) or human (all qrels: the paper's).
    reference: str = HUMAN_JUDGED
    allow_mixed_versions: bool = False
    # The human-budget experiment (budget/experiment.py): estimators beside judge_only (none: off), k values,
    # samples per k.
    calibration: tuple[str, ...] = ()
    calibration_k: tuple[str, ...] = DEFAULT_K
    resamples: int = 200
    # The planner (budget/plan.py): plan=budget writes a labelling plan of ``budget`` queries; the read-back
    # (budget/files.py) reads ``human_labels`` with the plan in ``plan_dir``.
    plan: bool = False
    budget: int | None = None
    strategy: str = "uniform"  # active did not beat it in benchmarks/calibration.py
    signal: str = "systems"  # budget_signals.SIGNALS: what the active and stratified designs are built on
    allocation: str = "neyman"
    pairs: list[str] | None = None
    human_labels: str | None = None
    plan_dir: Path | None = None


@dataclass
class Report:
    """The shared inputs ``report.build`` collects once, and each section's own results (``results``).

    An analysis's numbers are not fields here: its section computes them (``Section.compute``, called by
    ``sections.compute``) and they land in ``results`` under the names the section gives them; ``report.bias``,
    ``report.ci_tau`` and the like read ``results`` (``__getattr__``), so a renderer or a finding reads a result
    as an attribute and a new analysis adds no field."""

    experiment: str
    sweep: str | None
    options: Options
    jobs: pd.DataFrame
    table1: dict[str, pd.DataFrame]
    table2: pd.DataFrame
    missing: pd.DataFrame
    per_query: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # one row per (dataset, system, judge, query), virtual judges too
    labels: pd.DataFrame = field(default_factory=pd.DataFrame)
    runs: pd.DataFrame | None = None  # the systems' run files, read where virtual judges or the budget need them
    rewritten: pd.DataFrame = field(default_factory=pd.DataFrame)  # the job runs on rewritten text views (content bias)
    virtual: list[VirtualJudge] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    summaries: pd.DataFrame = field(default_factory=pd.DataFrame)
    versions: dict[str, list[str]] = field(default_factory=dict)  # metric and package versions of the runs read
    aliases: dict[str, str] = field(
        default_factory=dict
    )  # virtual judge -> the identical one reported ("panel": "majority")
    refs: References | None = None  # each judge's human reference (the figures read it)
    read: dict[str, list[str]] = field(default_factory=dict)  # run ids and sweep ids this report was built from
    superseded: list[str] = field(
        default_factory=list
    )  # earlier compare runs of this selection, replaced by the logged one
    running: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # missing cells whose run is still RUNNING (collect.running_cells)
    tracking_uri: str = ""  # the store it was read from (the read-back command a plan prints names it)
    silent: pd.DataFrame = field(
        default_factory=pd.DataFrame
    )  # (dataset, judge, failed_pairs): judges that labelled nothing
    results: dict = field(
        default_factory=dict
    )  # {result name: value}, from each section's compute (compare/base/section.py)

    def __getattr__(self, name: str):
        """A section's result by its name (``report.bias``); only called for a name that is not a field."""
        results = self.__dict__.get("results", {})
        if name in results:
            return results[name]
        raise AttributeError(
            f"Report has no field or section result {name!r} (results: {', '.join(results) or 'none'})"
        )

    @property
    def rewritten_runs(self) -> int:
        return len(self.rewritten)

    @property
    def original_labels(self) -> pd.DataFrame:
        """The judges' labels of the original texts (what every analysis but content bias reads)."""
        return self.labels[self.labels["text_view"] == ORIGINAL] if len(self.labels) else self.labels

    @property
    def judges(self) -> list[str]:
        return [c for c in next(iter(self.table1.values())).columns if c != "type"]

    @property
    def real_judges(self) -> list[str]:
        """The judges with runs of their own: no human reference, no virtual judge."""
        virtual = {v.name for v in self.virtual}
        return [j for j in self.judges if j not in REFERENCES and j not in virtual]


@dataclass
class LabelsReport:
    """A labels-only report (compare/labels_report.py builds it, compare/sections/labels_only.py presents it): the
    labels-only runs read, Table 2's label statistics per judge, the labels, the runs missing."""

    experiment: str
    sweep: str | None
    formats: tuple[str, ...]
    runs: pd.DataFrame
    table: pd.DataFrame
    labels: pd.DataFrame
    missing: pd.DataFrame
    problems: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    superseded: list[str] = field(default_factory=list)

    def header(self) -> dict[str, str]:
        sweeps = sorted(set(self.runs.get("sweep_id", pd.Series(dtype=str)).dropna()))
        identity = dataset_identity.describe(self.runs)
        return {
            "experiment": self.experiment,
            "selection": f"sweep {self.sweep}"
            if self.sweep
            else f"latest run per (dataset, judge) ({len(sweeps)} sweeps)",
            "datasets": ", ".join(identity.get(d, d) for d in dict.fromkeys(self.table["dataset"])),
            "judges": ", ".join(dict.fromkeys(self.table["judge"])),
            "reference": "human labels (labels-only runs)",
            "runs read": f"{len(self.runs)} labels-only runs",
            "versions": f"report by judgebench {__version__}",
        }
