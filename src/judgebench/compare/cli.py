"""judgebench-compare experiment=NAME [key=value ...]: the cross-judge report from MLflow.

Hydra-style key=value arguments, parsed by hand: compare has no config tree, and a typo must
be an error (exit 2), not a silently ignored override.
"""

from __future__ import annotations

import csv
import os
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from mlflow.tracking import MlflowClient

from judgebench.compare import console, human_budget, labels_report, names
from judgebench.compare import report as report_mod
from judgebench.exceptions import CompareError
from judgebench.masking import install_log_scrubbing, mask_url, scrub

USAGE = """usage: judgebench-compare experiment=NAME [sweep=ID] [datasets=a,b] [judges=x,y] [out=DIR]
                          [format=md,csv,tex,png,html] [alpha=0.05] [correction=holm|none] [bootstrap=1000]
                          [seed=0] [panel=j1,j2] [reference=human_judged|human_labelset|human]
                          [allow_mixed_versions=false] [tracking_uri=URI] [log=true|false]
                          [calibration=ppi,ppi++,linear,label,human_only] [calibration_k=5,10,20,all] [resamples=200]
  sweep        only runs of this sweep id (default: the latest finished run of every cell)
  datasets     datasets to report (default: all); a requested dataset without runs is listed as missing;
               name@HASH picks one identity of a dataset whose runs used other qrels, pools or passages
  judges       judges to report (default: all); the human column is always there. A name holding a comma
               goes in double quotes, a double quote in it doubled: judges='"gpt, tuned",human' (the
               single quotes keep the shell off; the same for datasets and panel)
  out          output directory (default: compare-out/NAME; a NAME with other characters than letters, digits
               and _.- is made one: its plain characters and a hash)
  format       which files to write (default: all five; html = report.html, one self-contained page); a
               short summary is printed, the full report is report.md / report.html
  alpha        significance level of the paired t-tests
  correction   holm: judge-vs-human decisions use Holm-adjusted p (Table 3 always shows both)
  bootstrap    resamples of the queries for the 95% percentile intervals (0: none)
  seed         bootstrap seed
  panel        judges of the cross-family panel (default: one judge per non-human, non-simulated family
               if there are 2 or more such families, else all non-human judges)
  reference    the human values judges are compared with in every statistic (tau, gaps, significance,
               bias, scatter, bootstrap, calibration): human_judged (default; per judge, the human labels of
               the pairs that judge labelled, normalised as its labels are), human_labelset (the human labels
               of the whole label set: what a perfect judge scores) or human (all qrels: the paper's Table 1)
  allow_mixed_versions  put runs of different metric versions in one report (default: refused)
  log          log the files as a compare run in the experiment (default: true)
  calibration  estimators of the human-budget experiment besides judge_only (default: none, experiment off):
               human_only, ppi, ppi++, ppi++_insample, linear, label (README: "Correcting a judge with a few
               human labels")
  calibration_k  numbers of human-labelled queries to sample (whole numbers >= 2, or all; default 5,10,20,all)
  resamples    random samples of queries per k (default 200; seeded by seed)"""
KEYS = {"experiment", "sweep", "datasets", "judges", "out", "format", "alpha", "correction", "bootstrap", "seed", "panel",
        "tracking_uri", "log", "reference", "allow_mixed_versions", "calibration", "calibration_k", "resamples"}


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


def _names(args: dict[str, str], key: str) -> list[str] | None:
    """A comma-separated list; an item in double quotes may hold commas ("a, b"), a doubled quote is a quote."""
    value = args.get(key) or ""
    try:
        items = next(csv.reader([value], skipinitialspace=True, strict=True), [])
    except csv.Error:
        raise CompareError(f"{key}={value!r}: expected names separated by commas, a name holding a comma in double quotes "
                           f"(e.g. {key}='\"a, b\",c'), a double quote inside one doubled") from None
    items = [v.strip() for v in items if v.strip()]
    return items or None


def _number(args: dict[str, str], key: str, kind, default, ok, what: str):
    if key not in args:
        return default
    try:
        value = kind(args[key])
    except ValueError:
        raise CompareError(f"{key}={args[key]!r}: expected {what}") from None
    if not ok(value):
        raise CompareError(f"{key}={args[key]!r}: expected {what}")
    return value


