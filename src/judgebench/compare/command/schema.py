"""judgebench-compare's command line as one typed schema: each option's type, default, usage text and help.

The report's options are declared once, in ``Options`` (compare/base/report_model.py); this module adds how each
reads on the command line and the options of the command itself, and makes ``CompareArgs`` from both: the
structured OmegaConf config the key=value arguments are read through (a typo is an error naming the valid keys,
not a silently ignored override) and ``--help`` (``USAGE``), so the two never disagree.
"""

from __future__ import annotations

from dataclasses import field, fields, make_dataclass
from typing import Optional

from omegaconf import MISSING, OmegaConf
from omegaconf.errors import ConfigAttributeError, ConfigKeyError, ValidationError

from judgebench.compare.base.reference import CHOICES
from judgebench.compare.base.report_model import Options
from judgebench.compare.budget import experiment as human_budget
from judgebench.compare.budget import signals as budget_signals
from judgebench.exceptions import CompareError
from judgebench.metrics import designs


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


def as_argument(name: str) -> tuple[type, object]:
    """An Options field as the command line holds it: lists as text (``validate.names`` splits them), the default
    alike."""
    f = {f.name: f for f in fields(Options)}[name]
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
        kind, default, text = COMMAND[name] if name in COMMAND else (*as_argument(name), HELP[name])
        made.append((name, kind, field(default=default, metadata=text)))
    return make_dataclass("CompareArgs", made)


CompareArgs = _schema()
CompareArgs.__doc__ = (
    "Every option of judgebench-compare (struct mode: any other key is an error), made from Options and\n"
    "COMMAND. Lists stay text: a name in double quotes may hold a comma (``validate.names``)."
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


DOTTED = {"calibration_human_labels": "calibration.human_labels"}  # the schema's name -> what the command line says


USAGE = _usage()
KEYS = {DOTTED.get(f.name, f.name) for f in fields(CompareArgs)}
FIELDS = {f.name: f for f in fields(CompareArgs)}


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
            raise CompareError(f"{key}={value!r}: expected {FIELDS[key].metadata['expected']}") from None
        given[key] = value
    if OmegaConf.is_missing(cfg, "experiment"):
        raise CompareError(f"experiment=NAME is required\n{USAGE}")
    args = OmegaConf.to_container(cfg, resolve=True)
    args["given"] = given
    return args
