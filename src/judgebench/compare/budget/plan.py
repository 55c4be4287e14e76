"""The human-budget planner: which queries to send to assessors, what intervals K labels buy, and how many
labels it takes to tell two systems apart.

It works on compare's calibration cells (human_budget.Cell: per-query judge values ``f`` and the judge's
human reference ``y``, systems x queries). The sampling designs are metrics/designs.py's; their signal ``u``
is the judge's own, no human label (budget_signals.py; default the spread of the systems' nDCG@10 under the
judge on each query). The predictions (widths, k needed) need the variances of human - judge, which only human labels
give: they are read from the cell's human reference, used as a pilot (a previous round, or the experiment's
held-back qrels). ``k needed`` is the smallest k whose predicted standard error of a pair's difference
(design variance + the variance of the n-query mean, what compare's significance decisions use) gives a
two-sided t-test at ``alpha`` (df those of the design's interval) power ``power`` against the pilot's difference
(the noncentral t; a z power claimed 0.8 where the t-test had 0.56 at k = 5); "not reachable with this judge"
when even k = n does not. Figures on fewer than designs.MIN_LABELS labels, or under designs.MIN_QUERIES queries,
carry designs.warning's line: benchmarks/calibration.py finds them off target.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from judgebench.compare.budget import signals as budget_signals
from judgebench.compare.budget.experiment import Cell
from judgebench.exceptions import CompareError
from judgebench.metrics import designs

UNREACHABLE = "not reachable with this judge"
FIGURE_K = (5, 10, 15, 20, 30)
POWER = 0.8  # the power k_needed is asked for
NOT_BETTER = (
    "note: in benchmarks/calibration.py (DL19/DL20-grounded simulations) the {strategy} design on the planner's "
    "label-free signals did not beat uniform (active's estimates' sd 0.93-1.18 times uniform's, Neyman-stratified's "
    "0.82-1.16, at 8 and 20 labels); "
    "uniform is the default"
)
PREDICTION = [
    "dataset",
    "judge",
    "strategy",
    "k",
    "target",
    "system",
    "other",
    "estimate_pilot",
    "predicted_width",
    "k_needed",
    "alpha",
    "power",
    "warning",
]
MEASURED = [
    "dataset",
    "judge",
    "strategy",
    "k",
    "labels_mean",
    "predicted_width",
    "measured_width",
    "coverage",
    "samples",
    "flagged",
]  # flagged: under designs.MIN_LABELS labels or MIN_QUERIES queries, off target in the calibration


def systems_disagreement(cell: Cell) -> np.ndarray:
    """(n,) per query: the standard deviation of the systems' judge values (a small floor keeps pi > 0)."""
    return budget_signals.systems(cell)


def build(strategy: str, u: np.ndarray, k: int, allocation: str = "neyman"):
    """The design of ``strategy`` at k on signal u (``allocation``: the stratified design's, neyman or proportional)."""
    return designs.design(strategy, u, k, **({"allocation": allocation} if strategy == "stratified" else {}))


def pairs_of(cell: Cell, wanted: list[str] | None) -> list[tuple[int, int]]:
    """The system pairs asked for (``A:B`` items; default every pair), as row indices of the cell."""
    pos = {s: i for i, s in enumerate(cell.systems)}
    if not wanted:
        return [(i, j) for i in range(len(cell.systems)) for j in range(i + 1, len(cell.systems))]
    out = []
    for item in wanted:
        splits = [(item[:c], item[c + 1 :]) for c, ch in enumerate(item) if ch == ":"]
        hit = [(pos[a.strip()], pos[b.strip()]) for a, b in splits if a.strip() in pos and b.strip() in pos]
        if not hit:
            raise CompareError(
                f"pairs: {item!r} is not two systems of {cell.dataset} as A:B; its systems are "
                f"{', '.join(cell.systems)}"
            )
        out.append(hit[0])
    return out


