"""From the parsed command line to a validated ``Options``: every value checked before anything is read.

A bad value is one clear line naming the key and what a valid value is (exit 2), not a traceback minutes into the
report. The keys that only mean something together (the budget plan's, the human-budget experiment's) are checked
together here, so a key set without the one it needs is refused rather than ignored.
"""

from __future__ import annotations

import csv
from typing import Optional

from judgebench.compare.base.reference import CHOICES
from judgebench.compare.base.report_model import FORMATS, Options
from judgebench.compare.budget import experiment as human_budget
from judgebench.compare.budget import signals as budget_signals
from judgebench.compare.command import schema
from judgebench.exceptions import CompareError
from judgebench.metrics import designs


def names(args: dict[str, str], key: str) -> list[str] | None:
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


def check(args: dict, key: str, ok) -> None:
    if not ok(args[key]):
        raise CompareError(
            f"{key}={str(args['given'].get(key, args[key]))!r}: expected {schema.FIELDS[key].metadata['expected']}"
        )


def options(args: dict) -> Options:
    """Validated options: a bad value is one clear line and exit 2, before anything is read."""
    check(args, "reference", lambda v: v in CHOICES)
    args["correction"] = args["correction"].lower()
    check(args, "correction", lambda v: v in ("holm", "none"))
    check(args, "alpha", lambda v: 0 < v < 1)
    check(args, "level", lambda v: 0 < v < 1)
    check(args, "bootstrap", lambda v: v >= 0)
    check(args, "seed", lambda v: v >= 0)
    check(args, "resamples", lambda v: v >= 1)
    formats = tuple(names(args, "format") or FORMATS)
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise CompareError(f"format: unknown {bad}; expected some of {','.join(FORMATS)}")
    values = {
        name: names(args, name) if schema.as_argument(name)[0] is Optional[str] else args[name]
        for name in schema.SHARED
        if name not in schema.PARSED_APART
    }
    return Options(
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
        check(args, "plan", lambda v: v == "budget")
        if args["budget"] is None:
            raise CompareError("plan=budget: set budget=K too, the number of queries humans may label (e.g. budget=20)")
        check(args, "budget", lambda v: v >= 2)
        if args["calibration_human_labels"]:
            raise CompareError(
                "plan=budget and calibration.human_labels: one at a time (write the plan, label it, then read it back)"
            )
    elif given.keys() & {"budget", "strategy", "pairs", "signal", "allocation"}:
        raise CompareError(
            "budget/strategy/signal/allocation/pairs: set plan=budget too (e.g. plan=budget budget=20 strategy=active)"
        )
    check(args, "strategy", lambda v: v in designs.STRATEGIES)
    check(args, "signal", lambda v: v in budget_signals.SIGNALS)
    check(args, "allocation", lambda v: v in ("neyman", "proportional"))
    return {
        "plan": args["plan"] == "budget",
        "budget": args["budget"],
        "strategy": args["strategy"],
        "signal": args["signal"],
        "allocation": args["allocation"],
        "pairs": names(args, "pairs"),
        "human_labels": args["calibration_human_labels"],
    }


def _calibration(args: dict) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(n.lower() for n in names(args, "calibration") or ()))
    bad = [n for n in chosen if n not in human_budget.NAMES and n != "judge_only"]
    if bad:
        raise CompareError(f"calibration: unknown {bad}; expected some of {','.join(human_budget.NAMES)}")
    return chosen  # judge_only runs whenever the experiment does


def _calibration_k(args: dict) -> tuple[str, ...]:
    ks = names(args, "calibration_k")
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
