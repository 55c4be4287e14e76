"""Kendall's tau of each judge against its human reference, over all systems and over the oracle rankers: tau_b of
the mean orderings as a point estimate, and the per-query pooled tau_b with its delta-method t interval and test
(metrics/query_tau.py), the one ordering agreement whose coverage benchmarks/calibration.py shows.

The two differ: tau of the means asks whether the judge's *average* ordering of the systems is the humans'; the
per-query tau asks how often, *query by query*, the judge orders a pair of systems as the humans do (docs/protocol.md,
"Ordering agreement"). The first has no calibrated interval (a step function of the means); the second does.

"Better than chance" on the oracle rankers is the per-query tau's t test of 0, Holm-adjusted over every
(dataset, judge) row of the report, below ``alpha`` with a positive estimate: the column ``oracles_verdict`` that
Table 6 prints and the findings panel repeats.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from judgebench.compare.base.artifacts import per_query_matrix
from judgebench.compare.base.reference import References, own_rows
from judgebench.compare.base.tables import datasets_with_rows, judge_columns
from judgebench.metrics import tau_b
from judgebench.metrics.query_tau import query_tau
from judgebench.metrics.significance import holm

SCOPES = ("all", "oracles")
TAUS = [
    "dataset",
    "judge",
    "reference",
    "queries",
    "tau_all",
    "tau_oracles",
    *[f"query_tau_{s}{x}" for s in SCOPES for x in ("", "_lo", "_hi", "_p")],
    "query_tau_oracles_p_holm",
    "oracles_verdict",
]
BETTER, CHANCE = "better than chance", "not distinguishable from chance"


def ordering_agreement(
    per_query: pd.DataFrame, t1: dict[str, pd.DataFrame], refs: References, level: float = 0.95, alpha: float = 0.05
) -> pd.DataFrame:
    """One row per (dataset, judge) of Table 1: tau of the means and the per-query tau with interval and p, over all
    systems and over the oracles, and the oracles verdict (module docstring)."""
    rows = []
    for dataset, table, d in datasets_with_rows(per_query, t1):
        systems = list(table.index)
        oracle = np.array([t == "oracle" for t in table["type"]])
        queries = sorted(d["query_id"].astype(str).unique())
        d = d.assign(query_id=d["query_id"].astype(str))
        own = own_rows(d)
        of = own.groupby("judge", sort=False).indices
        for judge in judge_columns(table):
            row = {"dataset": dataset, "judge": judge, "reference": refs.reference, "queries": len(queries)}
            mine = per_query_matrix(own.iloc[of.get(judge, [])], systems, queries)
            theirs = per_query_matrix(
                refs.rows(dataset, judge).assign(query_id=lambda f: f["query_id"].astype(str)), systems, queries
            )
            human = refs.column(dataset, judge, systems).to_numpy()
            both = table[judge].notna().to_numpy() & ~np.isnan(human)
            for scope, keep in (("all", both), ("oracles", both & oracle)):
                enough = keep.sum() >= 2
                row[f"tau_{scope}"] = (
                    float(tau_b(table[judge].to_numpy()[keep], human[keep])[0]) if enough else math.nan
                )
                q = query_tau(mine[keep], theirs[keep], level) if enough else None
                for x, name in (("", "tau"), ("_lo", "lo"), ("_hi", "hi"), ("_p", "p_value")):
                    row[f"query_tau_{scope}{x}"] = float(getattr(q, name)) if q is not None else math.nan
            rows.append(row)
    frame = pd.DataFrame(rows, columns=[c for c in TAUS if c not in ("query_tau_oracles_p_holm", "oracles_verdict")])
    frame["query_tau_oracles_p_holm"] = holm(frame["query_tau_oracles_p"].to_numpy(float))
    frame["oracles_verdict"] = [
        verdict(t, p, alpha) for t, p in zip(frame["query_tau_oracles"], frame["query_tau_oracles_p_holm"])
    ]
    return frame[TAUS]


def verdict(tau: float, p_holm: float, alpha: float) -> str:
    """Better than chance (positive, Holm p below alpha), else not distinguishable; empty where undefined."""
    if not (tau == tau and p_holm == p_holm):
        return ""
    return BETTER if tau > 0 and p_holm < alpha else CHANCE
