"""Label agreement between a judge's labels and the human labels of the same pairs.

Each statistic the reports carry is a small frozen object that holds its parameters and says in its
docstring what it computes and where it comes from (the way ir_measures defines its measures).
``AGREEMENT`` lists them in report order; :func:`label_agreement` computes every one of them on the
inner join of the two qrels, so a pair the judge did not label is left out (never read as 0) and
counted in ``n_missing``. The arithmetic is done by libraries: scikit-learn (Cohen's kappa, weighted
or not) and ``krippendorff`` (Krippendorff's alpha).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np
import pandas as pd

from judgebench.label_scale import LabelScale, graded

LEVELS = (0, 1, 2, 3)
_KEYS = ["query_id", "doc_id"]


def _clean(qrels: pd.DataFrame, who: str) -> pd.DataFrame:
    out = pd.DataFrame(
        {
            "query_id": qrels["query_id"].astype(str),
            "doc_id": qrels["doc_id"].astype(str),
            "relevance": qrels["relevance"].astype(int),
        }
    )
    if out.duplicated(_KEYS).any():
        raise ValueError(f"{who} qrels have duplicate (query_id, doc_id) pairs")
    return out


def _pairs(judge_qrels: pd.DataFrame, human_qrels: pd.DataFrame) -> pd.DataFrame:
    """Inner join on (query_id, doc_id): columns query_id, doc_id, human, judge."""
    j = _clean(judge_qrels, "judge").rename(columns={"relevance": "judge"})
    h = _clean(human_qrels, "human").rename(columns={"relevance": "human"})
    return h.merge(j, on=_KEYS, how="inner")


def binarize(labels: pd.Series | np.ndarray, cut: int = 2) -> np.ndarray:
    """Binary relevance at a cut: label >= cut -> 1, else 0 (cut 2 is the TREC DL convention {0,1} | {2,3})."""
    return (np.asarray(labels) >= cut).astype(int)


def _kappa(a: np.ndarray, b: np.ndarray, labels: Sequence[int], weights: str | None = None) -> float:
    """Cohen's kappa; nan when undefined (no pairs, or both raters one same class: p_e = 1, kappa = 0/0)."""
    if len(a) == 0:
        return math.nan
    if len(np.unique(a)) == 1 and np.array_equal(np.unique(a), np.unique(b)):
        return math.nan
    from sklearn.metrics import cohen_kappa_score  # here: importing sklearn costs every process seconds, compare too

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(cohen_kappa_score(a, b, labels=list(labels), weights=weights))


# --------------------------------------------------------------------------- the statistics


@dataclass(frozen=True)
class CohenKappa:
    """Cohen's kappa between human and judge labels: (p_o - p_e) / (1 - p_e), observed agreement
    corrected for the agreement expected from the two raters' marginals (Cohen 1960, "A coefficient
    of agreement for nominal scales"). ``weights``: None counts every disagreement alike; "linear"
    (|i - j|) or "quadratic" ((i - j)^2) weight it by distance on the 0-3 scale (Cohen 1968, "Weighted
    kappa"). ``cut``: binarise both raters first at label >= cut (1: 0|123, 2: 01|23, the TREC DL
    binary relevance, 3: 012|3; the LLMJudge overview reports all three); "relevant": at the collection's
    threshold (``dataset.relevant_from``), the one kappa every scale has (a binary judge's 1 against human
    labels >= it). A judge whose scale does not reach every human level (binary) gets nan for every other
    kappa: not comparable (label_scale.py). nan when undefined.
    scikit-learn's cohen_kappa_score computes it."""

    name: str
    weights: str | None = None
    cut: int | str | None = None  # "relevant": dataset.relevant_from

    def __call__(self, pairs: pd.DataFrame) -> float:
        if pairs.attrs.get("not_graded") and self.name != "kappa_relevant":
            return math.nan  # a judge whose scale does not reach every human level: not comparable (label_scale.py)
        h, j = pairs["human"].to_numpy(), pairs["judge"].to_numpy()
        if self.cut == "relevant":  # the collection's own cut (dataset.relevant_from), the judge read through its map
            cut = int(pairs.attrs.get("relevant_from", 2))
            return _kappa(binarize(h, cut), binarize(j, cut), (0, 1), self.weights)
        if self.cut is None:
            return _kappa(h, j, LEVELS, self.weights)
        return _kappa(binarize(h, self.cut), binarize(j, self.cut), (0, 1), self.weights)


@dataclass(frozen=True)
class KrippendorffAlpha:
    """Krippendorff's alpha, 1 - D_o / D_e, observed over expected disagreement of the pooled labels
    (Krippendorff 2004, "Content Analysis", ch. 11; Hayes & Krippendorff 2007). ``level`` is the metric
    of the value domain 0-3: "ordinal" (distance by the ranks' cumulative frequencies) or "interval"
    (squared difference). Two raters (human, judge), every pair rated by both. nan when undefined
    (fewer than 2 pairs, or a single value used by both). The ``krippendorff`` package computes it."""

    name: str
    level: str = "ordinal"

    def __call__(self, pairs: pd.DataFrame) -> float:
        if pairs.attrs.get("not_graded"):
            return math.nan
        data = np.vstack([pairs["human"].to_numpy(float), pairs["judge"].to_numpy(float)])
        if data.shape[1] < 2 or len(np.unique(data)) < 2:
            return math.nan
        return float(
            krippendorff.alpha(reliability_data=data, value_domain=list(LEVELS), level_of_measurement=self.level)
        )


