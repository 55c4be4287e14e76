"""Simulation-based calibration of the intervals, tests and predictions that compare prints and the human-budget
planner promises: measured coverage, size, width and power against their nominal values.

    python -m benchmarks.calibration [--quick] [--out DIR] [--populations P] [--draws D] [--sizes 12 43 54]
                                     [--power-populations N] [--workers W]

--quick: 80 populations x 18 draws (1,440 replications a cell; the per-query tau rows 4 x that, rho's interval rows
10 x; the simulated power over 2,000 populations); the full run 100 x 24 (2,400; 9,600; 4,000). The (queries,
setting) cells run in parallel, one process a core (--workers), each on its own random stream, so the figures do not
depend on the number of workers. Nothing outside the repository is read: the qrels and runs are judgebench's shipped
TREC DL files.
docs/protocol.md's Calibration tables are written from the JSON by benchmarks/calibration_summary.py.

The generator is grounded in the human labels shipped with judgebench (TREC DL19 and DL20 qrels and the shipped
runs: BM25, RankGPT and RankVicuna): the human nDCG@10 of the three systems on every query of a dataset is the
pool. Each replication resamples n queries from the pool (n = 12, the toy set's size, from DL19; 43 = DL19;
54 = DL20) and makes a judge with a known bias and noise, f = y - bias - sd_q z:

- ``offset``: bias 0.1, sd 0.05 on every query;
- ``growing``: bias 0.1, sd_q = 0.25 u_q with u_q uniform on (0, 1): noise that grows with the judge's own error
  (the issue's case: a signal that knows |human - judge| is correlated with the judge's bias and its spread).

The per-query tau interval and Table 3/4's decision agreement need more than 3 systems: ``many_systems`` makes ten
around the pool's BM25 (query-level correlation) with a judge that reverses 5 adjacent pairs (or a faithful one),
and compare's own ``query_tau`` and ``decision_agreement`` run on independent query samples (agreement rows are
descriptive).

Every cell runs P populations x D draws of the sampling design (or of the test's data); the Monte-Carlo standard
error is the standard deviation of the P per-population figures over sqrt(P) (draws inside a population are not
independent), or of the R = P x D independent replications of the rows built in calibration_orderings.py (the
per-query tau interval, self-preference under symmetric, skewed and heavy-tailed nulls, the discrimination tests).
Targets: nominal-95 % intervals cover 0.93-0.97; tests' size <= 0.06 at alpha 0.05; predicted widths within 10 % of
the measured; claimed power within 0.05 of the simulated. A row meets its target only when its measured value is
within it and, for a coverage or size row, its MC s.e. is at most 0.005 (0.01 with --quick): noise can neither pass
a row nor hide a miss. A row is ``flagged`` when judgebench warns about its setting where it reports it
(designs.warning: fewer than MIN_LABELS labels or MIN_QUERIES queries; for the heavy-tail rows, designs.outlying's
warning on the draw: an unlabelled query with an outlying judge value); an unflagged row that misses is a defect.
Power rows meet when |simulated - claimed| <= 0.05 with an MC s.e. (both together) <= 0.01.
"""

from __future__ import annotations

import concurrent.futures
import functools
import gc
import multiprocessing
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from benchmarks import calibration_orderings as orderings
from benchmarks.calibration_rows import COLUMNS, POWER_SE_LIMIT, SE_LIMIT, covers, ratio, row, within
from benchmarks.common import parser, table, write_json
from judgebench.compare.analyses.bootstrap import percentile_interval, resample_indices, t_interval
from judgebench.compare.analyses.significance import decision_agreement
from judgebench.compare.base.reference import HUMAN, OWN, References
from judgebench.compare.budget import plan as budget_plan
from judgebench.data.trec import read_qrels, read_run
from judgebench.data.trec_dl import SHIPPED
from judgebench.metrics import designs, ppi
from judgebench.metrics.significance import pairwise_ttests

