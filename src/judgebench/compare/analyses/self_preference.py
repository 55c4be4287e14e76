"""The self-preference analysis: does a judge favour the rankers of its own model family, and by how much?

For each judge J and each ranker family F, the gap of each system s of F on each query (judge nDCG@10 minus
J's human reference, through :class:`References`), then the statistics of
:mod:`judgebench.metrics.self_preference`: J's self-preference (own family vs the other families' LLM systems)
and, for two judges of two families with rankers of both, their 2 x 2 interaction; each with a 95 % paired
bootstrap interval over queries (compare/analyses/bootstrap.py's draws: queries sorted, a fresh generator per dataset,
the same resamples for every judge) and its two-sided test of 0 on the same resamples (the symmetric bootstrap-t
guarded by the t test: see
metrics.self_preference.GuardedBootstrapT); ``verdict`` says what the report may claim, Holm-adjusted over the rows.
Families are data: ``judge_family`` and
``ranker_family`` tags of the job runs; a judge matches the systems whose family is its own, by equal text.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from judgebench.compare.analyses.bootstrap import resample_indices
from judgebench.compare.base.artifacts import REFERENCES, per_query_matrix
from judgebench.compare.base.reference import OWN, ROLE, References
from judgebench.compare.base.resampling import Resampling
from judgebench.compare.base.tables import datasets_with_rows, judge_columns
from judgebench.metrics.self_preference import FamilyInteraction, GuardedBootstrapT, SelfPreference, family_mean
from judgebench.metrics.significance import holm

# What names a judge's contrast of its own family's systems with the others: the first columns of this analysis's rows
# and of the run-type bias's (compare/analyses/family_bias.py), which contrasts the same judge with every other system.
CONTRAST = ["dataset", "judge", "judge_family", "reference", "own_systems", "other_systems"]
SELF = [
    *CONTRAST,
    "queries",
    "gap_own",
    "gap_other",
    "self_preference",
    "lo",
    "hi",
    "p_value",
]
INTERACTION = [
    "dataset",
    "judge_a",
    "family_a",
    "judge_b",
    "family_b",
    "reference",
    "queries",
    "interaction",
    "lo",
    "hi",
    "p_value",
]
GAPS = ["dataset", "judge_family", "ranker_family", "judges", "systems", "mean_gap"]


def system_families(jobs: pd.DataFrame) -> dict[tuple[str, str], str]:
    """(dataset, system) -> ranker family, from the runs' ``ranker_family`` tags (systems without one are left out)."""
    if "ranker_family" not in jobs:
        return {}
    known = jobs.dropna(subset=["ranker_family"])
    known = known[known["ranker_family"].astype(str) != ""]
    return {(d, s): str(f) for d, s, f in zip(known["dataset"], known["system"], known["ranker_family"])}


def judge_families(jobs: pd.DataFrame) -> dict[str, str]:
    """judge -> family (the judges with runs; virtual judges and the human references have none here)."""
    known = jobs.dropna(subset=["judge_family"])
    return {j: str(f) for j, f in zip(known["judge"], known["judge_family"]) if str(f) and j not in REFERENCES}


def gap_matrix(
    per_query: pd.DataFrame, refs: References, dataset: str, judge: str, systems: list[str], queries: list[str]
) -> np.ndarray:
    """(systems, queries) judge nDCG@10 minus the judge's reference, nan where either is missing."""
    d = per_query[(per_query["dataset"] == dataset) & (per_query["judge"] == judge) & (per_query[ROLE] == OWN)]
    return per_query_matrix(d, systems, queries) - per_query_matrix(refs.rows(dataset, judge), systems, queries)


def _with_interval(d: np.ndarray, idx: np.ndarray, level: float) -> dict:
    point = float(np.nanmean(d)) if np.isfinite(d).any() else math.nan
    lo, hi, p = GuardedBootstrapT(level)(d, idx)
    return {"queries": int(np.isfinite(d).sum()), "lo": lo, "hi": hi, "p_value": p, "_point": point}


