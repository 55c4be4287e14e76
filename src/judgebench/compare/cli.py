"""judgebench-compare experiment=NAME [key=value ...]: the cross-judge report from MLflow.

Hydra-style key=value arguments, read through a structured OmegaConf config (``CompareArgs``: each option's
type, default and help in one place): a typo is an error naming the valid keys (exit 2), not a silently
ignored override, and ``--help`` is made from the same schema.
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
from dataclasses import field, fields, make_dataclass
from pathlib import Path
from typing import Optional

from mlflow.tracking import MlflowClient
from omegaconf import MISSING, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, ValidationError

from judgebench.compare import console, labels_report
from judgebench.compare import report as report_mod
from judgebench.compare.base import names
from judgebench.compare.base.reference import CHOICES
from judgebench.compare.budget import experiment as human_budget
from judgebench.compare.budget import signals as budget_signals
from judgebench.errors import print_error
from judgebench.exceptions import CompareError
from judgebench.metrics import designs
from judgebench.secrets import install_log_scrubbing, mask_url


def _text(shown: str, help: str, expected: str = "") -> dict[str, str]:
    """How an option reads on the command line: the usage line's value, its help, what a valid value is."""
    return {"shown": shown, "help": help, "expected": expected}


# The options of the report are declared once, typed, with their defaults: ``Options`` (compare/base/report_model.py).
# The command line adds how each reads there (HELP) and the options of the command itself (COMMAND: type, default,
# text); ``CompareArgs``, the schema the arguments are read through, is made from both.
COMMAND = {
    "experiment": (str, MISSING, _text("NAME", "the MLflow experiment of the grid (required)")),
    "sweep": (
        Optional[str],
        None,
        _text("ID", "only runs of this sweep id (default: the latest finished run of every cell)"),
    ),
    "out": (
        Optional[str],
        None,
        _text(
            "DIR",
            "output directory (default: compare-out/NAME; a NAME with other characters than letters, digits\n"
            "and _.- is made one: its plain characters and a hash)",
        ),
    ),
    "format": (
        Optional[str],
        None,
        _text(
            "md,csv,tex,png,html",
            "which files to write (default: all five; html = report.html, one self-contained page); a\n"
            "short summary is printed, the full report is report.md / report.html",
        ),
    ),
    "tracking_uri": (
        Optional[str],
        None,
        _text("URI", "the MLflow store (default: MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db)"),
    ),
    "log": (
        bool,
        True,
        _text("true|false", "log the files as a compare run in the experiment (default: true)", "true or false"),
    ),
    "calibration_human_labels": (
        Optional[str],
        None,
        _text(
            "FILE",
            "TREC qrels or a filled sheet of the plan's queries labelled by humans:\n"
            "the report (in OUT/readback) gives the corrected estimates from them\n"
            "alone, with the plan's probabilities (the plan is read from OUT/plan)",
        ),
    ),
}
HELP = {
    "datasets": _text(
        "a,b",
        "datasets to report (default: all); a requested dataset without runs is listed as missing;\n"
        "name@HASH picks one identity of a dataset whose runs used other qrels, pools or passages",
    ),
    "judges": _text(
        "x,y",
        "judges to report (default: all); the human column is always there. A name holding a comma\n"
        "goes in double quotes, a double quote in it doubled: judges='\"gpt, tuned\",human' (the\n"
        "single quotes keep the shell off; the same for datasets and panel)",
    ),
    "alpha": _text("0.05", "significance level of the paired t-tests", "a number between 0 and 1"),
    "correction": _text(
        "holm|none", "holm: judge-vs-human decisions use Holm-adjusted p (Table 3 always shows both)", "holm or none"
    ),
    "bootstrap": _text(
        "1000",
        "resamples of the queries for self-preference's bootstrap-t (0: none; "
        "Table 6's t intervals of the means are skipped too)",
        "a whole number >= 0",
    ),
    "level": _text(
        "0.95",
        "confidence level of every interval (bootstrap, self-preference, the human budget and its plan)",
        "a number between 0 and 1",
    ),
    "seed": _text("0", "bootstrap seed", "a whole number >= 0"),
    "panel": _text(
        "j1,j2",
        "judges of the cross-family panel (default: one judge per non-human, non-simulated family\n"
        "if there are 2 or more such families, else all non-human judges)",
    ),
    "reference": _text(
        "|".join(CHOICES),
        "the human values judges are compared with in every statistic (tau, gaps, significance,\n"
        "bias, scatter, bootstrap, calibration): human_judged (default; per judge, the human labels of\n"
        "the pairs that judge labelled, normalised as its labels are), human_labelset (the human labels\n"
        "of the whole label set: what a perfect judge scores) or human (all qrels: the paper's Table 1)",
        "one of " + ", ".join(CHOICES),
    ),
    "allow_mixed_versions": _text(
        "false", "put runs of different metric versions in one report (default: refused)", "true or false"
    ),
    "calibration": _text(
        "ppi,ppi++,linear,label,human_only",
        "estimators of the human-budget experiment besides judge_only (default: none, experiment off):\n"
        'human_only, ppi, ppi++, ppi++_insample, linear, label (docs/compare.md: "Correcting a judge\n'
        'with a few human labels")',
    ),
    "calibration_k": _text(
        ",".join(human_budget.DEFAULT_K),
        "numbers of human-labelled queries to sample (whole numbers >= 2, or all; default "
        + ",".join(human_budget.DEFAULT_K)
        + ")",
    ),
    "resamples": _text("200", "random samples of queries per k (default 200; seeded by seed)", "a whole number >= 1"),
    "plan": _text(
        "budget",
        "plan=budget: write into OUT/plan human_budget_plan.tsv, the queries to label, a qrels\n"
        "template of their pairs and the assessors' sheets (query and passage texts); print predicted\n"
        "interval widths and the k needed per system pair (docs/compare.md)",
        "budget",
    ),
    "budget": _text(
        "K", "human-labelled queries the plan may spend (with plan=budget; whole number >= 2)", "a whole number >= 2"
    ),
    "strategy": _text(
        "|".join(designs.STRATEGIES),
        "which queries the plan draws: uniform, stratified or active "
        "(default uniform: active did not beat it in benchmarks/calibration.py)",
        "one of " + ", ".join(designs.STRATEGIES),
    ),
    "signal": _text(
        "|".join(budget_signals.SIGNALS),
        "what active/stratified draw on (default systems): the systems'\n"
        "spread, the judges' spread, the judge's label entropy, or its mean label",
        "one of " + ", ".join(budget_signals.SIGNALS),
    ),
    "allocation": _text(
        "neyman|proportional",
        "stratified: queries per stratum by Neyman allocation or proportional",
        "neyman or proportional",
    ),
    "pairs": _text("A:B,C:D", "system pairs the plan reports (default: every pair)"),
}
ORDER = (
    "experiment",
    "sweep",
    "datasets",
    "judges",
    "out",
    "format",
    "alpha",
    "correction",
    "bootstrap",
    "level",
    "seed",
    "panel",
    "reference",
    "allow_mixed_versions",
    "tracking_uri",
    "log",
    "calibration",
    "calibration_k",
    "resamples",
    "plan",
    "budget",
    "strategy",
    "signal",
    "allocation",
    "pairs",
    "calibration_human_labels",
)  # the order of --help
TEXT_VALUED = {"plan": Optional[str]}  # plan=budget on the command line, a yes/no in Options