@dataclass(frozen=True)
class LabelShare:
    """Share of the joined pairs that ``rater`` ("judge" or "human") gave ``level``: the two label
    distributions side by side show a lenient or strict judge at a glance (the LLMJudge overview's
    label-distribution comparison). nan with no pairs."""

    name: str
    rater: str
    level: int

    def __call__(self, pairs: pd.DataFrame) -> float:
        column = "judge_label" if self.rater == "judge" and "judge_label" in pairs else self.rater  # its own labels
        if self.rater == "judge" and self.level not in pairs.attrs.get("judge_labels", LEVELS):
            return math.nan  # not a label of the judge's scale
        return float((pairs[column] == self.level).mean()) if len(pairs) else math.nan


def _per_query_kappas(pairs: pd.DataFrame) -> np.ndarray:
    """The defined per-query kappas, computed once per pairs frame (median and IQR share them)."""
    if "_per_query_kappa" not in pairs.attrs:
        values = np.array(
            [
                _kappa(g["human"].to_numpy(), g["judge"].to_numpy(), LEVELS)
                for _, g in pairs.groupby("query_id", sort=True)
            ]
        )
        pairs.attrs["_per_query_kappa"] = values[~np.isnan(values)] if len(values) else values
    return pairs.attrs["_per_query_kappa"]


@dataclass(frozen=True)
class PerQueryKappa:
    """Unweighted graded Cohen's kappa computed per query, summarised over queries: ``summary``
    "median", or "iqr" (75th minus 25th percentile, numpy's linear interpolation). Shows whether
    agreement is uniform or a mean of good and bad queries. Queries where kappa is undefined (both
    raters one same label) are left out; nan when no query has a defined kappa."""

    name: str
    summary: str = "median"

    def __call__(self, pairs: pd.DataFrame) -> float:
        if pairs.attrs.get("not_graded"):
            return math.nan
        values = _per_query_kappas(pairs)
        if not len(values):
            return math.nan
        if self.summary == "median":
            return float(np.median(values))
        q25, q75 = np.percentile(values, [25, 75])
        return float(q75 - q25)


AGREEMENT = (
    CohenKappa("kappa_graded"),
    CohenKappa("kappa_linear", weights="linear"),
    CohenKappa("kappa_quadratic", weights="quadratic"),
    CohenKappa("kappa_ge1", cut=1),
    CohenKappa("kappa_ge2", cut=2),  # the binary kappa of TREC DL ({0,1} | {2,3}) on the 0-3 scale
    CohenKappa("kappa_ge3", cut=3),
    CohenKappa("kappa_relevant", cut="relevant"),  # relevant or not at dataset.relevant_from: every scale has it
    KrippendorffAlpha("alpha_ordinal", level="ordinal"),
    KrippendorffAlpha("alpha_interval", level="interval"),
    PerQueryKappa("kappa_query_median", summary="median"),
    PerQueryKappa("kappa_query_iqr", summary="iqr"),
    *(LabelShare(f"judge_share_{k}", "judge", k) for k in LEVELS),
    *(LabelShare(f"human_share_{k}", "human", k) for k in LEVELS),
)
AGREEMENT_COLUMNS = [s.name for s in AGREEMENT]


def label_agreement(judge_qrels: pd.DataFrame, human_qrels: pd.DataFrame, scale: LabelScale | None = None) -> dict:
    """Every statistic of ``AGREEMENT`` on the pairs both labelled, plus n_pairs (pairs both labelled)
    and n_missing (human pairs the judge did not label). ``scale``: the judge's label scale (default graded
    0-3): kappas and alphas read its labels through the scale's map onto the human levels, and only the
    binary kappa is computed when that map does not reach every level; label shares count its own labels."""
    scale = scale or graded()
    pairs = _pairs(judge_qrels, human_qrels)
    n_human = len(_clean(human_qrels, "human"))
    bad = sorted(int(x) for x in set(pairs["human"].unique()) - set(LEVELS))
    bad += sorted(int(x) for x in set(pairs["judge"].unique()) - set(scale.labels))
    if bad:  # sklearn would silently drop pairs with labels outside `labels`
        raise ValueError(f"labels must be in {LEVELS} (human) and {scale.labels} (judge), got {bad}")
    if not scale.is_graded:
        pairs = pairs.assign(judge_label=pairs["judge"], judge=scale.human(pairs["judge"]))
    pairs.attrs.update(
        not_graded=not scale.reaches_every_level, relevant_from=scale.relevant_from, judge_labels=scale.labels
    )
    out = {s.name: s(pairs) for s in AGREEMENT}
    out.update(n_pairs=int(len(pairs)), n_missing=int(n_human - len(pairs)))
    return out


def confusion(
    judge_qrels: pd.DataFrame,
    human_qrels: pd.DataFrame,
    labels: Sequence[int] = LEVELS,
) -> pd.DataFrame:
    """Counts on the shared pairs: rows human level, columns judge level."""
    pairs = _pairs(judge_qrels, human_qrels)
    table = pd.crosstab(pairs["human"], pairs["judge"])
    table = table.reindex(index=list(labels), columns=list(labels), fill_value=0)
    table.index.name, table.columns.name = "human", "judge"
    return table.astype(int)