def queries_and_resamples(rows: pd.DataFrame, n_resamples: int, seed: int) -> tuple[list[str], np.ndarray]:
    """A dataset's queries, sorted, and the (n_resamples, n) query resamples drawn for them: the bootstrap contract
    (compare/analyses/bootstrap.py: sorted queries, one generator per dataset) that self-preference and the run-type
    bias share."""
    queries = sorted(rows["query_id"].astype(str).unique())
    idx = (
        resample_indices(len(queries), n_resamples, seed) if n_resamples > 0 else np.zeros((0, len(queries)), dtype=int)
    )
    return queries, idx


def analyse(
    per_query: pd.DataFrame,
    t1: dict[str, pd.DataFrame],
    jobs: pd.DataFrame,
    refs: References,
    resampling: Resampling = Resampling(),
) -> dict[str, pd.DataFrame]:
    """{"self_preference", "interaction", "gaps"} frames (columns SELF + p_holm + verdict, INTERACTION, GAPS) over every
    dataset; ``resampling`` holds the bootstrap's resamples and seed, the intervals' level and the verdicts' alpha."""
    n_resamples, seed, level, alpha = resampling.n_resamples, resampling.seed, resampling.level, resampling.alpha
    fam_of_system, fam_of_judge = system_families(jobs), judge_families(jobs)
    self_rows, pair_rows, gap_rows = [], [], []
    for dataset, table, d in datasets_with_rows(per_query, t1):
        queries, idx = queries_and_resamples(d, n_resamples, seed)
        systems = [s for s in table.index if (dataset, s) in fam_of_system]
        families = list(dict.fromkeys(fam_of_system[(dataset, s)] for s in systems))
        of = {f: [s for s in systems if fam_of_system[(dataset, s)] == f] for f in families}
        llm = set(table.index[table["type"] == "llm"])
        judges = [j for j in judge_columns(table) if j in fam_of_judge]
        gaps = {j: dict(zip(systems, gap_matrix(per_query, refs, dataset, j, systems, queries))) for j in judges}
        for j in judges:
            own = of.get(fam_of_judge[j], [])
            other = [s for s in systems if s in llm and fam_of_system[(dataset, s)] != fam_of_judge[j]]
            if not own or not other:
                continue
            mine, theirs = np.array([gaps[j][s] for s in own]), np.array([gaps[j][s] for s in other])
            contrast = SelfPreference()(mine, theirs)
            stats = _with_interval(contrast, idx, level)
            on = np.isfinite(contrast)  # the statistic's own queries: both gaps defined
            self_rows.append(
                {
                    "dataset": dataset,
                    "judge": j,
                    "judge_family": fam_of_judge[j],
                    "reference": refs.reference,
                    "own_systems": ", ".join(own),
                    "other_systems": ", ".join(other),
                    "gap_own": _mean(family_mean(mine)[on]),
                    "gap_other": _mean(family_mean(theirs)[on]),
                    "self_preference": stats.pop("_point"),
                    **stats,
                }
            )
        for a, b in itertools.combinations(judges, 2):
            fa, fb = fam_of_judge[a], fam_of_judge[b]
            if fa == fb or not of.get(fa) or not of.get(fb):
                continue
            rows = lambda judge, fam: np.array([gaps[judge][s] for s in of[fam]])  # noqa: E731
            contrast = FamilyInteraction()(rows(a, fa), rows(a, fb), rows(b, fa), rows(b, fb))
            stats = _with_interval(contrast, idx, level)
            pair_rows.append(
                {
                    "dataset": dataset,
                    "judge_a": a,
                    "family_a": fa,
                    "judge_b": b,
                    "family_b": fb,
                    "reference": refs.reference,
                    "interaction": stats.pop("_point"),
                    **stats,
                }
            )
        for jf in dict.fromkeys(fam_of_judge[j] for j in judges):
            members = [j for j in judges if fam_of_judge[j] == jf]
            for rf in families:
                values = np.array(
                    [
                        np.nanmean(gaps[j][s]) if np.isfinite(gaps[j][s]).any() else np.nan
                        for j in members
                        for s in of[rf]
                    ]
                )
                gap_rows.append(
                    {
                        "dataset": dataset,
                        "judge_family": jf,
                        "ranker_family": rf,
                        "judges": ", ".join(members),
                        "systems": ", ".join(of[rf]),
                        "mean_gap": float(np.nanmean(values)) if np.isfinite(values).any() else math.nan,
                    }
                )
    own = pd.DataFrame(self_rows, columns=SELF)
    own["p_holm"] = holm(own["p_value"].to_numpy(float))
    own["verdict"] = [verdict(lo, hi, p, alpha) for lo, hi, p in zip(own["lo"], own["hi"], own["p_holm"])]
    return {
        "self_preference": own,
        "interaction": pd.DataFrame(pair_rows, columns=INTERACTION),
        "gaps": pd.DataFrame(gap_rows, columns=GAPS),
    }