def _as_argument(name: str) -> tuple[type, object]:
    """An Options field as the command line holds it: lists as text (``_names`` splits them), the default alike."""
    f = {f.name: f for f in fields(report_mod.Options)}[name]
    if name in TEXT_VALUED:
        return TEXT_VALUED[name], None
    kind = {"float": float, "int": int, "bool": bool, "str": str, "int | None": Optional[int]}.get(
        str(f.type), Optional[str]
    )
    default = f.default
    if isinstance(default, (tuple, list)):
        default = ",".join(default) or None
        kind = str if default is not None else Optional[str]
    return kind, default


def _schema() -> type:
    made = []
    for name in ORDER:
        kind, default, text = COMMAND[name] if name in COMMAND else (*_as_argument(name), HELP[name])
        made.append((name, kind, field(default=default, metadata=text)))
    return make_dataclass("CompareArgs", made)


CompareArgs = _schema()
CompareArgs.__doc__ = (
    "Every option of judgebench-compare (struct mode: any other key is an error), made from Options and\n"
    "COMMAND. Lists stay text: a name in double quotes may hold a comma (``_names``)."
)
SHARED = [
    n for n in ORDER if n not in COMMAND
]  # the options the command line passes on to Options, as they are named there
# read by _calibration, _calibration_k and _plan, which check them together
PARSED_APART = {"calibration", "calibration_k", "plan", "budget", "strategy", "signal", "allocation", "pairs"}