SIZES = {12: "dl19", 43: "dl19", 54: "dl20"}
RUNS = {
    "dl19": [
        "bm25.dl19.top100.trec",
        "reranker-runs/rankgpt-gpt-3.5-turbo.bm25top100.dl19.trec",
        "reranker-runs/rankvicuna-7b.bm25top100.dl19.trec",
    ],
    "dl20": [
        "bm25.dl20.top100.trec",
        "reranker-runs/rankgpt-gpt-3.5-turbo.bm25top100.dl20.trec",
        "reranker-runs/rankvicuna-7b.bm25top100.dl20.trec",
    ],
}
QRELS = {"dl19": "qrels.dl19-passage.txt", "dl20": "qrels.dl20-passage.txt"}
SETTINGS = ("offset", "growing")
BIAS = 0.1
EFFECT = 0.08  # the planted pair difference of power_rows
LEVEL, ALPHA = 0.95, 0.05


def pool(dataset: str) -> np.ndarray:
    """(3, Q) human nDCG@10 of the shipped runs on every judged query of ``dataset``."""
    import ir_measures
    from ir_measures import nDCG

    qrels = read_qrels(SHIPPED / QRELS[dataset])
    queries = sorted(qrels["query_id"].unique())
    out = []
    for run in RUNS[dataset]:
        values = {m.query_id: m.value for m in ir_measures.iter_calc([nDCG @ 10], qrels, read_run(SHIPPED / run))}
        out.append([values.get(q, 0.0) for q in queries])
    return np.array(out)


def population(rng, base: np.ndarray, n: int, setting: str) -> tuple[np.ndarray, np.ndarray]:
    """(y, f) (3, n): n queries resampled from the pool and a judge of ``setting`` on them."""
    y = base[:, rng.integers(0, base.shape[1], n)]
    sd = np.full(n, 0.05) if setting == "offset" else 0.25 * rng.random(n)
    return y, y - BIAS - sd * rng.standard_normal(y.shape)


