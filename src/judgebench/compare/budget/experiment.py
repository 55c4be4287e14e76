"""The human-budget experiment: how many human labels does it take to correct a judge?

A researcher has the judge's labels on the whole label set and pays humans for the label-set pairs of
a random sample of k queries. Every estimator (metrics.ppi, compare.corrections) estimates each
system's human mean nDCG@10 over all n queries from that, with a ``level`` interval; repeated over
``resamples`` samples per k, each is scored on what the truth (each judge's human reference,
compare/base/reference.py) says: Kendall's tau-b of the estimated vs the human system ordering, the inversion rate
(bias.py's definition, per sample), MAE of the system means, coverage and width of the intervals,
and the pairwise significance decisions (interval of the paired difference excludes 0) against the
humans' (paired t-test on all n queries, raw p < alpha), classed as compare's Table 4 does.

Sampling contract: per dataset the queries are sorted by query_id (string order); for each k,
``rng = np.random.default_rng([seed, k])`` and a sample is the first k of ``rng.permuted(arange(n))``
per row, the same samples for every judge and estimator of the dataset (paired comparisons). k >= n
is one sample of every query. Intervals are t-intervals with k - 1 degrees of freedom (judge only: n - 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from judgebench.compare.base.artifacts import per_query_matrix
from judgebench.compare.base.reference import References, own_rows
from judgebench.compare.base.report_model import DEFAULT_K  # noqa: F401  (the k values calibration_k= defaults to)
from judgebench.compare.base.tables import judge_columns
from judgebench.compare.budget.corrections import LabelLevel, Linear, residual_estimate
from judgebench.evaluation import class_weights
from judgebench.metrics import tau_b
from judgebench.metrics.designs import Uniform
from judgebench.metrics.ppi import BASELINES, Estimate

ESTIMATORS = {e.name: e for e in (*BASELINES, Linear(), LabelLevel())}
NAMES = tuple(n for n in ESTIMATORS if n != "judge_only")  # what calibration= may name; judge_only always runs
LEVELS = 4
COLUMNS = [
    "dataset",
    "judge",
    "reference",
    "estimator",
    "k",
    "queries",
    "samples",
    "labels_spent",
    "tau",
    "tau_sd",
    "inversion_rate",
    "mae",
    "coverage",
    "width",
    "agree",
    "missed",
    "spurious",
    "reversed",
]


@dataclass
class Cell:
    """One (dataset, judge): per-query human (y) and judge (f) values, systems x queries."""

    dataset: str
    judge: str
    systems: list[str]
    types: np.ndarray
    queries: list[str]
    y: np.ndarray
    f: np.ndarray
    pairs: np.ndarray  # label-set pairs per query (the human labels a sampled query costs)
    confusion: np.ndarray  # (n, levels, levels) pairs by (judge label, human label)
    weights: np.ndarray | None = None  # (S, n, levels) class weights of each system's run under the judge's labels
    counts: np.ndarray | None = None  # (n, levels) judge labels per query


def cells(
    per_query: pd.DataFrame,
    t1: dict[str, pd.DataFrame],
    labels: pd.DataFrame,
    refs: References,
    runs: dict[tuple[str, str], pd.DataFrame] | None,
    problems: list[str],
) -> list[Cell]:
    """Every (dataset, judge) with a judge column, y from the judge's human reference (``refs``); systems
    lacking a value under the judge or the reference on some query are left out (listed in ``problems``).
    ``runs`` only for the label estimator."""
    out = []
    for dataset, table in t1.items():
        d = own_rows(per_query[per_query["dataset"] == dataset])
        for judge in judge_columns(table):
            human = refs.rows(dataset, judge)
            queries = sorted(human["query_id"].astype(str).unique())
            systems = list(table.index)
            y, f = per_query_matrix(human, systems, queries), per_query_matrix(d[d["judge"] == judge], systems, queries)
            ok = ~(np.isnan(y).any(axis=1) | np.isnan(f).any(axis=1))
            if (~ok).any() and ok.sum() >= 2:
                problems.append(
                    f"calibration {dataset}/{judge}: systems without values on every query left out: "
                    f"{', '.join(s for s, k in zip(systems, ok) if not k)}"
                )
            if ok.sum() < 2 or len(queries) < 2:
                problems.append(
                    f"calibration {dataset}/{judge}: not run, it needs 2 or more systems and queries with values under "
                    f"the judge and its reference; found {int(ok.sum())} systems, {len(queries)} queries"
                )
                continue
            keep = [s for s, k in zip(systems, ok) if k]
            lab = labels[(labels["dataset"] == dataset) & (labels["judge"] == judge)]
            qpos = {q: i for i, q in enumerate(queries)}
            lab = lab[lab["query_id"].astype(str).isin(qpos)]
            confusion = np.zeros((len(queries), LEVELS, LEVELS))
            np.add.at(
                confusion,
                (
                    lab["query_id"].astype(str).map(qpos).to_numpy(int),
                    lab["relevance"].to_numpy(int),
                    lab["human"].to_numpy(int),
                ),
                1,
            )
            cell = Cell(
                dataset,
                judge,
                keep,
                table.loc[keep, "type"].astype(str).to_numpy(),
                queries,
                y[ok],
                f[ok],
                confusion.sum(axis=(1, 2)),
                confusion,
            )
            if runs is not None:
                qrels = lab[["query_id", "doc_id", "relevance"]]
                if all((dataset, s) in runs for s in keep) and len(qrels):
                    ws = [class_weights(runs[(dataset, s)], qrels, queries, LEVELS) for s in keep]
                    cell.weights, cell.counts = np.stack([w for w, _ in ws]), ws[0][1]
                else:
                    problems.append(
                        f"calibration {dataset}/{judge}: no run files or labels, label-level correction skipped"
                    )
            out.append(cell)
    return out


def samples(n: int, k: int, n_samples: int, seed: int) -> np.ndarray:
    """(samples, n) boolean masks of k of n queries drawn without replacement (one all-true row if k >= n): the
    uniform design's draw, so the planner's uniform samples are this experiment's."""
    return Uniform(k, n).draw(n_samples, seed)


