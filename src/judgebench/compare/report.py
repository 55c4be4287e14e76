"""Build the whole compare report from MLflow, render it (Markdown, CSV, LaTeX, PNG) and log it as a run.

``build`` gathers the inputs every section shares (the job runs, the per-query frame, the labels, Tables 1 and 2,
the human references) and lets each section compute its own analysis (``sections.compute``); ``write`` only presents
them, so a test can check a number without parsing text.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient

from judgebench.compare import sections
from judgebench.compare.analyses import ensembles
from judgebench.compare.base import dataset_identity, tables
from judgebench.compare.base.artifacts import HUMAN, REFERENCES, Artifacts
from judgebench.compare.base.reference import CHOICES, References
from judgebench.compare.base.report_model import FORMATS, Options, Report
from judgebench.compare.renderers import html, latex
from judgebench.compare.sections.header import box as header
from judgebench.compare.sections.table2 import FIGURE_JUDGES, figure_judges
from judgebench.compare.store import compare_run
from judgebench.compare.store.collect import (
    collect_runs,
    collect_summaries,
    missing_cells,
    running_cells,
    select,
    split_views,
)
from judgebench.exceptions import CompareError
from judgebench.identity.text_view import ORIGINAL

__all__ = [
    "FIGURE_JUDGES",
    "FORMATS",
    "Options",
    "Report",
    "build",
    "figure_judges",
    "write",
    "header",
    "log_compare_run",
]


def build(client: MlflowClient, experiment: str, sweep: str | None = None, options: Options | None = None) -> Report:
    opt = options or Options()
    if opt.reference not in CHOICES:
        raise CompareError(f"reference={opt.reference!r}: expected one of {', '.join(CHOICES)}")
    if "label" in opt.calibration and opt.reference == HUMAN:
        raise CompareError(
            "calibration=label with reference=human: the label-level correction predicts nDCG normalised on the "
            "label set (as the judge's labels are), the human reference normalises on all qrels, so their gap "
            "would read as the correction's error; use reference=human_judged (default) or drop label"
        )
    names, picks = dataset_identity.parse(opt.datasets)
    everything = select(
        collect_runs(client, experiment, sweep, opt.allow_mixed_versions, picks, names), names, opt.judges
    )
    jobs, rewritten = split_views(everything)
    if jobs.empty:
        raise CompareError(
            f"experiment {experiment!r} has runs only on rewritten text views; the tables need the original view"
        )
    art = Artifacts(client)
    art.remember(everything)
    problems = art.problems
    per_query = art.per_query(jobs)
    if per_query.empty:  # every cell would read "missing": a report of nothing must not look like a result
        more = f" (and {len(problems) - 1} more like it)" if len(problems) > 1 else ""
        raise CompareError(
            f"experiment {experiment!r}: none of its {len(jobs)} job runs has a readable per_query.csv, so "
            f"there is nothing to report; first: {problems[0] if problems else 'no rows'}{more}. Were the "
            "artifacts moved or deleted? Pass the store they belong to (tracking_uri=...), or rerun the grid "
            "with force=true"
        )
    summaries = collect_summaries(client, experiment, everything, sweep)
    silent = tables.silent_judges(summaries)  # judges that labelled nothing: a note, never a number
    per_query, labels = tables.without(per_query, silent), tables.without(art.labels(everything), silent)
    types = tables.system_types(jobs)
    mute = tables.silent_everywhere(jobs, silent)
    judges = [j for j in tables.judge_order(jobs, opt.judges) if j not in mute]
    families = {j: f for j, f in zip(jobs["judge"], jobs["judge_family"].fillna("")) if j not in mute}
    # judges with runs; an imported judge (job=import_results) has no rankings to score a virtual judge's labels on
    flag = jobs["imported"].notna() if "imported" in jobs else pd.Series(False, index=jobs.index)
    imported = set(jobs.loc[flag, "judge"]) - set(jobs.loc[~flag, "judge"])
    virtual = ensembles.plan(
        [j for j in judges if (j in families or j in REFERENCES) and j not in imported], families, opt.panel
    )
    virtual, aliases = ensembles.distinct(virtual)
    vlabels = pd.DataFrame(columns=labels.columns)
    runs = art.runs(jobs) if virtual or "label" in opt.calibration or opt.human_labels else None
    if virtual:
        vlabels = pd.concat([ensembles.virtual_labels(labels, v, problems) for v in virtual], ignore_index=True)
        human_rows = per_query[per_query["judge"] == HUMAN]
        queries = {d: list(dict.fromkeys(g["query_id"])) for d, g in human_rows.groupby("dataset", sort=False)}
        per_query = pd.concat([per_query, ensembles.virtual_per_query(runs, vlabels, queries)], ignore_index=True)
        labels = pd.concat([labels, vlabels], ignore_index=True)
        judges += [v.name for v in virtual]
    datasets = list(dict.fromkeys([*(names or []), *jobs["dataset"]]))
    t1 = tables.table1(per_query, types, judges, datasets)
    original = labels[labels["text_view"] == ORIGINAL]
    refs = References(per_query, opt.reference)
    t2 = tables.without(tables.table2(t1, original, tables.usage(summaries, vlabels), refs), silent)

    running = running_cells(client, experiment, everything, sweep)
    running = running[
        running["judge"].isin(opt.judges or running["judge"]) & running["dataset"].isin(names or running["dataset"])
    ]
    report = Report(
        experiment,
        sweep,
        opt,
        jobs,
        t1,
        t2,
        missing_cells(everything, names, opt.judges, running),
        running=running,
        per_query=per_query,
        labels=labels,
        runs=runs,
        rewritten=rewritten,
        virtual=virtual,
        problems=problems,
        summaries=summaries,
        versions={
            "metric_version": sorted(everything["metric_version"].unique()),
            "judgebench": sorted(everything["version"].fillna("unknown").unique()),
        },
        aliases=aliases,
        refs=refs,
        silent=silent,
        tracking_uri=str(getattr(client, "tracking_uri", "") or ""),
        read={
            "job_runs": list(everything["run_id"]),
            "judge_summary_runs": list(summaries["run_id"]),
            "sweeps": list(everything["sweep_id"].dropna()),
        },
    )
    sections.compute(report)  # every analysis, each in its section (compare/sections)
    return report


# --------------------------------------------------------------------------- files


def _csv(frame: pd.DataFrame, path: Path, index: bool = False) -> Path:
    frame.to_csv(path, index=index)
    return path


def write(report: Report, out: Path) -> list[Path]:
    """Write the formats asked for, each section's part of each (compare/sections); returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    drawn, judges = figure_judges(report)
    note = (
        "Per-judge figures (the confusion matrices, the panels of the scatter) are drawn for the first "
        f"{len(drawn)} of "
        f"the {judges} judges, in report order; every judge's numbers are in the tables above."
        if judges > len(drawn) and "png" in report.options.formats
        else ""
    )
    box = header(report) if "html" in report.options.formats else {}  # report.html's header box, read only for it
    files = write_formats(
        report, out, report.options.formats, sections.SECTIONS, box, f"judgebench compare: {report.experiment}", note
    )
    report.files = files
    _prune(out, files)
    return files


