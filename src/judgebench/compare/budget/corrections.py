"""Model-based corrections of a judge from the human labels of k sampled queries: a fitted model
predicts the human nDCG@10 of the queries nobody labelled.

- linear: per system type, human ~ a + b * judge per (system, query), fitted by least squares on the
  sampled queries (Balog, Metzler, Qin, "Rankers, Judges, and Assistants", SIGIR 2025, propose
  calibrating a judge per ranker type: the bias differs between LLM and other rankers);
- label: P(human label | judge label) estimated on the label-set pairs of the sampled queries; every
  document then gains the expected human label of its judge label (a judge label not seen in the
  sample keeps its own value: no evidence to correct it), scored by the evaluation core
  (:func:`judgebench.evaluation.ndcg_from_class_gains`: the nDCG of the expected gains).

Both keep the human values of the sampled queries ("apply to the rest"): estimate = (sum of human
values over the sample + sum of predictions over the other queries) / n. The interval treats the
prediction as fixed, variance (1 - k/n) s_e^2 / k of the residual e = human - prediction on the sample
(the difference-estimator form; the model is fitted on the same sample, so this is optimistic at
small k, and the report measures its coverage rather than trusting it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from judgebench.evaluation import ndcg_from_class_gains
from judgebench.metrics.ppi import Estimate, moments


def residual_estimate(y: np.ndarray, pred: np.ndarray, mask: np.ndarray) -> Estimate:
    """y (m, n) human values, pred (R, m, n) predictions per sample, mask (R, n): arrays (R, m)."""
    n = mask.shape[1]
    k = mask.sum(axis=1, keepdims=True).astype(float)
    w = mask[:, None, :]
    point = np.where(w, y, pred).sum(axis=2) / n
    return Estimate(point, (1 - k / n) * moments(y - pred, mask)[1] / k, moments(y, mask)[1] / n)


def ols(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares (a, b) of y ~ a + b x pooled over the rows of x, y (m, n) on each sample's masked
    queries, vectorised over the R samples (a loop of R fits would dominate the run time); b = 0 where x
    has no variance on the sample."""
    w = mask.astype(float)
    cnt = w.sum(axis=1) * x.shape[0]
    sx, sy = (w @ x.T).sum(axis=1), (w @ y.T).sum(axis=1)
    sxx, sxy = (w @ (x * x).T).sum(axis=1), (w @ (x * y).T).sum(axis=1)
    den = sxx - sx * sx / cnt
    ok = den > 1e-12 * np.maximum(sxx, 1e-300)
    b = np.where(ok, (sxy - sx * sy / cnt) / np.where(ok, den, 1.0), 0.0)
    return (sy - b * sx) / cnt, b


@dataclass(frozen=True)
class Linear:
    """human ~ a + b * judge per system type (oracle, llm, lexical, ...), fitted on the sample."""

    name: str = "linear"

    def predict(self, f: np.ndarray, y: np.ndarray, types: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(R, S, n) predicted human values of every system on every query."""
        pred = np.empty((mask.shape[0], *f.shape))
        for t in dict.fromkeys(types):
            rows = np.flatnonzero(types == t)
            a, b = ols(f[rows], y[rows], mask)
            pred[:, rows, :] = a[:, None, None] + b[:, None, None] * f[rows][None]
        return pred


def expected_gains(confusion: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """(R, levels): the mean human label of each judge label over the sampled queries' pairs.

    ``confusion`` (n, levels, levels) counts pairs per query by (judge label, human label)."""
    levels = confusion.shape[1]
    counts = np.einsum("rn,njh->rjh", mask.astype(float), confusion)
    total = counts.sum(axis=2)
    mean = (counts * np.arange(levels)).sum(axis=2) / np.where(total > 0, total, 1.0)
    return np.where(total > 0, mean, np.arange(levels, dtype=float))


@dataclass(frozen=True)
class LabelLevel:
    """Every document gains E[human label | judge label], estimated on the sampled pairs."""

    name: str = "label"

    def predict(
        self, weights: np.ndarray, counts: np.ndarray, confusion: np.ndarray, mask: np.ndarray, cutoff: int | None = 10
    ) -> np.ndarray:
        """(R, S, n) from the judge's class weights (S, n, levels) and class counts (n, levels)."""
        gains = expected_gains(confusion, mask)[:, None, :]  # (R, 1, levels): one gain vector per sample
        return ndcg_from_class_gains(weights, counts, gains, cutoff)