def targets(y: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The planner's targets: every system's mean and each pair's difference, stacked (6, n)."""
    i, j = np.triu_indices(len(y), k=1)
    return np.vstack([y, y[i] - y[j]]), np.vstack([f, f[i] - f[j]])


def signal(name: str, y: np.ndarray, f: np.ndarray) -> np.ndarray:
    """``error``: the true |human - judge| per query (item 1's case); ``spread``: its spread about the judge's
    bias, |d - mean d| (what the design's variance depends on); ``systems``: the planner's default, label-free."""
    d = (y - f).mean(axis=0)
    if name == "error":
        return np.abs(d) + 1e-3
    if name == "spread":
        return np.abs(d - d.mean()) + 1e-3
    return budget_plan.budget_signals._floor(f.std(axis=0))


def design_rows(rng, base, n, setting, P, D) -> list[dict]:
    """Coverage and predicted/measured width and sd of every planner design at k = 8 and 20 labels (8 of the toy's 12),
    and each design's sd against uniform's: which design wins."""
    rows = []
    for k in sorted({8, min(20, n - 4)}):  # some queries always unlabelled: with all labelled there is no error
        spread: dict[str, float] = {}
        for strategy, allocation, sig in [
            ("uniform", "", "none"),
            ("stratified", "neyman", "error"),
            ("stratified", "proportional", "error"),
            ("active", "", "error"),
            ("active", "", "spread"),
            ("active", "", "systems"),
            ("stratified", "neyman", "systems"),
        ]:
            cov, ratio, sd_ratio, sd = [], [], [], []
            for p in range(P):
                y, f = targets(*population(rng, base, n, setting))
                u = signal(sig, y[:3], f[:3]) if sig != "none" else np.ones(n)
                d = budget_plan.build(strategy, u, k, allocation or "neyman")
                mask = d.draw(D, int(rng.integers(2**31)))
                e, half = budget_plan.estimate(d, y, f, mask, LEVEL)
                truth = y.mean(axis=1)
                cov.append(float((np.abs(e.point - truth) <= half + 1e-12).mean()))
                w = 2 * half[np.isfinite(half).all(axis=1)]
                pw = budget_plan.predicted_width(d, y, f, k, LEVEL)
                ratio.append(float(pw.mean() / w.mean(axis=0).mean()) if len(w) else np.nan)
                sd_ratio.append(float(np.sqrt(d.predicted_var(y, f)).mean() / e.point.std(axis=0, ddof=1).mean()))
                sd.append(float(e.point.std(axis=0, ddof=1).mean()))
            name = f"{strategy}{'/' + allocation if allocation else ''} [{sig}]" if sig != "none" else strategy
            few = designs.warning(k, n) is not None
            rows.append(
                row(f"planner {name}: coverage", setting, n, k, LEVEL, cov, "0.93-0.97", lambda m, _: covers(m), few)
            )
            rows.append(
                row(f"planner {name}: predicted/measured width", setting, n, k, 1.0, ratio, "+-10%", within(0.10), few)
            )
            rows.append(
                row(f"planner {name}: predicted/measured sd", setting, n, k, 1.0, sd_ratio, "+-10%", within(0.10), few)
            )
            spread[name] = float(np.mean(sd))
        for name, value in spread.items():  # which design wins: its estimates' sd over uniform's (the same k)
            if name != "uniform":
                rows.append(
                    row(
                        f"planner {name}: sd / uniform's sd",
                        setting,
                        n,
                        k,
                        1.0,
                        [value / spread["uniform"]] * 2,
                        "report (< 1 beats uniform)",
                        lambda m, _: True,
                    )
                )
    return rows


# --quick's populations: at 40 (720 replications, MC s.e. up to 0.006) two rows whose true coverage the full run puts
# at 0.953-0.962 read 0.975 and 0.970, past the target's 0.97 by noise alone; 80 halves that chance of a false miss.
QUICK_POPULATIONS = 80
POWER_POPULATIONS = {"quick": 2000, "full": 4000}  # populations of the simulated power (MC s.e. about 0.006 / 0.004)
# populations whose pilot gives the claim: a claim varies between populations (sd about 0.1 at k = 20), and at 200
# its MC s.e. (0.0074) was most of a power row's, which then read 0.0100 at 2,000 simulated populations
CLAIMS = 800


def power_rows(rng, base, n, setting, N, D) -> list[dict]:
    """Claimed vs simulated power of a planted pair difference (rankvicuna + EFFECT + noise vs rankvicuna),
    decided as compare decides: |estimate| / sqrt(var_test) beyond t(1 - alpha/2, df). The claim is the planner's
    power at the generator's true effect EFFECT (a population's pilot shifted to mean EFFECT, its spreads kept),
    averaged over the first CLAIMS populations, against the simulated power over N populations x D draws (it varies
    mostly between populations, whose effects differ: at 4 x 40 populations its MC s.e. was 0.02 and one row in 24
    missed by noise alone, 0.681 against a claim of 0.624 that 2,000 populations put at 0.659 vs 0.630). The row's
    mc_se joins both errors; it meets when |simulated - claimed| <= 0.05 with mc_se <= POWER_SE_LIMIT."""
    rows = []
    for k in sorted({min(5, n), min(10, n), min(20, n)}):
        for strategy in designs.STRATEGIES:
            claim, hit = [], []
            for p in range(N):
                y0, f0 = population(rng, base, n, setting)
                yb = y0[2] + EFFECT + 0.15 * rng.standard_normal(n)
                y, f = (yb - y0[2])[None], (yb - BIAS - 0.05 * rng.standard_normal(n) - f0[2])[None]
                d = budget_plan.build(strategy, signal("systems", y0, f0), k, "neyman")
                if p < CLAIMS:
                    shift = EFFECT - y.mean(
                        axis=1, keepdims=True
                    )  # the pilot at the true effect: human - judge unchanged
                    claim.append(float(budget_plan.power(d, y + shift, f + shift, k, ALPHA)[0]))
                mask = d.draw(D, int(rng.integers(2**31)))
                e, dfree = d.estimate(y, f, mask)
                tcrit = stats.t.ppf(1 - ALPHA / 2, dfree)
                with np.errstate(divide="ignore", invalid="ignore"):
                    hit.append(float((np.abs(e.point) / np.sqrt(e.var_test) > tcrit).mean()))
            c, hit = float(np.mean(claim)), np.asarray(hit)
            se = float(np.sqrt(hit.var(ddof=1) / len(hit) + np.var(claim, ddof=1) / len(claim)))
            r = row(
                f"planner {strategy}: power (claimed vs simulated)",
                setting,
                n,
                k,
                c,
                hit,
                "+-0.05",
                lambda m, nominal: abs(m - nominal) <= 0.05,
                designs.warning(k, n) is not None,
            )
            r["mc_se"] = round(se, 4)
            r["meets"] = bool(r["meets"] and se <= POWER_SE_LIMIT)
            rows.append(r)
    return rows


def heavy_tail_rows(rng, base, n, P, D) -> list[dict]:
    """Coverage at k = 20 (5 labels a stratum) of the systems' means and pair differences when the top quartile of
    the signal u carries normal noise (the control) or Student-t noise of 3 or 2 df (infinite variance) in
    human - judge, the rest normal, f = y - bias - u z:
    uniform and the stratified designs (Satterthwaite's df) under the same tails. Their misses are draws where an
    unlabelled query carries a large human - judge difference the labels cannot see; the read-back warns where an
    unlabelled query's judge value is outlying (designs.outlying, the same rule here): coverage is measured apart on
    the draws without that warning (must meet) and on those with it (flagged), each a ratio over all populations'
    draws of its kind (ratio()), with the share of draws warned and the coverage over all draws (reference)."""
    rows = []
    for tail in ("normal", "t3", "t2"):
        names = ("uniform", "stratified/neyman", "stratified/proportional")
        quiet, loud, share, every = ({name: [] for name in names} for _ in range(4))
        for p in range(P):
            y = base[:, rng.integers(0, base.shape[1], n)]
            u = 0.02 + 0.25 * rng.random(n)
            top = u >= np.quantile(u, 0.75)
            z = rng.standard_normal(y.shape)
            if tail != "normal":
                z[:, top] = rng.standard_t(int(tail[1:]), (len(y), int(top.sum())))
            y, f = targets(
                y, y - BIAS - u * z
            )  # the read-back's targets: every system's mean and each pair's difference
            truth = y.mean(axis=1)
            far = designs.outlying(f[: len(base)]).any(
                axis=0
            )  # (n,) a query where some system's judge value is outlying: the read-back's rule
            for name in names:
                d = (
                    designs.Uniform(20, n)
                    if name == "uniform"
                    else designs.Stratified.build(u, 20, allocation=name.split("/")[1])
                )
                mask = d.draw(D, int(rng.integers(2**31)))
                e, dfree = d.estimate(y, f, mask)
                half = stats.t.ppf((1 + LEVEL) / 2, dfree) * np.sqrt(e.var)
                hit = (np.abs(e.point - truth) <= half + 1e-12).mean(axis=1)  # (D,) over the targets
                warned = (far[None] & ~mask).any(axis=1)  # (D,) the read-back prints the outlier warning
                quiet[name].append((float(hit[~warned].sum()), float((~warned).sum())))
                loud[name].append((float(hit[warned].sum()), float(warned.sum())))
                share[name].append(float(warned.mean()))
                every[name].append(float(hit.mean()))
        setting = f"{tail} top quartile"
        for name in names:
            stat = f"planner {name} [heavy top stratum]"
            rows += [
                row(
                    f"{stat}: coverage, no outlier warning",
                    setting,
                    n,
                    20,
                    LEVEL,
                    [],
                    "0.93-0.97",
                    lambda m, _: covers(m),
                    estimate=ratio(*zip(*quiet[name])),
                ),
                row(
                    f"{stat}: coverage, outlier warning printed",
                    setting,
                    n,
                    20,
                    LEVEL,
                    [],
                    "0.93-0.97",
                    lambda m, _: covers(m),
                    True,
                    estimate=ratio(*zip(*loud[name])),
                ),
                row(
                    f"{stat}: share of draws warned",
                    setting,
                    n,
                    20,
                    float("nan"),
                    share[name],
                    "report",
                    lambda m, _: True,
                ),
                row(f"{stat}: coverage, all draws", setting, n, 20, LEVEL, every[name], "reference", lambda m, _: True),
            ]
    return rows


def estimator_rows(rng, base, n, setting, P, D) -> list[dict]:
    """PPI and cross-fitted PPI++ under uniform sampling of k = min(20, n - 4) labels; Table 6's t interval of a
    judge's mean nDCG@10 (coverage of the pool mean), beside the percentile bootstrap it replaced (reference row);
    Table 3/4's paired t-tests with Holm over the 3 pairs under a null of equal systems (family-wise size).
    Self-preference: calibration_orderings."""
    k = min(20, n - 4)  # some queries unlabelled: with all labelled the interval is exact
    rows, cov_ppi, cov_pp, cov_boot, cov_t, size_holm = [], [], [], [], [], []
    truth_pool = (base - BIAS).mean(axis=1)
    for p in range(P):
        y, f = targets(*population(rng, base, n, setting))
        mask = designs.Uniform(k, n).draw(D, int(rng.integers(2**31)))
        t = stats.t.ppf((1 + LEVEL) / 2, k - 1)
        for est, out in ((ppi.PPI(), cov_ppi), (ppi.PPIPlusPlus(), cov_pp)):
            e = est(y, f, mask)
            out.append(float((np.abs(e.point - y.mean(axis=1)) <= t * np.sqrt(e.var) + 1e-12).mean()))
        for _ in range(D):
            yy, ff = population(rng, base, n, setting)
            idx = resample_indices(n, 300, int(rng.integers(2**31)))
            lo, hi = zip(*(percentile_interval(ff[s][idx].mean(axis=1), LEVEL) for s in range(3)))
            cov_boot.append(np.mean((np.array(lo) <= truth_pool) & (truth_pool <= np.array(hi))))
            lo, hi = t_interval(ff, LEVEL)
            cov_t.append(np.mean((lo <= truth_pool) & (truth_pool <= hi)))
            null = yy[1][None] + 0.1 * rng.standard_normal((3, n))
            frame = pd.DataFrame(
                {"system": np.repeat(["a", "b", "c"], n), "query_id": np.tile(np.arange(n), 3), "value": null.ravel()}
            )
            size_holm.append(float(pairwise_ttests(frame, ALPHA, "holm")["significant"].any()))
    big, few = n >= 20, designs.warning(k, n) is not None  # few: compare and the planner print designs.warning there
    rows.append(
        row("PPI (uniform k labels): coverage", setting, n, k, LEVEL, cov_ppi, "0.93-0.97", lambda m, _: covers(m), few)
    )
    rows.append(
        row("PPI++ cross-fitted: coverage", setting, n, k, LEVEL, cov_pp, "0.93-0.97", lambda m, _: covers(m), few)
    )
    rows.append(
        row(
            "Table 6 t interval of mean nDCG@10: coverage",
            setting,
            n,
            n,
            LEVEL,
            cov_t,
            "0.93-0.97",
            lambda m, _: covers(m),
            not big,
        )
    )
    rows.append(
        row(
            "percentile bootstrap of mean nDCG@10 (replaced): coverage",
            setting,
            n,
            n,
            LEVEL,
            cov_boot,
            "reference",
            lambda m, _: True,
        )
    )
    rows.append(
        row(
            "Table 3/4 paired t + Holm: family-wise size",
            setting,
            n,
            n,
            ALPHA,
            size_holm,
            "<=0.06",
            lambda m, _: m <= 0.06,
        )
    )
    return rows


def many_systems(base: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Ten systems for the ordering statistics, grounded in the pool: system s on query q scores
    bm25_q + delta_s + e_sq, delta_s evenly spaced from 0 to the pool's RankGPT - BM25 gap (query-level
    correlation through bm25_q), e_sq normal with the sd of the pool's RankGPT - RankVicuna differences / sqrt 2.
    The judge is 0.1 low plus 1.5 steps lower on every odd system, so it reverses the 5 adjacent pairs (0-1, 2-3,
    ...): the population tau of its mean ordering with the humans' is (45 - 2 * 5) / 45 = 0.778, exactly (no
    clipping: means are delta_s + E bm25 and the noise has mean 0). Returns (delta, judge bias, e's sd)."""
    delta = np.linspace(0, base[1].mean() - base[0].mean(), 10)
    bias = BIAS + 1.5 * (delta[1] - delta[0]) * (np.arange(10) % 2)
    return delta, bias, float((base[1] - base[2]).std() / np.sqrt(2))


def agreement_rows(rng, base, n, setting, R) -> list[dict]:
    """Table 3/4's decision agreement by compare's own ``decision_agreement`` (paired t + Holm on both sides) on R
    replications of n queries of the ten grounded systems (descriptive rows)."""
    delta, bias, sd = many_systems(base)
    systems = [f"s{i}" for i in range(10)]
    agree, reverse = [], []
    for _ in range(R):
        q = base[0, rng.integers(0, base.shape[1], n)]
        y = q[None] + delta[:, None] + sd * rng.standard_normal((10, n))
        noise = np.full(n, 0.05) if setting == "offset" else 0.25 * rng.random(n)
        f = y - bias[:, None] - noise * rng.standard_normal((10, n))
        frames = [
            pd.DataFrame(
                {
                    "dataset": "d",
                    "system": np.repeat(systems, n),
                    "judge": name,
                    "role": role,
                    "query_id": np.tile([f"q{i:03d}" for i in range(n)], 10),
                    "value": v.ravel(),
                }
            )
            for name, role, v in ((HUMAN, HUMAN, y), ("judge", OWN, f))
        ]
        per_query = pd.concat(frames, ignore_index=True)
        counts, _ = decision_agreement(
            per_query, {"d": systems}, References(per_query, reference=HUMAN), ALPHA, use_holm=True
        )
        agree.append(counts.at[0, "agree"] / counts.at[0, "family"])
        reverse.append(counts.at[0, "reversed"] / counts.at[0, "family"])
    return [
        row(
            "Table 3/4 t + Holm: judge-human decision agreement",
            setting,
            n,
            n,
            float("nan"),
            agree,
            "descriptive",
            lambda m, _: True,
        ),
        row(
            "Table 3/4 t + Holm: reversed pairs", setting, n, n, float("nan"), reverse, "descriptive", lambda m, _: True
        ),
    ]


RHO_FACTOR = 10  # rho's interval rows are numpy over replications (0.2 s for 2,400): 10 P D, MC s.e. near 0.0015
ORDERING_FACTOR = 4  # the per-query tau rows are cheap (numpy over replications): 4 P D of them, MC s.e. near 0.004


@functools.cache
def _pool(dataset: str) -> np.ndarray:
    return pool(dataset)


def cell_rows(seed: int, n: int, setting: str, P: int, D: int, se_limit: float, power_populations: int) -> list[dict]:
    """Every row of one (n, setting) cell, on its own stream [seed, n, setting] (what a worker process runs)."""
    row.se_limit = se_limit
    gc.freeze()  # statsmodels' multipletests runs gc.collect() on every call: with the heap frozen it costs nothing
    rng = np.random.default_rng([seed, n, SETTINGS.index(setting)])
    base = _pool(SIZES[n])
    rows = design_rows(rng, base, n, setting, P, D)
    rows += power_rows(rng, base, n, setting, power_populations, D)
    rows += estimator_rows(rng, base, n, setting, P, D)
    if n >= 20 and setting == SETTINGS[0]:  # the judge's noise is the tails' here, not the setting's
        rows += heavy_tail_rows(rng, base, n, P, D)
    rows += agreement_rows(rng, base, n, setting, min(P * D, 200))
    rows += orderings.ordering_rows(row, rng, base, n, setting, ORDERING_FACTOR * P * D, many_systems)
    rows += orderings.self_preference_rows(row, rng, base, n, setting, P * D)
    rows += orderings.discrimination_rows(row, rng, base, n, setting, P * D)
    return rows


def permutation_cell(seed: int, P: int, D: int, se_limit: float) -> list[dict]:
    row.se_limit = se_limit
    rng = np.random.default_rng([seed, 99])
    permutation = orderings.permutation_rows(row, rng, P * D)
    return permutation + orderings.rho_interval_rows(row, rng, RHO_FACTOR * P * D)


def run(
    P: int, D: int, seed: int = 0, sizes=tuple(SIZES), power_populations: int | None = None, workers: int | None = None
) -> list[dict]:
    """Every cell, each on its own stream, spread over ``workers`` processes (default: every core): the rows and
    figures do not depend on the number of workers."""
    se_limit, power_populations = row.se_limit, power_populations or 4 * P
    jobs = [(cell_rows, (seed, n, setting, P, D, se_limit, power_populations)) for n in sizes for setting in SETTINGS]
    jobs.append((permutation_cell, (seed, P, D, se_limit)))
    workers = workers or os.cpu_count() or 1
    if workers == 1:
        return [r for fn, a in jobs for r in fn(*a)]
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as ex:
        order = sorted(
            range(len(jobs)), key=lambda i: -jobs[i][1][1] if jobs[i][0] is cell_rows else 0
        )  # largest n first
        futures = {i: ex.submit(jobs[i][0], *jobs[i][1]) for i in order}
        return [r for i in range(len(jobs)) for r in futures[i].result()]


def main(argv=None) -> int:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--populations", type=int, default=None, help="populations per cell (quick 80, full 100)")
    ap.add_argument("--draws", type=int, default=None, help="design draws per population (quick 18, full 24)")
    ap.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), choices=list(SIZES), help="query counts (12 43 54)"
    )
    ap.add_argument(
        "--power-populations",
        type=int,
        default=None,
        help="populations of the simulated power (quick 2000, full 4000; 4 x --populations when that is given)",
    )
    ap.add_argument("--workers", type=int, default=None, help="worker processes (default: every core)")
    args = ap.parse_args(argv)
    P = args.populations or (QUICK_POPULATIONS if args.quick else 100)
    D = args.draws or (18 if args.quick else 24)
    mode = "quick" if args.quick else "full"
    row.se_limit = SE_LIMIT[mode]
    t0 = time.perf_counter()
    power_populations = args.power_populations or (POWER_POPULATIONS[mode] if args.populations is None else 4 * P)
    rows = run(P, D, sizes=tuple(args.sizes), power_populations=power_populations, workers=args.workers)
    frame = pd.DataFrame(rows, columns=COLUMNS)
    text = table(rows, COLUMNS, f"Calibration ({P} populations x {D} draws a cell = {P * D} replications)")
    print(text)
    bad = frame[~frame["meets"] & ~frame["flagged"]]
    print(
        f"\n{len(frame)} rows; {int(frame['meets'].sum())} meet their target, {int(frame['flagged'].sum())} flagged, "
        f"{len(bad)} miss unflagged; {time.perf_counter() - t0:.0f} s"
    )
    write_json(
        "calibration",
        {
            "populations": P,
            "draws": D,
            "replications": P * D,
            "quick": args.quick,
            "se_limit": row.se_limit,
            "power_populations": power_populations,
            "ordering_replications": ORDERING_FACTOR * P * D,
            "seconds": round(time.perf_counter() - t0, 1),
            "rows": rows,
            "markdown": text,
        },
        Path(args.out),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
