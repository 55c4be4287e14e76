"""judgebench-compare experiment=NAME [sweep=ID] [out=DIR] [tracking_uri=URI]"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mlflow.tracking import MlflowClient

from judgebench.compare import report as report_mod
from judgebench.compare.collect import CompareError

USAGE = "usage: judgebench-compare experiment=NAME [sweep=ID] [out=DIR] [tracking_uri=URI] [log=true|false]"
KEYS = {"experiment", "sweep", "out", "tracking_uri", "log"}


def default_tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlruns' / 'mlflow.db'}"


def parse(argv: list[str]) -> dict[str, str]:
    args = {}
    for a in argv:
        key, sep, value = a.partition("=")
        if not sep or key not in KEYS:
            raise CompareError(f"unexpected argument {a!r}; expected key=value with key in {sorted(KEYS)}\n{USAGE}")
        args[key] = value
    if "experiment" not in args:
        raise CompareError(f"experiment=NAME is required\n{USAGE}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per downloaded CSV is noise
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    try:
        args = parse(argv)
        uri = args.get("tracking_uri") or default_tracking_uri()
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
            raise CompareError(f"no MLflow store at {uri[len('sqlite:///'):]} (run the grid first, or pass tracking_uri=...)")
        client = MlflowClient(uri)
        sweep = args.get("sweep") or None
        rep = report_mod.build(client, args["experiment"], sweep)
        out = Path(args.get("out") or Path("compare-out") / args["experiment"])
        files = report_mod.write(rep, out)
        print(rep.markdown())
        print(f"written: {', '.join(str(f) for f in files)}")
        if args.get("log", "true").lower() != "false":
            run_id = report_mod.log_compare_run(client, args["experiment"], sweep, files)
            print(f"logged as MLflow run {run_id} in experiment {args['experiment']!r}")
    except CompareError as e:
        print(f"judgebench-compare: {e}", file=sys.stderr)
        return 2
    return 0
