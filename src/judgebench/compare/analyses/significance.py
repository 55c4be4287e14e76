"""Paired t-tests between systems on per-query nDCG@10, and whether a judge reaches the human conclusions.

A judge can keep the system ordering yet change which differences are significant; the
pairwise decisions under the judge and under humans are classified as agree / missed /
spurious / reversed (metrics.significance), each judge against its own human reference
(compare/base/reference.py) over one family of pairs that both sides scored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgebench.compare.base.artifacts import REFERENCES
from judgebench.compare.base.reference import References, own_rows
from judgebench.metrics import classify_decisions, pairwise_ttests
from judgebench.metrics.significance import holm


def ttests(per_query: pd.DataFrame, systems: dict[str, list[str]], alpha: float = 0.05) -> pd.DataFrame:
    """Every pair of the given systems per dataset and judge (the per-judge references excluded): raw p and
    Holm-adjusted p over the pairs of the systems that judge scored."""
    rows = []
    for (dataset, judge), g in own_rows(per_query).groupby(["dataset", "judge"], sort=False):
        tests = _tests(g, systems.get(dataset, []), alpha)
        if len(tests):
            rows.append(tests.assign(dataset=dataset, judge=judge))
    if not rows:
        return pd.DataFrame(columns=TESTS)
    return pd.concat(rows, ignore_index=True)[TESTS]


TESTS = [
    "dataset",
    "judge",
    "system_a",
    "system_b",
    "mean_a",
    "mean_b",
    "t",
    "p",
    "significant",
    "p_holm",
    "significant_holm",
    "better",
]


def _scored(rows: pd.DataFrame, chosen: list[str]) -> pd.DataFrame:
    """The rows of the chosen systems that have a value (nan: the judge has no qrels for the query), in ``chosen``
    order."""
    g = rows[rows["system"].isin(chosen)].dropna(subset=["value"])
    g = g.assign(system=pd.Categorical(g["system"], chosen)).sort_values("system", kind="stable")
    return g.assign(system=g["system"].astype(str))


def _tests(rows: pd.DataFrame, chosen: list[str], alpha: float) -> pd.DataFrame:
    """One t-test per pair of the chosen systems present in ``rows``; Holm on the raw p of this family (a pair
    without variance, p = nan, enters as p = 1)."""
    g = _scored(rows, chosen)
    if g["system"].nunique() < 2:
        return pd.DataFrame()
    raw = pairwise_ttests(g[["system", "query_id", "value"]], alpha=alpha)
    p_holm = holm(raw["p"].fillna(1.0).to_numpy())
    return raw.assign(p_holm=p_holm, significant_holm=p_holm < alpha)


COUNTS = ["dataset", "judge", "reference", "family", "dropped", "agree", "missed", "spurious", "reversed"]
PAIRS = ["dataset", "judge", "system_a", "system_b", "agreement"]


def decision_agreement(
    per_query: pd.DataFrame,
    systems: dict[str, list[str]],
    refs: References,
    alpha: float = 0.05,
    use_holm: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per judge: how many pairwise conclusions agree with those under its human reference (``refs``), and
    which pairs do not.

    The family of tests is the same on both sides: the pairs of the systems that the judge *and* its
    reference both scored, so Holm corrects the judge and the humans it is classified against over the
    same number of pairs (``family``). Pairs of the dataset's systems outside it are counted (``dropped``)
    and listed with agreement "dropped", never silently left out."""
    counts, pairs = [], []
    for dataset, d in own_rows(per_query).groupby("dataset", sort=False):
        chosen = systems.get(dataset, [])
        for judge, rows in d.groupby("judge", sort=False):  # one pass, not a filter of the dataset's rows per judge
            if judge in REFERENCES:
                continue
            mine, theirs = _scored(rows, chosen), _scored(refs.rows(dataset, judge), chosen)
            both = set(mine["system"]) & set(theirs["system"])  # once: a set per system made this quadratic
            family = [s for s in chosen if s in both]
            cls = pd.DataFrame(columns=["system_a", "system_b", "agreement"])
            if len(family) >= 2:
                sig = "significant_holm" if use_holm else "significant"
                j, h = _tests(mine, family, alpha), _tests(theirs, family, alpha)
                cls = classify_decisions(j.assign(significant=j[sig]), h.assign(significant=h[sig]))
            out = _pairs_outside(chosen, cls)
            inside = len(cls)
            cls = pd.concat([cls, out.assign(agreement="dropped")], ignore_index=True)
            counts.append(
                {
                    "dataset": dataset,
                    "judge": judge,
                    "reference": refs.reference,
                    "family": inside,
                    **{k: int((cls["agreement"] == k).sum()) for k in COUNTS[4:]},
                }
            )
            pairs.append(cls.assign(dataset=dataset, judge=judge)[PAIRS])
    if not pairs:
        return pd.DataFrame(columns=COUNTS), pd.DataFrame(columns=PAIRS)
    return pd.DataFrame(counts, columns=COUNTS), pd.concat(pairs, ignore_index=True)


