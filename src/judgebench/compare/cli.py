"""judgebench-compare experiment=NAME [key=value ...]: the cross-judge report from MLflow.

The command in order: the arguments read through their schema (compare/command/schema.py) and validated
(compare/command/validate.py), the output folder and the store checked (compare/command/preflight.py), then the
grid's report and the labels-only report built, written, summarised on the terminal and logged as compare runs.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mlflow.tracking import MlflowClient

from judgebench.compare import console, labels_report
from judgebench.compare import report as report_mod
from judgebench.compare.base import names
from judgebench.compare.command import preflight, schema, validate
from judgebench.errors import print_error
from judgebench.exceptions import CompareError
from judgebench.secrets import install_log_scrubbing

PLAN_DIR, READBACK_DIR = "plan", "readback"  # under out=: the planner's files, the read-back's report


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    install_log_scrubbing()
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per downloaded CSV is noise
    if any(a in ("-h", "--help") for a in argv):
        print(schema.USAGE)
        return 0
    try:
        started = time.perf_counter()
        args = schema.parse(argv)
        opts = validate.options(args)
        uri = args["tracking_uri"] or preflight.default_tracking_uri()
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).exists():
            raise CompareError(
                f"no MLflow store at {uri[len('sqlite:///') :]} (run the grid first, or pass tracking_uri=...)"
            )
        out = Path(args["out"] or Path("compare-out") / names.file_part(args["experiment"]))
        if (
            opts.human_labels
        ):  # the read-back's plan is where the planner wrote it (out stays out of the compare key otherwise)
            opts.plan_dir = out / PLAN_DIR if (out / PLAN_DIR).is_dir() else out
        if opts.plan or opts.human_labels:  # a folder of their own: the grid's report beside them stays as it was
            out = out / (PLAN_DIR if opts.plan else READBACK_DIR)
        preflight.check_out(out, args["out"])
        preflight.probe_tracking_server(uri)
        client = MlflowClient(uri)
        sweep = args["sweep"] or None
        log = args["log"]
        labels = labels_report.build(client, args["experiment"], sweep, opts)  # None: no labels-only runs
        if labels is None or labels_report.has_runs(client, args["experiment"], "job", sweep):
            rep = report_mod.build(client, args["experiment"], sweep, opts)
            files = report_mod.write(rep, out)
            print(console.summary(rep, out, time.perf_counter() - started))
            if log:
                run_id = report_mod.log_compare_run(client, args["experiment"], sweep, files, rep)
                print(console.logged(run_id, args["experiment"], rep.superseded))
            out = out / "labels"  # labels-only runs beside grid runs: their report in a folder of its own
        if labels is not None:
            files = labels_report.write(labels, out)
            print(console.labels_summary(labels, out, time.perf_counter() - started))
            if log:
                run_id = labels_report.log_compare_run(client, labels, files)
                print(console.logged(run_id, args["experiment"], labels.superseded))
    except CompareError as e:
        print_error(str(e), "judgebench-compare")
        return 2
    return 0
