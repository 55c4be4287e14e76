"""Paired t-tests between systems on per-query nDCG@10, and whether a judge reaches the human conclusions.

A judge can keep the system ordering yet change which differences are significant; the
pairwise decisions under the judge and under humans are classified as agree / missed /
spurious / reversed (metrics.significance).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

import pandas as pd

from judgebench.compare.artifacts import HUMAN_LABELSET, REFERENCES
from judgebench.metrics import classify_decisions, pairwise_ttests


@contextmanager
def _frozen_heap() -> Iterator[None]:
    """statsmodels' Holm calls gc.collect(), ~0.3 s each with MLflow and matplotlib loaded; objects that
    exist already are frozen out of those collections for the duration."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def ttests(per_query: pd.DataFrame, systems: dict[str, list[str]], alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of the given systems per dataset and judge: raw p and Holm-adjusted p."""
    with _frozen_heap():
        return _ttests(per_query, systems, alpha)


def _ttests(per_query: pd.DataFrame, systems: dict[str, list[str]], alpha: float) -> pd.DataFrame:
    rows = []
    for (dataset, judge), g in per_query.groupby(["dataset", "judge"], sort=False):
        chosen = systems.get(dataset, [])
        g = g[g["system"].isin(chosen)].dropna(subset=["value"])  # nan: the judge has no qrels for the query
        g["system"] = pd.Categorical(g["system"], chosen)
        g = g.sort_values("system").assign(system=lambda f: f["system"].astype(str))
        if g["system"].nunique() < 2:
            continue
        raw = pairwise_ttests(g[["system", "query_id", "value"]], alpha=alpha)
        holm = pairwise_ttests(g[["system", "query_id", "value"]], alpha=alpha, correction="holm")
        raw = raw.assign(p_holm=holm["p_adj"].to_numpy(), significant_holm=holm["significant"].to_numpy())
        rows.append(raw.assign(dataset=dataset, judge=judge))
    if not rows:
        return pd.DataFrame()
    out = pd.concat(rows, ignore_index=True)
    return out[["dataset", "judge", "system_a", "system_b", "mean_a", "mean_b", "t", "p", "significant", "p_holm",
                "significant_holm", "better"]]


COUNTS = ["dataset", "judge", "reference", "agree", "missed", "spurious", "reversed"]
PAIRS = ["dataset", "judge", "system_a", "system_b", "agreement"]


def decision_agreement(tests: pd.DataFrame, use_holm: bool = False,
                       reference: str = HUMAN_LABELSET) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per judge: how many pairwise conclusions agree with those under the human ``reference``, and which pairs do not."""
    empty = pd.DataFrame(columns=COUNTS), pd.DataFrame(columns=PAIRS)
    if tests.empty:
        return empty
    sig = "significant_holm" if use_holm else "significant"
    counts, pairs = [], []
    for dataset, d in tests.groupby("dataset", sort=False):
        human = d[d["judge"] == reference]
        for judge, j in d[~d["judge"].isin(REFERENCES)].groupby("judge", sort=False):
            cls = classify_decisions(
                j.assign(significant=j[sig]).drop(columns=["dataset", "judge"]),
                human.assign(significant=human[sig]).drop(columns=["dataset", "judge"]),
            )
            counts.append({"dataset": dataset, "judge": judge, "reference": reference, **{k: int((cls["agreement"] == k).sum()) for k in COUNTS[3:]}})
            pairs.append(cls.assign(dataset=dataset, judge=judge)[PAIRS])
    return (pd.DataFrame(counts, columns=COUNTS), pd.concat(pairs, ignore_index=True)) if pairs else empty


def pair_lists(pairs: pd.DataFrame, classes: tuple[str, ...] = ("missed", "spurious", "reversed")) -> pd.DataFrame:
    """One row per (dataset, judge, class) with the pairs written "A vs B"; agree pairs stay in the CSV."""
    rows = []
    for (dataset, judge), g in pairs.groupby(["dataset", "judge"], sort=False):
        for cls in classes:
            hit = g[g["agreement"] == cls]
            rows.append({"dataset": dataset, "judge": judge, "class": cls, "n": len(hit),
                         "pairs": "; ".join(f"{a} vs {b}" for a, b in zip(hit["system_a"], hit["system_b"])) or "-"})
    return pd.DataFrame(rows, columns=["dataset", "judge", "class", "n", "pairs"])


def oracle_matrix(tests: pd.DataFrame, alpha: float, judges: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Per dataset, one row per oracle pair and one column per judge: "p / p_holm", a star when significant."""
    out = {}
    for dataset, d in tests.groupby("dataset", sort=False):
        cells = d.assign(pair=d["system_a"] + " vs " + d["system_b"],
                         cell=[f"{_p(p, alpha)} / {_p(ph, alpha)}" for p, ph in zip(d["p"], d["p_holm"])])
        table = cells.pivot(index="pair", columns="judge", values="cell")
        present = list(dict.fromkeys(cells["judge"]))
        columns = [j for j in (judges or present) if j in present]
        out[dataset] = table.reindex(index=list(dict.fromkeys(cells["pair"])), columns=columns)
    return out


def _p(p: float, alpha: float) -> str:
    if p != p:  # nan: no variance in the differences, treated as not significant
        return "n/a"
    return f"{p:.2g}{'*' if p < alpha else ''}"
