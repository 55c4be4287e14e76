"""Discriminative power of the judges against the oracle rankers' construction order, and whether label agreement
(kappa) predicts it.

The oracle rankers are built in a known order, Perfect > Swap[3] > Swap[2] > Swap[1] > Swap[2,3] > Swap[1,2]
(docs/protocol.md#oracle-rankers; a ``Swap[k] hole`` is its ``Swap[k]``): the truth is known, so a judge is tested
against it, not against the humans' significance verdicts (which count queries and label ties more than
separability: by construction most pairs differ in the same direction on every query where they differ). Per judge
and per constructed pair (A above B):

1. ``as_constructed`` / ``reversed``: an exact two-sided sign test over the queries where the judge's nDCG@10 of A
   and B differ, Holm-adjusted over the judge's pairs; significant with more queries putting A above B: as
   constructed, the other way: reversed; else ``undecided``. Agreeing with the construction is never an error;
2. ``worse_than_humans``: does the judge separate the pair less well than the humans? Per query e = sign(human
   difference) - sign(judge difference), both oriented by the construction; an exact one-sided sign test that e is
   more often positive than negative, Holm over the judge's pairs;
3. the oracles-only per-query tau-b with its delta-method t interval (metrics/query_tau.py) and, as points, tau-b
   and tau_AP of the mean orderings (no interval: docs/protocol.md#calibration).

Across judges, Spearman's rho of kappa with pairs as constructed and with the per-query tau, each with an exact
permutation test (every ordering of the judges up to 8, else ``n_resamples`` random ones), Holm over the statistics
of a dataset, and rho's interval (:func:`rho_interval`). Two-sided, the smallest p a permutation test of n judges can
give is 2 / n!: below :func:`min_judges` judges (5 at alpha 0.05) the answer is "too few judges to say".
"""

from __future__ import annotations

import itertools
import math
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from judgebench.compare.base.artifacts import REFERENCES, per_query_matrix
from judgebench.compare.base.reference import References, own_rows
from judgebench.compare.base.resampling import Resampling
from judgebench.metrics import tau_b
from judgebench.metrics.correlation import tau_ap
from judgebench.metrics.query_tau import query_tau
from judgebench.metrics.significance import holm

PERMUTATIONS = 10_000  # random orderings of the judges in the permutation test (past exact_max judges)
PERMUTATION_TEST = Resampling(n_resamples=PERMUTATIONS)  # the report's seed, level and alpha replace the rest
MIN_JUDGES = 3  # the table needs 3 judges; the correlation's verdict needs min_judges(alpha)
CONSTRUCTION = ("Perfect", "Swap[3]", "Swap[2]", "Swap[1]", "Swap[2,3]", "Swap[1,2]")  # best first
COLUMNS = [
    "dataset",
    "judge",
    "kappa_graded",
    "pairs",
    "as_constructed",
    "reversed",
    "undecided",
    "worse_than_humans",
    "human_as_constructed",
    "query_tau_oracles",
    "query_tau_oracles_lo",
    "query_tau_oracles_hi",
    "tau_oracles",
    "tau_ap_oracles",
]
CORRELATIONS = ["dataset", "statistic", "rho", "rho_lo", "rho_hi", "p_value", "p_holm", "judges", "verdict"]
STATISTICS = {"as_constructed": "pairs ordered as constructed", "query_tau_oracles": "oracles-only per-query tau"}
TOO_FEW = "too few judges to say"
ROUGH_BELOW = 10  # judges under which rho's interval undercovers a strong association (benchmarks/calibration.py)


@dataclass
class Discrimination:
    """``table``: one row per (dataset, judge), ranked by pairs as constructed, then fewer pairs worse than humans,
    then per-query tau; ``correlations``: rho of kappa with each statistic; ``human``: per dataset (pairs the humans
    order as constructed, constructed pairs); ``answers``: the one-sentence answer per dataset."""

    table: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLUMNS))
    correlations: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CORRELATIONS))
    human: dict[str, tuple[int, int]] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(len(self.table))