def _pairs_outside(chosen: list[str], inside: pd.DataFrame) -> pd.DataFrame:
    """The pairs of ``chosen`` (in combinations order) that ``inside`` holds in neither orientation, from index arrays
    (300 systems: 44,850 pairs per judge, no Python loop over them)."""
    a, b = np.triu_indices(len(chosen), 1)
    position = pd.Series(np.arange(len(chosen)), index=pd.Index(chosen))
    pa = position.reindex(inside["system_a"]).to_numpy(dtype=float)
    pb = position.reindex(inside["system_b"]).to_numpy(dtype=float)
    known = np.isfinite(pa) & np.isfinite(pb)
    lo, hi = np.minimum(pa, pb)[known].astype(int), np.maximum(pa, pb)[known].astype(int)
    keep = ~np.isin(a * len(chosen) + b, lo * len(chosen) + hi)
    names = np.array(chosen, dtype=object)
    return pd.DataFrame({"system_a": names[a[keep]], "system_b": names[b[keep]]})


def pair_lists(
    pairs: pd.DataFrame, classes: tuple[str, ...] = ("missed", "spurious", "reversed", "dropped")
) -> pd.DataFrame:
    """One row per (dataset, judge, class) with the pairs written "A vs B"; agree pairs stay in the CSV."""
    rows = []
    for (dataset, judge), g in pairs.groupby(["dataset", "judge"], sort=False):
        for cls in classes:
            hit = g[g["agreement"] == cls]
            rows.append(
                {
                    "dataset": dataset,
                    "judge": judge,
                    "class": cls,
                    "n": len(hit),
                    "pairs": "; ".join(f"{a} vs {b}" for a, b in zip(hit["system_a"], hit["system_b"])) or "-",
                }
            )
    return pd.DataFrame(rows, columns=["dataset", "judge", "class", "n", "pairs"])


def oracle_matrix(tests: pd.DataFrame, alpha: float, judges: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Per dataset, one row per oracle pair and one column per judge: "p / p_holm", a star when significant."""
    out = {}
    for dataset, d in tests.groupby("dataset", sort=False):
        cells = d.assign(
            pair=d["system_a"] + " vs " + d["system_b"],
            cell=[f"{_p(p, alpha)} / {_p(ph, alpha)}" for p, ph in zip(d["p"], d["p_holm"])],
        )
        table = cells.pivot(index="pair", columns="judge", values="cell")
        present = list(dict.fromkeys(cells["judge"]))
        columns = [j for j in (judges or present) if j in present]
        out[dataset] = table.reindex(index=list(dict.fromkeys(cells["pair"])), columns=columns)
    return out


def _p(p: float, alpha: float) -> str:
    if p != p:  # nan: no variance in the differences, treated as not significant
        return "n/a"
    return f"{p:.2g}{'*' if p < alpha else ''}"