def _usage() -> str:
    """--help, from the schema: the usage line, then each option's help."""
    shown = [
        f"{f.name}={f.metadata['shown']}"
        if f.default is MISSING
        else f"[{DOTTED.get(f.name, f.name)}={f.metadata['shown']}]"
        for f in fields(CompareArgs)
    ]
    lines, line = [], "usage: judgebench-compare"
    for item in shown:
        if len(line) + 1 + len(item) > 118:
            lines.append(line)
            line = " " * 26
        line += " " + item
    lines.append(line)
    for f in fields(CompareArgs):
        first, *rest = f.metadata["help"].split("\n")
        name = DOTTED.get(f.name, f.name)
        lines.append(f"  {name:<12} {first}" if len(name) <= 12 else f"  {name}  {first}")
        lines.extend(" " * 15 + r for r in rest)
    return "\n".join(lines)


PLAN_DIR, READBACK_DIR = "plan", "readback"  # under out=: the planner's files, the read-back's report
DOTTED = {"calibration_human_labels": "calibration.human_labels"}  # the schema's name -> what the command line says


USAGE = _usage()
KEYS = {DOTTED.get(f.name, f.name) for f in fields(CompareArgs)}
_FIELDS = {f.name: f for f in fields(CompareArgs)}


def default_tracking_uri() -> str:
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlruns' / 'mlflow.db'}"


def parse(argv: list[str]) -> dict:
    """The arguments through the schema: a key it lacks, or a value of the wrong type, is one line naming the key.
    Returns every option (defaults filled in) and, under ``"given"``, what the command line set, as typed."""
    cfg = OmegaConf.structured(CompareArgs)
    given: dict[str, str] = {}
    for a in argv:
        key, sep, value = a.partition("=")
        unexpected = f"unexpected argument {a!r}; expected key=value with key in {sorted(KEYS)}\n{USAGE}"
        if not sep or key in DOTTED:  # only the dotted spelling is an option
            raise CompareError(unexpected)
        key = {v: k for k, v in DOTTED.items()}.get(key, key)
        try:
            cfg[key] = value.replace("${", "\\${")  # a name is text, never an interpolation
        except (ConfigKeyError, ConfigAttributeError):  # struct mode: a key the schema lacks
            raise CompareError(unexpected) from None
        except ValidationError:
            raise CompareError(f"{key}={value!r}: expected {_FIELDS[key].metadata['expected']}") from None
        given[key] = value
    if OmegaConf.is_missing(cfg, "experiment"):
        raise CompareError(f"experiment=NAME is required\n{USAGE}")
    args = OmegaConf.to_container(cfg, resolve=True)
    args["given"] = given
    return args


def _names(args: dict[str, str], key: str) -> list[str] | None:
    """A comma-separated list; an item in double quotes may hold commas ("a, b"), a doubled quote is a quote."""
    value = args.get(key) or ""
    try:
        items = next(csv.reader([value], skipinitialspace=True, strict=True), [])
    except csv.Error:
        raise CompareError(
            f"{key}={value!r}: expected names separated by commas, a name holding a comma in double quotes "
            f"(e.g. {key}='\"a, b\",c'), a double quote inside one doubled"
        ) from None
    items = [v.strip() for v in items if v.strip()]
    return items or None


def _check(args: dict, key: str, ok) -> None:
    if not ok(args[key]):
        raise CompareError(
            f"{key}={str(args['given'].get(key, args[key]))!r}: expected {_FIELDS[key].metadata['expected']}"
        )


