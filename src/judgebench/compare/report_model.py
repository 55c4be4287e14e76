"""What a compare report is: the options a user sets and the numbers ``report.build`` gathers.

Its own module so that the renderers (markdown, latex, views, console) read a Report without importing the
module that builds and writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from judgebench.compare.analyses import order_bias
from judgebench.compare.analyses import self_preference
from judgebench.compare.analyses.discrimination import Discrimination
from judgebench.compare.analyses.ensembles import VirtualJudge
from judgebench.compare.reference import HUMAN_JUDGED, References

FORMATS = ("md", "csv", "tex", "png", "html")
DEFAULT_K = ("5", "10", "20", "all")  # the human-budget experiment's k values (budget/experiment.py), by default


@dataclass
class Options:
    """What the user can set on the command line (cli.py documents each)."""

    datasets: list[str] | None = None
    judges: list[str] | None = None
    alpha: float = 0.05
    correction: str = "none"  # holm | none: which decisions the agreement classes use
    bootstrap: int = 1000
    seed: int = 0
    level: float = 0.95
    panel: list[str] | None = None
    formats: tuple[str, ...] = FORMATS
    # The human values every judge is compared with (compare/reference.py): human_judged (the human labels of
    # the pairs the judge labelled), human_labelset (of the whole label set) or human (all qrels: the paper's).
    reference: str = HUMAN_JUDGED
    allow_mixed_versions: bool = False
    # The human-budget experiment (budget/experiment.py): estimators beside judge_only (none: off), k values, samples per k.
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
    experiment: str
    sweep: str | None
    options: Options
    jobs: pd.DataFrame
    table1: dict[str, pd.DataFrame]
    table2: pd.DataFrame
    missing: pd.DataFrame
    oracle_tests: pd.DataFrame = field(default_factory=pd.DataFrame)
    all_tests: pd.DataFrame = field(default_factory=pd.DataFrame)
    agreement_counts: pd.DataFrame = field(default_factory=pd.DataFrame)
    agreement_pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    bias: pd.DataFrame = field(default_factory=pd.DataFrame)
    ci_means: pd.DataFrame = field(default_factory=pd.DataFrame)
    ci_tau: pd.DataFrame = field(default_factory=pd.DataFrame)
    labels: pd.DataFrame = field(default_factory=pd.DataFrame)
    virtual: list[VirtualJudge] = field(default_factory=list)
    rewritten_runs: int = 0
    content_distribution: pd.DataFrame = field(default_factory=pd.DataFrame)
    content_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    problems: list[str] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    summaries: pd.DataFrame = field(default_factory=pd.DataFrame)
    versions: dict[str, list[str]] = field(default_factory=dict)  # metric and package versions of the runs read
    calibration: pd.DataFrame = field(default_factory=pd.DataFrame)  # one row per (dataset, judge, estimator, k)
    calibration_summary: pd.DataFrame = field(default_factory=pd.DataFrame)
    aliases: dict[str, str] = field(default_factory=dict)  # virtual judge -> the identical one reported ("panel": "majority")
    refs: References | None = None  # each judge's human reference (the figures read it)
    read: dict[str, list[str]] = field(default_factory=dict)  # run ids and sweep ids this report was built from
    superseded: list[str] = field(default_factory=list)  # earlier compare runs of this selection, replaced by the logged one
    # does a judge favour its own family's rankers (compare/analyses/self_preference.py): self_preference, interaction, gaps frames
    self_preference: dict[str, pd.DataFrame] = field(default_factory=self_preference.empty)
    order_bias: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=order_bias.COLUMNS))  # PRP's two orders
    # the planner's plan, predictions and measured widths, or the read-back's estimates (budget_files.build)
    budget_plan: dict = field(default_factory=dict)
    # which judges separate the oracle rankers humans separate, beside kappa (compare/analyses/discrimination.py)
    discrimination: Discrimination = field(default_factory=Discrimination)
    running: pd.DataFrame = field(default_factory=pd.DataFrame)  # missing cells whose run is still RUNNING (collect.running_cells)
    results: dict = field(default_factory=dict)  # {section name: what its compute returned} (compare/section.py)

    @property
    def judges(self) -> list[str]:
        return [c for c in next(iter(self.table1.values())).columns if c != "type"]