def construction_rank(system: str) -> int | None:
    """The system's place in CONSTRUCTION (0 = Perfect), a ``hole`` partner's as its mirror's; None if not there."""
    name = re.sub(r"\s+hole$", "", str(system).strip())
    return CONSTRUCTION.index(name) if name in CONSTRUCTION else None


def ranked_judges(table1: pd.DataFrame, exclude=()) -> list[str]:
    """The judges the section ranks: Table 1's judge columns but the human references and ``exclude`` (the virtual
    judges: built from the others' labels, they are no judge of their own)."""
    return [c for c in table1.columns if c != "type" and c not in REFERENCES and c not in set(exclude)]


def oracles_in_order(table1: pd.DataFrame) -> list[str]:
    """Table 1's oracle systems that have a place in the construction order, best first."""
    known = [s for s in table1.index if table1.at[s, "type"] == "oracle" and construction_rank(s) is not None]
    return sorted(known, key=construction_rank)


def applies(table1: pd.DataFrame, exclude=()) -> bool:
    """Only with at least two oracle rankers of known construction order and MIN_JUDGES judges."""
    return len(oracles_in_order(table1)) >= 2 and len(ranked_judges(table1, exclude)) >= MIN_JUDGES


def min_judges(alpha: float) -> int:
    """The fewest judges at which a two-sided exact permutation test of a rank correlation can reach ``alpha``."""
    return next(n for n in range(2, 30) if 2 / math.factorial(n) <= alpha)


