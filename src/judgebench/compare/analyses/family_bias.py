"""Does a judge favour the systems of its own model family over *every* other system? The run-type bias.

The self-preference analysis (compare/analyses/self_preference.py) contrasts a judge's own family with the other
families' LLM systems, so that what a judge does to every LLM ranker alike cancels. A leaderboard asks a wider
question (the paper's "judges favour LLM-based systems", asked of TREC DL 2023): is a GPT judge's gap (judge nDCG@10
minus its human reference) larger on the runs built with GPT than on all the rest, lexical and neural runs included?
Per query q: d(q) = mean over the own-family systems of gap(s, q) - mean over every other system of gap(s, q) (the
oracle rankers aside: perturbed human rankings are no run type, and Table 5 compares them with the LLM rankers); the
statistic is its mean over queries. Queries are the resampled unit, as everywhere in compare: the interval and p
value are self-preference's (metrics/self_preference.py GuardedBootstrapT: the symmetric paired bootstrap-t over
queries joined with Student's t; their coverage and size are simulated in
tests/compare/analyses/test_family_bias.py and the calibration benchmark). Families are data: the ``judge_family``
and ``ranker_family`` tags (an imported run's from its runs table, docs/datasets.md).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from judgebench.compare.analyses.self_preference import (
    CONTRAST,
    gap_matrix,
    judge_families,
    queries_and_resamples,
    system_families,
)
from judgebench.compare.base.resampling import Resampling
from judgebench.compare.base.tables import datasets_with_rows, judge_columns
from judgebench.metrics.self_preference import GuardedBootstrapT, SelfPreference, family_mean
from judgebench.metrics.significance import holm

COLUMNS = [
    *CONTRAST,
    "n_own",
    "n_other",
    "queries",
    "gap_own",
    "gap_other",
    "family_bias",
    "lo",
    "hi",
    "p_value",
    "p_holm",
]


def contrast(own: np.ndarray, other: np.ndarray) -> np.ndarray:
    """d(q): mean gap over the own family's systems (rows of ``own``) minus mean gap over the other systems."""
    return SelfPreference()(own, other)


def inference(c: np.ndarray, idx: np.ndarray, level: float) -> tuple[float, float, float]:
    """(lo, hi, p) of the per-query contrasts ``c`` over the resamples ``idx`` (GuardedBootstrapT);
    tests/compare/analyses/test_family_bias.py simulates their coverage and size at a leaderboard's shape."""
    return GuardedBootstrapT(level)(c, idx)


def analyse(
    per_query: pd.DataFrame,
    t1: dict[str, pd.DataFrame],
    jobs: pd.DataFrame,
    refs,
    resampling: Resampling = Resampling(),
) -> pd.DataFrame:
    """One row per (dataset, judge with a family that some system shares and some system does not); ``resampling``
    holds the bootstrap's resamples and seed and the intervals' level."""
    n_resamples, seed, level = resampling.n_resamples, resampling.seed, resampling.level
    fam_of_system, fam_of_judge = system_families(jobs), judge_families(jobs)
    rows = []
    for dataset, table, d in datasets_with_rows(per_query, t1):
        queries, idx = queries_and_resamples(d, n_resamples, seed)
        systems = list(table.index)
        for judge in [j for j in judge_columns(table) if j in fam_of_judge]:
            family = fam_of_judge[judge]
            own = [s for s in systems if fam_of_system.get((dataset, s)) == family]
            other = [
                s for s in systems if fam_of_system.get((dataset, s)) != family and table.at[s, "type"] != "oracle"
            ]
            if not own or not other:
                continue
            gaps = gap_matrix(per_query, refs, dataset, judge, own + other, queries)
            mine, theirs = gaps[: len(own)], gaps[len(own) :]
            c = contrast(mine, theirs)
            on = np.isfinite(c)
            lo, hi, p = inference(c, idx, level)
            rows.append(
                {
                    "dataset": dataset,
                    "judge": judge,
                    "judge_family": family,
                    "reference": refs.reference,
                    "own_systems": ", ".join(own),
                    "other_systems": ", ".join(other),
                    "n_own": len(own),
                    "n_other": len(other),
                    "queries": int(on.sum()),
                    "gap_own": _mean(family_mean(mine)[on]),
                    "gap_other": _mean(family_mean(theirs)[on]),
                    "family_bias": _mean(c[on]),
                    "lo": lo,
                    "hi": hi,
                    "p_value": p,
                }
            )
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["p_holm"] = holm(out["p_value"].to_numpy(float))
    return out


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if len(x) else math.nan


def sentence(row, statements: int = 1, alpha: float = 0.05) -> str:
    """What the row shows, never more than its interval and test: a direction only where the interval excludes 0 and
    the (Holm-adjusted, over ``statements`` rows) p is below ``alpha``."""
    value, lo, hi, p = row.family_bias, row.lo, row.hi, row.p_holm if statements > 1 else row.p_value
    numbers = (
        f"{value:+.3f} [{lo:+.3f}, {hi:+.3f}] nDCG@10 (gap on its family's {row.n_own} systems {row.gap_own:+.3f}, "
        f"on the other {row.n_other} {row.gap_other:+.3f}; p = {row.p_value:.3g}"
        f"{f', Holm over {statements}: {p:.3g}' if statements > 1 else ''})"
    )
    if not (lo == lo and hi == hi):
        return f"family bias {value:+.3f} (no interval)"
    if lo > 0 and p < alpha:
        return (
            f"rates the systems of its own family ({row.judge_family}) higher, relative to humans, than every other "
            f"system, by {numbers}."
        )
    if hi < 0 and p < alpha:
        return (
            f"rates the systems of its own family ({row.judge_family}) lower, relative to humans, than every other "
            f"system, by {numbers}."
        )
    return f"no evidence that it favours its own family ({row.judge_family}) over the other systems: {numbers}."