def inverted(points: np.ndarray, truth: np.ndarray, types: np.ndarray) -> np.ndarray:
    """(R,) per sample, bias.py's flag: the LLM and oracle groups' mean-rank order flips against the truth,
    or an LLM system the humans put below some oracle is above every oracle."""
    llm, oracle = types == "llm", types == "oracle"
    if not llm.any() or not oracle.any():
        return np.zeros(points.shape[0], dtype=bool)
    ranks = stats.rankdata(-points, axis=1)
    h_ranks = stats.rankdata(-truth)
    order = np.sign(ranks[:, llm].mean(axis=1) - ranks[:, oracle].mean(axis=1))
    h_order = np.sign(h_ranks[llm].mean() - h_ranks[oracle].mean())
    above = points[:, llm] > points[:, oracle].max(axis=1, keepdims=True)
    h_above = truth[llm] > truth[oracle].max()
    return ((h_order != 0) & (order == -h_order)) | (above & ~h_above).any(axis=1)


def _estimate(
    name: str, cell: Cell, mask: np.ndarray, i: np.ndarray, j: np.ndarray
) -> tuple[Estimate, Estimate] | None:
    """Estimates of the system means and of the pair differences (a - b for pairs i, j)."""
    est = ESTIMATORS[name]
    y, f = cell.y, cell.f
    if name == "linear":
        pred = est.predict(f, y, cell.types, mask)
    elif name == "label":
        if cell.weights is None:
            return None
        pred = est.predict(cell.weights, cell.counts, cell.confusion, mask)
    else:
        return est(y, f, mask), est(y[i] - y[j], f[i] - f[j], mask)
    return residual_estimate(y, pred, mask), residual_estimate(y[i] - y[j], pred[:, i] - pred[:, j], mask)


def _decisions(d: np.ndarray, se: np.ndarray, crit: float) -> np.ndarray:
    """+1 / -1: the first / second system significantly better; 0: no decision."""
    return np.where(np.abs(d) > crit * se, np.sign(d), 0)


def experiment(
    cs: list[Cell],
    names: list[str],
    ks: list[str],
    n_samples: int,
    seed: int,
    alpha: float = 0.05,
    level: float = 0.95,
    reference: str = "human_judged",
) -> pd.DataFrame:
    """One row per (dataset, judge, estimator, k): the COLUMNS."""
    rows = []
    for cell in cs:
        n = len(cell.queries)
        truth = cell.y.mean(axis=1)
        i, j = np.triu_indices(len(cell.systems), k=1)
        dy = cell.y[i] - cell.y[j]
        human = _decisions(dy.mean(axis=1), dy.std(axis=1, ddof=1) / np.sqrt(n), stats.t.ppf(1 - alpha / 2, n - 1))
        for k in dict.fromkeys(min(n, int(v)) if v != "all" else n for v in ks):
            mask = samples(n, k, n_samples, seed)
            for name in ["judge_only", *[m for m in NAMES if m in names]]:
                got = _estimate(name, cell, mask, i, j)
                if got is None:
                    continue
                means, diffs = got
                df = n - 1 if name == "judge_only" else k - 1
                half = stats.t.ppf((1 + level) / 2, df) * np.sqrt(means.var)
                err = np.abs(means.point - truth)
                dec = _decisions(diffs.point, np.sqrt(diffs.var_test), stats.t.ppf(1 - alpha / 2, df))
                taus = tau_b(means.point.T, np.broadcast_to(truth[:, None], means.point.T.shape))
                rows.append(
                    {
                        "dataset": cell.dataset,
                        "judge": cell.judge,
                        "reference": reference,
                        "estimator": name,
                        "k": k,
                        "queries": n,
                        "samples": len(mask),
                        "labels_spent": 0.0 if name == "judge_only" else float((mask @ cell.pairs).mean()),
                        "tau": float(np.nanmean(taus)),
                        "tau_sd": float(np.nanstd(taus)),
                        "inversion_rate": float(inverted(means.point, truth, cell.types).mean()),
                        "mae": float(err.mean()),
                        "coverage": float((err <= half + 1e-12).mean()),
                        "width": float((2 * half).mean()),
                        "agree": float((dec == human).mean()),
                        "missed": float(((dec == 0) & (human != 0)).mean()),
                        "spurious": float(((dec != 0) & (human == 0)).mean()),
                        "reversed": float(((dec != 0) & (human != 0) & (dec != human)).mean()),
                    }
                )
    return pd.DataFrame(rows, columns=COLUMNS)