def options(args: dict[str, str]) -> report_mod.Options:
    """Validated options: a bad value is one clear line and exit 2, before anything is read."""
    reference = args.get("reference", report_mod.HUMAN_JUDGED)
    if reference not in report_mod.CHOICES:
        raise CompareError(f"reference={reference!r}: expected one of {', '.join(report_mod.CHOICES)}")
    correction = args.get("correction", "none").lower()
    if correction not in ("holm", "none"):
        raise CompareError(f"correction={correction!r}: expected holm or none")
    formats = tuple(_names(args, "format") or report_mod.FORMATS)
    bad = [f for f in formats if f not in report_mod.FORMATS]
    if bad:
        raise CompareError(f"format: unknown {bad}; expected some of {','.join(report_mod.FORMATS)}")
    return report_mod.Options(
        datasets=_names(args, "datasets"),
        judges=_names(args, "judges"),
        alpha=_number(args, "alpha", float, 0.05, lambda v: 0 < v < 1, "a number between 0 and 1"),
        correction=correction,
        bootstrap=_number(args, "bootstrap", int, 1000, lambda v: v >= 0, "a whole number >= 0"),
        seed=_number(args, "seed", int, 0, lambda v: v >= 0, "a whole number >= 0"),
        panel=_names(args, "panel"),
        formats=formats,
        reference=reference,
        allow_mixed_versions=_flag(args, "allow_mixed_versions"),
        calibration=_calibration(args),
        calibration_k=_calibration_k(args),
        resamples=_number(args, "resamples", int, 200, lambda v: v >= 1, "a whole number >= 1"),
    )


def _calibration(args: dict[str, str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(n.lower() for n in _names(args, "calibration") or ()))
    bad = [n for n in chosen if n not in human_budget.NAMES and n != "judge_only"]
    if bad:
        raise CompareError(f"calibration: unknown {bad}; expected some of {','.join(human_budget.NAMES)}")
    return chosen  # judge_only runs whenever the experiment does


def _calibration_k(args: dict[str, str]) -> tuple[str, ...]:
    ks = _names(args, "calibration_k") if "calibration_k" in args else list(human_budget.DEFAULT_K)
    if not ks or not all(k == "all" or (k.isdigit() and int(k) >= 2) for k in ks):
        raise CompareError(f"calibration_k={args.get('calibration_k')!r}: expected a list of whole numbers >= 2 or all, e.g. 5,10,20,all")
    if "calibration" not in args and ("calibration_k" in args or "resamples" in args):
        raise CompareError("calibration_k/resamples: set calibration=NAMES too (e.g. calibration=ppi,human_only)")
    return tuple(dict.fromkeys(ks))


def _flag(args: dict[str, str], key: str) -> bool:
    value = args.get(key, "false").lower()
    if value not in ("true", "false"):
        raise CompareError(f"{key}={args[key]!r}: expected true or false")
    return value == "true"


def check_out(out: Path, given: str | None) -> None:
    """The output directory must be usable before the report is built (building it can take minutes)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".probe-"):
            pass
    except OSError as e:
        raise CompareError(f"out={given or out}: cannot write the report there ({e.strerror or e})") from None


def probe_tracking_server(uri: str, timeout_s: float = 3.0) -> None:
    """An http(s) tracking server that does not answer is one line within seconds, not MLflow's minutes of retries."""
    if not uri.startswith(("http://", "https://")):
        return
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "20")
    parts = urllib.parse.urlsplit(uri)
    bare = urllib.parse.urlunsplit((parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""), parts.path, "", ""))
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(bare.rstrip("/") + "/health", timeout=timeout_s):
            pass
    except urllib.error.HTTPError:
        return  # it answers (an auth proxy, an older server without /health): MLflow will tell the rest
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise CompareError(f"the MLflow tracking server {mask_url(uri)} cannot be reached ({reason}); start it or pass tracking_uri=...") from None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    install_log_scrubbing()
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # one bar per downloaded CSV is noise
    if any(a in ("-h", "--help") for a in argv):
        print(USAGE)
        return 0
    try:
        started = time.perf_counter()
        args = parse(argv)
        opts = options(args)
        uri = args.get("tracking_uri") or default_tracking_uri()
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
            raise CompareError(f"no MLflow store at {uri[len('sqlite:///'):]} (run the grid first, or pass tracking_uri=...)")
        out = Path(args.get("out") or Path("compare-out") / names.file_part(args["experiment"]))
        check_out(out, args.get("out"))
        probe_tracking_server(uri)
        client = MlflowClient(uri)
        sweep = args.get("sweep") or None
        log = args.get("log", "true").lower() != "false"
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
        print(f"judgebench-compare: {scrub(str(e))}", file=sys.stderr)
        return 2
    return 0