def options(args: dict) -> report_mod.Options:
    """Validated options: a bad value is one clear line and exit 2, before anything is read."""
    _check(args, "reference", lambda v: v in CHOICES)
    args["correction"] = args["correction"].lower()
    _check(args, "correction", lambda v: v in ("holm", "none"))
    _check(args, "alpha", lambda v: 0 < v < 1)
    _check(args, "level", lambda v: 0 < v < 1)
    _check(args, "bootstrap", lambda v: v >= 0)
    _check(args, "seed", lambda v: v >= 0)
    _check(args, "resamples", lambda v: v >= 1)
    formats = tuple(_names(args, "format") or report_mod.FORMATS)
    bad = [f for f in formats if f not in report_mod.FORMATS]
    if bad:
        raise CompareError(f"format: unknown {bad}; expected some of {','.join(report_mod.FORMATS)}")
    values = {
        name: _names(args, name) if _as_argument(name)[0] is Optional[str] else args[name]
        for name in SHARED
        if name not in PARSED_APART
    }
    return report_mod.Options(
        **{
            **values,
            "formats": formats,
            "calibration": _calibration(args),
            "calibration_k": _calibration_k(args),
            **_plan(args),
        }
    )


def _plan(args: dict) -> dict:
    """plan=budget budget=K [strategy=] [pairs=], or calibration.human_labels=FILE; the plan's keys need plan=budget."""
    given = args["given"]
    if args["plan"] is not None:
        _check(args, "plan", lambda v: v == "budget")
        if args["budget"] is None:
            raise CompareError("plan=budget: set budget=K too, the number of queries humans may label (e.g. budget=20)")
        _check(args, "budget", lambda v: v >= 2)
        if args["calibration_human_labels"]:
            raise CompareError(
                "plan=budget and calibration.human_labels: one at a time (write the plan, label it, then read it back)"
            )
    elif given.keys() & {"budget", "strategy", "pairs", "signal", "allocation"}:
        raise CompareError(
            "budget/strategy/signal/allocation/pairs: set plan=budget too (e.g. plan=budget budget=20 strategy=active)"
        )
    _check(args, "strategy", lambda v: v in designs.STRATEGIES)
    _check(args, "signal", lambda v: v in budget_signals.SIGNALS)
    _check(args, "allocation", lambda v: v in ("neyman", "proportional"))
    return {
        "plan": args["plan"] == "budget",
        "budget": args["budget"],
        "strategy": args["strategy"],
        "signal": args["signal"],
        "allocation": args["allocation"],
        "pairs": _names(args, "pairs"),
        "human_labels": args["calibration_human_labels"],
    }


def _calibration(args: dict) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(n.lower() for n in _names(args, "calibration") or ()))
    bad = [n for n in chosen if n not in human_budget.NAMES and n != "judge_only"]
    if bad:
        raise CompareError(f"calibration: unknown {bad}; expected some of {','.join(human_budget.NAMES)}")
    return chosen  # judge_only runs whenever the experiment does


def _calibration_k(args: dict) -> tuple[str, ...]:
    ks = _names(args, "calibration_k")
    if not ks or not all(k == "all" or (k.isdigit() and int(k) >= 2) for k in ks):
        raise CompareError(
            f"calibration_k={args['calibration_k']!r}: expected a list of whole numbers >= 2 or all, e.g. 5,10,20,all"
        )
    if (
        "calibration" not in args["given"]
        and "plan" not in args["given"]
        and args["given"].keys() & {"calibration_k", "resamples"}
    ):
        raise CompareError("calibration_k/resamples: set calibration=NAMES too (e.g. calibration=ppi,human_only)")
    return tuple(dict.fromkeys(ks))


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
    bare = urllib.parse.urlunsplit(
        (parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""), parts.path, "", "")
    )
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(
            bare.rstrip("/") + "/health", timeout=timeout_s
        ):
            pass
    except urllib.error.HTTPError:
        return  # it answers (an auth proxy, an older server without /health): MLflow will tell the rest
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise CompareError(
            f"the MLflow tracking server {mask_url(uri)} cannot be reached ({reason}); start it or pass "
            "tracking_uri=..."
        ) from None


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
        uri = args["tracking_uri"] or default_tracking_uri()
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
        check_out(out, args["out"])
        probe_tracking_server(uri)
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