def write_formats(r, out: Path, formats, parts: list, box: dict[str, str], title: str, note: str = "") -> list[Path]:
    """Walk ``parts`` (a report's sections) once per format asked for: CSV, the files written whatever format= says,
    LaTeX, figures, then report.md (which links the figures) and report.html; returns the files written, the two
    reports first. The grid report and the labels-only one are written alike."""
    fmt = set(formats)
    files: list[Path] = []
    if "csv" in fmt:
        files += [_csv(frame, out / f"{name}.csv", index=index) for name, frame, index in sections.csv(r, parts)]
    files += sections.files(r, out, parts)  # written whatever format= says (the planner's plan, templates, sheets)
    if "tex" in fmt:
        files += latex.write(sections.latex(r, parts), out)
    if "png" in fmt:
        files += sections.figures(r, out, parts)
    text = sections.markdown(r, parts) + html.figure_links(
        files, sections.captions(parts), note
    )  # report.md links its figures
    if "md" in fmt:
        files.insert(0, out / "report.md")
        files[0].write_text(text, encoding="utf-8")
    if "html" in fmt:
        files.insert(0, html.write(text, out, box, title))
    return files


MANIFEST = ".judgebench-report-files"  # what the last report wrote into its folder


def _prune(out: Path, files: list[Path]) -> None:
    """Remove the files an earlier report wrote here that this one did not (a table1_dl20.csv of a report that had
    DL20), and remember this report's: the folder holds one report. Files a person put there are never touched."""
    manifest = out / MANIFEST
    mine = {f.name for f in files if f.parent == out}
    before = manifest.read_text(encoding="utf-8").splitlines() if manifest.is_file() else []
    for name in before:
        if name and name not in mine and "/" not in name and not name.startswith("."):
            (out / name).unlink(missing_ok=True)
    manifest.write_text("".join(f"{n}\n" for n in sorted(mine)), encoding="utf-8")


# --------------------------------------------------------------------------- MLflow


def log_compare_run(
    client: MlflowClient, experiment: str, sweep: str | None, files: list[Path], report: Report | None = None
) -> str:
    """A run of kind "compare" in the same experiment: the options as params, each section's compare-run metrics
    (Table 2's statistics per judge, self-preference...), every file as an artifact, the runs read in inputs.json; it
    supersedes the previous compare run of the same selection (compare_run)."""
    params, metrics, inputs, note = {}, {}, {}, f"compare report of experiment {experiment}"
    if report is not None:
        o = report.options
        params = {
            "alpha": o.alpha,
            "correction": o.correction,
            "bootstrap": o.bootstrap,
            "seed": o.seed,
            "reference": o.reference,
            "metric_version": ",".join(report.versions.get("metric_version", [])),
            "datasets": ",".join(report.table1),
            "judges": ",".join(report.judges),
            "panel": (
                ",".join(next((v.members for v in report.virtual if v.name == "panel"), ()))
                or (f"= {report.aliases['panel']}" if "panel" in report.aliases else "none")
            ),
            "calibration": ",".join(o.calibration) or "none",
            "calibration_k": ",".join(o.calibration_k),
            "resamples": o.resamples,
            "plan": f"{o.strategy} budget {o.budget} signal {o.signal} allocation {o.allocation}"
            if o.plan
            else ("read back" if o.human_labels else "none"),
        }
        metrics = sections.compare_run_metrics(report)  # each section's own (Section.compare_run_metrics)
        inputs = report.read
        h = header(report)
        note = (
            f"compare report: {h['selection']}; datasets {h['datasets']}; judges {h['judges']}; reference "
            f"{h['reference']}"
        )
    key = compare_run.compare_key(experiment, sweep, "grid", report.options if report is not None else None)
    run_id, superseded = compare_run.log(
        client, experiment, sweep, key, f"compare/{sweep or 'all'}", note, files, inputs, params, metrics
    )
    if report is not None:
        report.superseded = superseded
    return run_id
