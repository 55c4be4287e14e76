"""The planner's per-query signal u, a predictor made without human labels of how far human - judge spreads about
the judge's bias on the query (after centring, that spread, not the size of |human - judge|, is what a design's
variance depends on): the ``active`` design samples in proportion to it and ``stratified`` cuts its strata along
it (metrics/designs.py). None of these beat uniform sampling in benchmarks/calibration.py, hence the default.

- ``systems``: the spread (sd) of the systems' nDCG@10 under the judge on the query: where systems disagree,
  the judge's errors can move the order.
- ``judges``: the spread (sd over judges, mean over systems) of the judges' nDCG@10 on the query, from
  every judge of the dataset (2 or more needed): where judges disagree, at least one is wrong.
- ``entropy``: the mean entropy (nats) of the judge's label distribution over its pairs of the query,
  from the digit probabilities an LLM judge scored from log-probs logs (judge_labels.csv ``raw``,
  ``{"probs": [p0..p3]}``); a judge that logged none cannot use it.
- ``labels``: the judge's mean label on the query (its label-set pairs): strata of mostly-irrelevant and
  mostly-relevant queries, whose judge errors differ.

Each gets a small floor (1e-3 of its mean) so every inclusion probability stays above zero.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from judgebench.compare.budget.experiment import Cell
from judgebench.exceptions import CompareError

SIGNALS = ("systems", "judges", "entropy", "labels")


def _floor(u: np.ndarray) -> np.ndarray:
    return u + 1e-3 * max(float(np.mean(u)), 1e-9)


def systems(cell: Cell) -> np.ndarray:
    """(n,) the standard deviation of the systems' judge values per query."""
    return _floor(cell.f.std(axis=0))


def judges(cell: Cell, cells: list[Cell]) -> np.ndarray:
    """(n,) per query of ``cell``: the sd over the dataset's judges of each common system's judge value, averaged
    over the systems; a query only one judge has gets the mean spread of the others."""
    same = [c for c in cells if c.dataset == cell.dataset]
    if len(same) < 2:
        raise CompareError(
            f"signal=judges: {cell.dataset} has one judge ({cell.judge}); expected 2 or more judges "
            "in the experiment (else signal=systems, entropy or labels)"
        )
    common = [s for s in cell.systems if all(s in c.systems for c in same)]
    if not common:
        raise CompareError(f"signal=judges: no system of {cell.dataset} has values under every judge")
    stack = np.full((len(same), len(common), len(cell.queries)), np.nan)
    for j, c in enumerate(same):
        qpos = {q: i for i, q in enumerate(c.queries)}
        rows = [c.systems.index(s) for s in common]
        for i, q in enumerate(cell.queries):
            if q in qpos:
                stack[j, :, i] = c.f[rows, qpos[q]]
    have = (~np.isnan(stack[:, 0, :])).sum(axis=0)
    spread = np.where(have >= 2, np.nanstd(np.where(have >= 2, stack, 0.0), axis=0).mean(axis=0), np.nan)
    if np.isnan(spread).all():
        raise CompareError(f"signal=judges: no query of {cell.dataset} has values under 2 or more judges")
    return _floor(np.where(np.isnan(spread), np.nanmean(spread), spread))


def _entropy(raw) -> float:
    """The entropy of a raw record's ``probs`` (nats), NaN when it has none."""
    if not isinstance(raw, str) or '"probs"' not in raw:
        return np.nan
    try:
        p = np.asarray(json.loads(raw)["probs"], dtype=float)
    except (ValueError, KeyError, TypeError):
        return np.nan
    p = p[p > 0] / p.sum()
    return float(-(p * np.log(p)).sum())


def entropy(cell: Cell, labels: pd.DataFrame) -> np.ndarray:
    """(n,) the mean label entropy of the judge's pairs per query (queries without probabilities: the mean)."""
    lab = labels[(labels["dataset"] == cell.dataset) & (labels["judge"] == cell.judge)]
    raw = lab["raw"] if "raw" in lab.columns else pd.Series(np.nan, index=lab.index)
    h = pd.Series([_entropy(r) for r in raw], index=lab.index, dtype=float)
    if h.notna().sum() == 0:
        raise CompareError(
            f"signal=entropy: judge {cell.judge} on {cell.dataset} logged no label probabilities "
            "('probs' in judge_labels.csv raw; digit-scored LLM judges log them); "
            "expected signal=systems, judges or labels for it"
        )
    per_query = h.groupby(lab["query_id"].astype(str)).mean()
    u = per_query.reindex(cell.queries).to_numpy(float)
    return _floor(np.where(np.isnan(u), np.nanmean(u), u))


def mean_label(cell: Cell) -> np.ndarray:
    """(n,) the judge's mean label per query over its label-set pairs (from the cell's judge x human counts)."""
    marginal = cell.confusion.sum(axis=2)  # (n, levels): the judge's labels per query
    total = marginal.sum(axis=1)
    mean = (marginal @ np.arange(marginal.shape[1])) / np.maximum(total, 1)
    return _floor(np.where(total > 0, mean, mean[total > 0].mean() if (total > 0).any() else 0.0))


def signal(name: str, cell: Cell, cells: list[Cell] | None = None, labels: pd.DataFrame | None = None) -> np.ndarray:
    """The signal ``name`` of ``cell`` (``cells``: every judge's, for judges; ``labels``: with ``raw``, for entropy)."""
    if name == "systems":
        return systems(cell)
    if name == "judges":
        return judges(cell, cells or [cell])
    if name == "entropy":
        return entropy(cell, labels if labels is not None else pd.DataFrame(columns=["dataset", "judge", "query_id"]))
    if name == "labels":
        return mean_label(cell)
    raise CompareError(f"signal={name!r}: expected one of {', '.join(SIGNALS)}")
