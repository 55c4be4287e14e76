"""compare for labels-only runs (``judgebench.kind=labels``): the agreement table, one row per judge.

A labels-only experiment (e.g. LLMJudge: human labels, no passages, no systems) has judge labels and
human labels and nothing else, so the report is Table 2's label statistics, its figures, and one line
saying what needs systems, instead of nDCG numbers nobody measured or a failure.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench import __version__
from judgebench.compare.base import columns
from judgebench.compare.store import compare_run
from judgebench.compare.base import dataset_identity
from judgebench.compare.base import names
from judgebench.compare.renderers import figures
from judgebench.compare.renderers import html
from judgebench.compare.renderers import markdown
from judgebench.compare.renderers import render
from judgebench.compare.renderers import views
from judgebench.compare.base.artifacts import Artifacts
from judgebench.compare.store.collect import display_names, run_row, search
from judgebench.exceptions import CompareError
from judgebench.identity.text_view import ORIGINAL

KIND = "labels"
TABLE = ["dataset", "judge", *columns.AGREEMENT, "labelled_pairs", "failed_pairs", *columns.SHARES]
NEEDS_SYSTEMS = ("nDCG@10 (Table 1), the system-ordering statistics (tau, tau_AP, rho, tau_top5) and Tables 3-6 need systems: "
                 "these runs are labels-only (job=labels_only: the dataset has no pool of passages or no rankers were run), "
                 "so those tables are not reported.")


def has_runs(client: MlflowClient, experiment: str, kind: str, sweep: str | None = None) -> bool:
    """Whether the experiment has a finished run of this kind ("job", "labels")."""
    exp = client.get_experiment_by_name(experiment)
    return exp is not None and bool(search(client, exp.experiment_id, kind, sweep, limit=1))


def collect(client: MlflowClient, experiment: str, sweep: str | None, datasets: list[str] | None,
            judges: list[str] | None) -> pd.DataFrame:
    """Latest finished labels-only run per (dataset, judge configuration), selected and named like the grid's
    cells: one identity per dataset name (``datasets=name@hash`` picks one), a row per judge configuration
    (its hash; collect.display_names: ``name@model`` or ``name#hash`` when two configurations share a name)."""
    exp = client.get_experiment_by_name(experiment)
    frame = pd.DataFrame([run_row(r) for r in search(client, exp.experiment_id, KIND, sweep)])  # not empty: has_runs()
    frame = frame.sort_values("start_time", kind="stable").reset_index(drop=True)
    frame["text_view"] = frame["text_view"].fillna(ORIGINAL)
    wanted, picks = dataset_identity.parse(datasets)
    frame = dataset_identity.one_identity(frame, picks, experiment, wanted)
    frame["judge"] = display_names(frame, "judge", "judge_model", "judge_hash")
    frame = frame.drop_duplicates(["dataset", "judge"], keep="last")
    if wanted:
        frame = frame[frame["dataset"].isin(wanted)]
    if judges:
        frame = frame[frame["judge"].isin(judges)]
    return frame.reset_index(drop=True)


@dataclass
class LabelsReport:
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
        return {"experiment": self.experiment, "selection": f"sweep {self.sweep}" if self.sweep else f"latest run per (dataset, judge) "
                f"({len(sweeps)} sweeps)", "datasets": ", ".join(identity.get(d, d) for d in dict.fromkeys(self.table["dataset"])),
                "judges": ", ".join(dict.fromkeys(self.table["judge"])), "reference": "human labels (labels-only runs)",
                "runs read": f"{len(self.runs)} labels-only runs", "versions": f"report by judgebench {__version__}"}

    def markdown(self) -> str:
        judges = list(dict.fromkeys(self.table["judge"]))
        parts = [
            markdown.report_title(self.experiment, self.sweep, ", labels-only runs"),
            "",
            f"{len(self.runs)} labels-only runs; datasets: {markdown.listed(dict.fromkeys(self.table['dataset']))}; "
            f"{len(judges)} judges: {markdown.listed(judges)}.",
            "\n## Table 2: agreement with the human labels per judge",
        ]
        for _, title, frame, integers in views.table2_blocks(self.table):
            parts += [f"\n### {title}\n", render.markdown(frame, index=False, integers=integers)]
        parts.append(f"\n{NEEDS_SYSTEMS}")
        if len(self.missing):
            parts.append(f"\n## Missing (dataset, judge) runs ({len(self.missing)}, no finished run)\n")
            parts += [f"- {names.markdown(d)} / judge={names.markdown(j)}" for d, j in self.missing.itertuples(index=False)]
        if self.problems:
            parts += ["\n## Problems reading runs\n", *(f"- {names.markdown(p)}" for p in self.problems)]
        return "\n".join(parts) + "\n"


def build(client: MlflowClient, experiment: str, sweep: str | None, options) -> LabelsReport | None:
    """The labels-only report, or None when the experiment has no labels-only runs."""
    if not has_runs(client, experiment, KIND, sweep):
        return None
    runs = collect(client, experiment, sweep, options.datasets, options.judges)
    if runs.empty:
        raise CompareError(f"experiment {experiment!r} has no labels-only runs for datasets={','.join(options.datasets or ['*'])} "
                           f"judges={','.join(options.judges or ['*'])}")
    art = Artifacts(client)
    labels = art.labels(runs)
    agreement = columns.agreement_table(labels)
    usage = runs[["dataset", "judge"]].assign(labelled_pairs=runs.get("labelled_pairs"), failed_pairs=runs.get("calls_failed"))
    table = usage.merge(agreement, on=["dataset", "judge"], how="left")[TABLE]
    datasets = list(dict.fromkeys([*(dataset_identity.parse(options.datasets)[0] or []), *runs["dataset"]]))
    judges = list(dict.fromkeys([*(options.judges or []), *runs["judge"]]))
    have = set(zip(runs["dataset"], runs["judge"]))
    missing = pd.DataFrame([c for c in itertools.product(datasets, judges) if c not in have], columns=["dataset", "judge"])
    return LabelsReport(experiment, sweep, tuple(options.formats), runs, table, labels, missing, art.problems)


def write(r: LabelsReport, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    fmt, files = set(r.formats), []
    if "csv" in fmt:
        files.append(out / "table2.csv")
        r.table.to_csv(files[-1], index=False)
    if "tex" in fmt:
        for suffix, title, frame, integers in views.table2_blocks(r.table):
            files.append(out / f"table2{suffix}.tex")
            files[-1].write_text(render.latex(frame, f"Per judge: {title} (labels-only runs).", f"tab:table2{suffix.replace('_', '-')}",
                                              index=False, integers=integers), encoding="utf-8")
    if "png" in fmt:
        files.append(figures.agreement_dots(r.table, out / "figure_agreement.png"))
        files.append(figures.label_shares(r.table, out / "figure_label_distribution.png"))
        if len(r.labels):
            files.append(figures.confusion_grid(r.labels, out / "figure_confusion.png"))
    text = r.markdown() + html.figure_links(files, figures.CAPTIONS)  # report.md links its figures
    if "md" in fmt:
        files.insert(0, out / "report.md")
        files[0].write_text(text, encoding="utf-8")
    if "html" in fmt:
        files.insert(0, html.write(text, out, r.header(), f"judgebench compare: {r.experiment} (labels)"))
    r.files = files
    return files


def log_compare_run(client: MlflowClient, r: LabelsReport, files: list[Path]) -> str:
    """A compare run (kind "compare") in the experiment: every statistic per (dataset, judge) as a metric, the
    runs read in inputs.json; it supersedes the previous compare run of the same selection (compare_run)."""
    metrics = {f"{c}.{names.file_part(row['dataset'])}.{names.file_part(row['judge'])}": row[c] for _, row in r.table.iterrows()
               for c in [*columns.AGREEMENT, *columns.SHARES] if row[c] == row[c]}
    key = compare_run.compare_key(r.experiment, r.sweep, "labels", {"formats": r.formats, "datasets": sorted(set(r.table["dataset"])),
                                                                    "judges": sorted(set(r.table["judge"]))})
    h = r.header()
    note = (
        f"compare report of labels-only runs: {h['selection']}; datasets {h['datasets']}; "
        f"{len(set(r.table['judge']))} judges"
    )
    inputs = {"labels_runs": list(r.runs["run_id"]), "sweeps": list(r.runs["sweep_id"].dropna())}
    run_id, r.superseded = compare_run.log(client, r.experiment, r.sweep, key, f"compare-labels/{r.sweep or 'all'}", note, files,
                                           inputs, metrics=metrics)
    return run_id