def analyse(
    per_query: pd.DataFrame,
    t1: dict[str, pd.DataFrame],
    table2: pd.DataFrame,
    refs: References,
    resampling: Resampling = PERMUTATION_TEST,
    exclude=(),
) -> Discrimination:
    """The discrimination table, the correlations and the answer of every dataset where :func:`applies`;
    ``resampling`` holds the permutation test's random orderings and seed, the intervals' level and alpha."""
    n_resamples, seed, level, alpha = resampling.n_resamples, resampling.seed, resampling.level, resampling.alpha
    rows, corr, human, answers = [], [], {}, {}
    kappa = {
        (d, j): k for d, j, k in zip(table2.get("dataset", []), table2.get("judge", []), table2.get("kappa_graded", []))
    }
    for dataset, table in t1.items():
        if not applies(table, exclude):
            continue
        oracles, judges = oracles_in_order(table), ranked_judges(table, exclude)
        d = per_query[(per_query["dataset"] == dataset) & per_query["system"].isin(oracles)]
        d = d.assign(query_id=d["query_id"].astype(str))
        queries = sorted(d["query_id"].unique())
        own = own_rows(d)
        of = own.groupby("judge", sort=False).indices
        found = []
        for judge in judges:
            mine = per_query_matrix(own.iloc[of.get(judge, [])], oracles, queries)
            theirs = per_query_matrix(
                refs.rows(dataset, judge)
                .pipe(lambda f: f[f["system"].isin(oracles)])
                .assign(query_id=lambda f: f["query_id"].astype(str)),
                oracles,
                queries,
            )
            found.append(
                {
                    "dataset": dataset,
                    "judge": judge,
                    "kappa_graded": kappa.get((dataset, judge), math.nan),
                    **pair_tests(mine, theirs, alpha),
                    **orderings(mine, theirs, oracles, level),
                }
            )
        frame = pd.DataFrame(found, columns=COLUMNS)
        frame = frame.sort_values(
            ["as_constructed", "worse_than_humans", "query_tau_oracles"],
            ascending=[False, True, False],
            kind="stable",
            na_position="last",
        )
        rows.append(frame)
        human[dataset] = (int(frame["human_as_constructed"].max()), len(oracles) * (len(oracles) - 1) // 2)
        c = correlations(frame, alpha, n_resamples, seed, level).assign(dataset=dataset)[CORRELATIONS]
        corr.append(c)
        answers[dataset] = answer(dataset, c, len(frame), alpha)
    if not rows:
        return Discrimination()
    return Discrimination(pd.concat(rows, ignore_index=True), pd.concat(corr, ignore_index=True), human, answers)


def sign_p(plus: np.ndarray, minus: np.ndarray, two_sided: bool = True) -> np.ndarray:
    """Exact sign-test p values of ``plus`` against ``minus`` counts (binomial, 1/2): two-sided, or one-sided that
    ``plus`` is the larger; 1 where no query differs."""
    n = plus + minus
    if two_sided:
        return np.minimum(1.0, 2 * stats.binom.cdf(np.minimum(plus, minus), n, 0.5))
    return stats.binom.sf(plus - 1, n, 0.5)


def pair_tests(judge: np.ndarray, human: np.ndarray, alpha: float) -> dict:
    """Counts of the constructed pairs (rows of the (oracles, queries) matrices are in construction order) the judge
    orders as constructed / reversed / undecided, separates worse than humans, and the humans order as constructed."""
    i, j = np.triu_indices(judge.shape[0], k=1)  # i above j by construction
    sj, sh = np.sign(judge[i] - judge[j]), np.sign(human[i] - human[j])
    both = ~(np.isnan(sj) | np.isnan(sh))
    sj, sh = np.where(both, sj, 0.0), np.where(both, sh, 0.0)

    def ordered(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        plus, minus = (s > 0).sum(axis=1), (s < 0).sum(axis=1)
        significant = holm(sign_p(plus, minus)) < alpha
        return significant & (plus > minus), significant & (plus < minus)

    up, down = ordered(sj)
    human_up, _ = ordered(sh)
    e = sh - sj
    worse = holm(sign_p((e > 0).sum(axis=1), (e < 0).sum(axis=1), two_sided=False)) < alpha
    return {
        "pairs": len(i),
        "as_constructed": int(up.sum()),
        "reversed": int(down.sum()),
        "undecided": int(len(i) - up.sum() - down.sum()),
        "worse_than_humans": int(worse.sum()),
        "human_as_constructed": int(human_up.sum()),
    }


def orderings(judge: np.ndarray, human: np.ndarray, oracles: list[str], level: float) -> dict:
    """The per-query tau with its interval, and tau-b and tau_AP of the mean orderings (points)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an oracle without values under a judge: nan, left out
        j, h = np.nanmean(judge, axis=1), np.nanmean(human, axis=1)
    keep = ~np.isnan(j) & ~np.isnan(h)
    out = dict.fromkeys(
        ["query_tau_oracles", "query_tau_oracles_lo", "query_tau_oracles_hi", "tau_oracles", "tau_ap_oracles"], math.nan
    )
    if keep.sum() >= 2:
        q = query_tau(judge[keep], human[keep], level)
        names = [s for s, k in zip(oracles, keep) if k]
        out.update(
            query_tau_oracles=float(q.tau),
            query_tau_oracles_lo=float(q.lo),
            query_tau_oracles_hi=float(q.hi),
            tau_oracles=float(tau_b(j[keep], h[keep])[0]),
            tau_ap_oracles=tau_ap(dict(zip(names, j[keep])), dict(zip(names, h[keep]))),
        )
    return out


def correlations(
    frame: pd.DataFrame, alpha: float = 0.05, n_resamples: int = 10_000, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Spearman's rho of kappa with each statistic across judges with its ``level`` interval (:func:`rho_interval`),
    its exact permutation p (two-sided), Holm over the statistics, and the verdict: "predicts" (rho > 0, Holm
    p < alpha), "no evidence", or TOO_FEW judges."""
    rows = []
    for stat in STATISTICS:
        f = frame[["kappa_graded", stat]].dropna().astype(float)
        k, s = f["kappa_graded"].to_numpy(), f[stat].to_numpy()
        n = len(f)
        rho, p = math.nan, math.nan
        if n >= 3 and np.ptp(k) > 0 and np.ptp(s) > 0:
            rho = float(stats.spearmanr(k, s).statistic)
            p = permutation_p(k, s, n_resamples, seed)
        lo, hi = rho_interval(np.array([rho]), n, level)
        rows.append({"statistic": stat, "rho": rho, "rho_lo": lo[0], "rho_hi": hi[0], "p_value": p, "judges": n})
    out = pd.DataFrame(rows)
    out["p_holm"] = holm(out["p_value"].to_numpy(float))
    few = min_judges(alpha)
    out["verdict"] = [
        TOO_FEW
        if n < few
        else "undefined (no variation)"
        if r != r
        else "predicts"
        if r > 0 and p < alpha
        else "no evidence"
        for n, r, p in zip(out["judges"], out["rho"], out["p_holm"])
    ]
    return out


def rho_interval(rho: np.ndarray, n: int, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Spearman's rho's interval over n judges: Fisher's z with Bonett & Wright's standard error
    sqrt((1 + rho^2 / 2) / (n - 3)) (Psychometrika 65, 2000), back through tanh. NaN under 4 judges or where
    |rho| = 1 (z is infinite there: no width to give). Its coverage (benchmarks/calibration.py, bivariate normal
    judges) is 0.956-0.962 at 12 and 33 judges; under ROUGH_BELOW it runs from 0.85 (5 judges, rho 0.8) to 0.985
    (5 judges, no association)."""
    rho = np.asarray(rho, dtype=float)
    if n < 4:
        return np.full(rho.shape, math.nan), np.full(rho.shape, math.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(np.abs(rho) < 1, np.arctanh(np.clip(rho, -1, 1)), math.nan)
    half = stats.norm.ppf((1 + level) / 2) * np.sqrt((1 + rho**2 / 2) / (n - 3))
    return np.tanh(z - half), np.tanh(z + half)


def permutation_p(x: np.ndarray, y: np.ndarray, n_resamples: int = 10_000, seed: int = 0, exact_max: int = 8) -> float:
    """Two-sided permutation p of Spearman's rho: the share of orderings of ``y`` against ``x`` whose |rho| reaches the
    observed one; every one of the n! orderings up to ``exact_max`` judges, else (1 + hits) / (1 + n_resamples) over
    random ones from ``np.random.default_rng(seed)``. A permutation keeps the values, so rho is the Pearson correlation
    of the (average) ranks, computed for all orderings at once."""
    rx, ry = stats.rankdata(x), stats.rankdata(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    n = len(rx)
    if n <= exact_max:
        orders = np.array(list(itertools.permutations(range(n))))
    else:
        rng = np.random.default_rng(seed)
        orders = np.argsort(rng.random((n_resamples, n)), axis=1)
    scale = np.sqrt((rx * rx).sum() * (ry * ry).sum())
    if scale == 0:  # one side constant: no rho
        return math.nan
    observed, null = abs(rx @ ry) / scale, np.abs(ry[orders] @ rx) / scale
    hits = int((null >= observed - 1e-12).sum())
    return hits / len(orders) if n <= exact_max else (1 + hits) / (1 + n_resamples)


def _rho_text(row) -> str:
    name = STATISTICS[row.statistic]
    if row.rho != row.rho:
        return f"rho(kappa, {name}) undefined ({row.verdict})"
    interval = "" if row.rho_lo != row.rho_lo else f" [{row.rho_lo:+.2f}, {row.rho_hi:+.2f}]"
    rough = f" (rough under {ROUGH_BELOW} judges)" if interval and row.judges < ROUGH_BELOW else ""
    return (
        f"rho(kappa, {name}) = {row.rho:+.2f}{interval}{rough}, permutation p = {row.p_value:.3g} "
        f"(Holm {row.p_holm:.3g}): {row.verdict}"
    )


def answer(dataset: str, corr: pd.DataFrame, judges: int, alpha: float = 0.05) -> str:
    """One sentence: does label agreement predict discriminative power here?"""
    rows = list(corr.itertuples(index=False))
    verdicts = [r.verdict for r in rows]
    if judges < min_judges(alpha):
        head = (
            f"there are too few judges ({judges}; a permutation test needs {min_judges(alpha)} to reach alpha "
            f"{alpha:g}) to say"
        )
    else:
        head = (
            "label agreement predicts"
            if all(v == "predicts" for v in verdicts)
            else "label agreement partly predicts"
            if "predicts" in verdicts
            else "there is no evidence that label agreement predicts"
        )
        head += f" discriminative power across {judges} judges"
    return f"On {dataset}, {head}: " + "; ".join(_rho_text(r) for r in rows) + "."