def _targets(cell: Cell, pairs: list[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray, list[tuple[str, str, str]]]:
    """y and f stacked: every system's values, then each pair's differences; and their (target, system, other)."""
    i, j = (np.array([p[k] for p in pairs], dtype=int) for k in (0, 1))
    y = np.vstack([cell.y, cell.y[i] - cell.y[j]])
    f = np.vstack([cell.f, cell.f[i] - cell.f[j]])
    names = [("mean", s, "") for s in cell.systems] + [
        ("difference", cell.systems[a], cell.systems[b]) for a, b in pairs
    ]
    return y, f, names


def _sizes(design, y: np.ndarray, f: np.ndarray) -> list[tuple[float, np.ndarray, float]]:
    """(weight, df (m,), variance scale) per sample size the design can give: one for a fixed-size design;
    for Poisson sampling every size k >= 2 with its probability, df k - 1 and variance k0 / k (k0 = E k)."""
    if not hasattr(design, "size_pmf"):
        return [(1.0, design.predicted_df(y, f), 1.0)]
    pmf = design.size_pmf()
    k0 = float(design.pi.sum())
    return [(float(pmf[k]), np.full(len(y), k - 1.0), k0 / k) for k in range(2, len(pmf)) if pmf[k] > 1e-9]


def predicted_width(design, y: np.ndarray, f: np.ndarray, k: int, level: float) -> np.ndarray:
    """The expected width about the n-query mean of the design's t-interval, 2 t sqrt(predicted design variance),
    t at the interval's df (averaged over the sample sizes a Poisson design gives, those of 2 or more labels)."""
    parts = _sizes(design, y, f)
    total = sum(w for w, _, _ in parts)
    t = sum(w * stats.t.ppf((1 + level) / 2, df) * np.sqrt(scale) for w, df, scale in parts) / total
    return 2 * t * np.sqrt(design.predicted_var(y, f))


DRAWS = 400  # draws of a stratified plan on the pilot its power is read from


def power(design, y: np.ndarray, f: np.ndarray, k: int, alpha: float = 0.05) -> np.ndarray:
    """(m,) the power of the two-sided t-test compare decides with (|estimate| / se beyond t(1 - alpha/2, df),
    df the design's) against the pilot's mean of each row. Where the design fixes df (uniform's k - 1, each
    sample size of a Poisson design): the noncentral t with noncentrality effect / se (se: design variance + the
    variance of the n-query mean), scipy.stats.nct, a Poisson design's averaged over its sample sizes (one of
    under 2 labels decides nothing). A stratified design's df (Satterthwaite's) and variance are estimated together
    from 3-5 labels a stratum, so its power is read from the test itself: _drawn_power."""
    if isinstance(design, designs.Stratified):
        return _drawn_power(design, y, f, alpha)
    n = y.shape[1]
    var, var_query, effect = design.predicted_var(y, f), y.var(axis=1, ddof=1) / n, np.abs(y.mean(axis=1))
    out = 0.0
    for w, df, scale in _sizes(design, y, f):
        se = np.sqrt(var * scale + var_query)
        delta = effect / np.where(se > 0, se, 1e-300)
        crit = stats.t.ppf(1 - alpha / 2, df)
        out = out + w * (stats.nct.sf(crit, df, delta) + stats.nct.cdf(-crit, df, delta))
    return out


def _drawn_power(design, y: np.ndarray, f: np.ndarray, alpha: float, draws: int = DRAWS) -> np.ndarray:
    """(m,) the test's power with its cut-off t(df) sqrt(var_test) taken from ``draws`` draws of the design on the
    pilot (seed 0: a plan's claim is the same on every run), each estimated as compare estimates it, and the
    estimate normal about the pilot's mean with the design's variance plus that of the n-query mean:
    mean over draws of P(|estimate| > cut-off). Averaging a probability, not a 0/1 decision, keeps the draws' own
    noise small. The closed form at the pilot's df claimed 0.70 where the test had 0.65 (43 queries, 20 labels;
    benchmarks/calibration.py)."""
    e, df = design.estimate(y, f, design.draw(draws, 0))
    cut = stats.t.ppf(1 - alpha / 2, df) * np.sqrt(e.var_test)
    sd = np.sqrt(design.predicted_var(y, f) + y.var(axis=1, ddof=1) / y.shape[1])
    sd, effect = np.where(sd > 0, sd, 1e-300), y.mean(axis=1)
    return (stats.norm.sf((cut - effect) / sd) + stats.norm.cdf((-cut - effect) / sd)).mean(axis=0)


def k_needed(
    cell: Cell,
    strategy: str,
    pairs: list[tuple[int, int]],
    alpha: float = 0.05,
    power_wanted: float = 0.8,
    u: np.ndarray | None = None,
    allocation: str = "neyman",
) -> list:
    """Per pair, the smallest k in 2..n reaching ``power_wanted`` (module docstring), else UNREACHABLE."""
    y, f, _ = _targets(cell, pairs)
    m = len(cell.systems)
    y, f = y[m:], f[m:]
    n = y.shape[1]
    u = systems_disagreement(cell) if u is None else u
    out: list = [UNREACHABLE] * len(pairs)
    for k in range(2, n + 1):
        got = power(build(strategy, u, k, allocation), y, f, k, alpha) >= power_wanted
        for p in np.flatnonzero(got):
            if out[p] == UNREACHABLE:
                out[p] = k
        if all(v != UNREACHABLE for v in out):
            break
    return out


@dataclass
class Plan:
    """One (dataset, judge)'s plan: the design at budget k and the queries drawn for labelling."""

    dataset: str
    judge: str
    strategy: str
    budget: int
    queries: list[str]
    design: object
    selected: np.ndarray  # (n,) bool
    signal: str = "systems"
    allocation: str = "neyman"
    u: np.ndarray | None = None  # (n,) the signal the design was built on

    def rows(self) -> pd.DataFrame:
        strata = self.design.strata if isinstance(self.design, designs.Stratified) else np.zeros(len(self.queries), int)
        return pd.DataFrame(
            {
                "dataset": self.dataset,
                "judge": self.judge,
                "strategy": self.strategy,
                "budget": self.budget,
                "query_id": self.queries,
                "stratum": strata,
                "inclusion_probability": self.design.pi,
                "selected": self.selected.astype(int),
                "signal": self.signal,
                "allocation": self.allocation if self.strategy == "stratified" else "",
            }
        )


def make(
    cell: Cell,
    strategy: str,
    k: int,
    seed: int,
    u: np.ndarray | None = None,
    signal: str = "systems",
    allocation: str = "neyman",
) -> Plan:
    """The plan: the design of ``strategy`` at k on signal u (default systems) and its first sample under ``seed``
    (the sample the resampling experiment's first row draws, so a read-back of it reproduces that row)."""
    u = systems_disagreement(cell) if u is None else u
    d = build(strategy, u, k, allocation)
    return Plan(
        cell.dataset,
        cell.judge,
        strategy,
        min(k, len(cell.queries)),
        list(cell.queries),
        d,
        d.draw(1, seed)[0],
        signal,
        allocation,
        u,
    )


def predictions(cell: Cell, plan: Plan, pairs: list[tuple[int, int]], alpha: float, level: float) -> pd.DataFrame:
    """Every system's mean and each pair's difference: the pilot's value, the predicted width at the budget and
    (pairs) the k needed under the plan's strategy."""
    y, f, names = _targets(cell, pairs)
    width = predicted_width(plan.design, y, f, plan.budget, level)
    needed = [""] * len(cell.systems) + k_needed(
        cell, plan.strategy, pairs, alpha, POWER, u=plan.u, allocation=plan.allocation
    )
    warn = designs.warning(plan.budget, len(cell.queries)) or ""
    return pd.DataFrame(
        [
            {
                "dataset": cell.dataset,
                "judge": cell.judge,
                "strategy": plan.strategy,
                "k": plan.budget,
                "target": t,
                "system": s,
                "other": o,
                "estimate_pilot": float(v),
                "predicted_width": float(w),
                "k_needed": kn,
                "alpha": alpha,
                "power": POWER,
                "warning": warn,
            }
            for (t, s, o), v, w, kn in zip(names, y.mean(axis=1), width, needed)
        ],
        columns=PREDICTION,
    )


def estimate(design, y: np.ndarray, f: np.ndarray, mask: np.ndarray, level: float):
    """(point, half width) arrays (R, m) of the design's estimate and t-interval."""
    e, df = design.estimate(y, f, mask)
    return e, stats.t.ppf((1 + level) / 2, df) * np.sqrt(e.var)


def measured(
    cell: Cell,
    pairs: list[tuple[int, int]],
    ks=FIGURE_K,
    resamples: int = 200,
    seed: int = 0,
    level: float = 0.95,
    u: np.ndarray | None = None,
    allocation: str = "neyman",
) -> pd.DataFrame:
    """Per strategy and k, over the pairs' differences: the mean predicted width, and over ``resamples`` samples
    of the design the mean realised width (over the samples with a finite interval) and the coverage of the n-query
    difference (over all of them: a sample of under 2 labels has an infinite interval, which covers)."""
    y, f, _ = _targets(cell, pairs)
    m = len(cell.systems)
    y, f = y[m:], f[m:]
    n, truth = y.shape[1], y.mean(axis=1)
    u = systems_disagreement(cell) if u is None else u
    rows = []
    for strategy in designs.STRATEGIES:
        for k in sorted({min(int(k), n) for k in ks}):
            d = build(strategy, u, k, allocation)
            mask = d.draw(resamples, seed)  # every sample kept: one of under 2 labels has an infinite interval
            e, half = estimate(d, y, f, mask, level)
            finite = np.isfinite(half).all(axis=1)
            rows.append(
                {
                    "dataset": cell.dataset,
                    "judge": cell.judge,
                    "strategy": strategy,
                    "k": k,
                    "labels_mean": float(mask.sum(axis=1).mean()),
                    "predicted_width": float(predicted_width(d, y, f, k, level).mean()),
                    "measured_width": float((2 * half[finite]).mean()) if finite.any() else float("inf"),
                    "coverage": float((np.abs(e.point - truth) <= half + 1e-12).mean()),
                    "samples": len(mask),
                    "flagged": "yes" if designs.warning(k, n) else "",
                }
            )
    return pd.DataFrame(rows, columns=MEASURED)