def _mean(x: np.ndarray) -> float:
    return float(np.mean(x)) if len(x) else math.nan


def empty() -> dict[str, pd.DataFrame]:
    """The frames of a report with nothing to analyse."""
    return {
        "self_preference": pd.DataFrame(columns=[*SELF, "p_holm", "verdict"]),
        "interaction": pd.DataFrame(columns=INTERACTION),
        "gaps": pd.DataFrame(columns=GAPS),
    }


def verdict(lo: float, hi: float, p_holm: float, alpha: float = 0.05) -> str:
    """What the report may claim of one row: "favours" (interval above 0 and Holm-adjusted p below alpha),
    "disfavours" (below 0, the same p), else "no evidence". The section's sentences and the findings panel both read
    it, so they cannot disagree."""
    if lo == lo and hi == hi and p_holm == p_holm and p_holm < alpha:
        if lo > 0:
            return "favours"
        if hi < 0:
            return "disfavours"
    return "no evidence"


def finding(row: pd.Series, statements: int = 1, alpha: float = 0.05) -> str:
    """One sentence per judge from its ``verdict``: favours (or disfavours) its own family by X [lo, hi], or no
    evidence (a direction needs the interval off 0 and the bootstrap p, Holm-adjusted over the ``statements`` judge x
    dataset rows, below alpha)."""
    value, lo, hi = row["self_preference"], row["lo"], row["hi"]
    p_holm = row.get("p_holm", row["p_value"])
    said = row.get("verdict") or verdict(lo, hi, p_holm, alpha)
    head = f"{row['dataset']} / {row['judge']} (family {row['judge_family']})"
    adjusted = f", Holm-adjusted over {statements} statements p = {p_holm:.3g}" if statements > 1 else ""
    interval = f"{value:+.3f} [{lo:+.3f}, {hi:+.3f}] nDCG@10, p = {row['p_value']:.3g}{adjusted}"
    if not (lo == lo and hi == hi):
        return f"{head}: self-preference {value:+.3f} (no interval)"
    if said == "favours":
        return f"{head} favours its own family's rankers by {interval}."
    if said == "disfavours":
        return f"{head} rates its own family's rankers below the other LLM rankers, by {interval}."
    why = "the interval covers 0" if lo <= 0 <= hi else f"not significant after Holm's adjustment at alpha {alpha:g}"
    return f"{head}: no evidence that it favours its own family ({interval}; {why})."


def findings(result: dict[str, pd.DataFrame], jobs: pd.DataFrame) -> list[str]:
    """The report's sentences: one per judge that shares a family with a ranker, else one line saying none does."""
    rows = result["self_preference"]
    if len(rows):
        return [finding(r, len(rows)) for _, r in rows.iterrows()]
    judges = judge_families(jobs)
    rankers = sorted(set(system_families(jobs).values()))
    shown = ", ".join(f"{j} ({f})" for j, f in judges.items()) or "none"
    return [
        f"No judge shares a family with a ranker here (judges: {shown}; ranker families: "
        f"{', '.join(rankers) or 'none'}), "
        "or no other LLM family to compare with: no self-preference to measure."
    ]
