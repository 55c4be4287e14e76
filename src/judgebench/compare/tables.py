"""Table 1 (systems x judges, nDCG@10) and Table 2 (agreement per judge) from the job frame."""

from __future__ import annotations

import math

import pandas as pd

from judgebench.metrics import kendall_tau

HUMAN = "human"
TYPE_ORDER = {"oracle": 0, "llm": 1, "lexical": 2, "external": 3, "human": 4}


def _system_order(jobs: pd.DataFrame) -> list[str]:
    first = jobs.drop_duplicates("system").copy()
    first["_t"] = first["ranker_type"].map(TYPE_ORDER).fillna(9)
    return list(first.sort_values(["_t", "start_time"], kind="stable")["system"])


def judge_order(jobs: pd.DataFrame) -> list[str]:
    judges = [j for j in jobs.drop_duplicates("judge")["judge"] if j != HUMAN]
    return [HUMAN, *judges]


def table1(jobs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per dataset: mean nDCG@10 (judged only); the human column comes from every job's human metric."""
    out = {}
    judges = judge_order(jobs)
    for dataset, d in jobs.groupby("dataset", sort=False):
        systems = _system_order(d)
        human = d.groupby("system")["ndcg10_human"].mean()
        table = pd.DataFrame(index=pd.Index(systems, name="system"), columns=judges, dtype=float)
        table[HUMAN] = human.reindex(systems)
        for _, r in d[d["judge"] != HUMAN].iterrows():
            table.loc[r["system"], r["judge"]] = r["ndcg10_judge"]
        types = d.drop_duplicates("system").set_index("system")["ranker_type"]
        table.insert(0, "type", types.reindex(systems))
        out[dataset] = table
    return out


def table2(jobs: pd.DataFrame, t1: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Per dataset and judge: kappa graded / binary on the label set, tau over all systems and oracles."""
    rows = []
    for dataset, table in t1.items():
        d = jobs[jobs["dataset"] == dataset]
        oracles = list(table.index[table["type"] == "oracle"])
        for judge in [c for c in table.columns if c not in ("type", HUMAN)]:
            j = d[d["judge"] == judge]
            col = table[judge].dropna()
            rows.append(
                {
                    "dataset": dataset,
                    "judge": judge,
                    "kappa_graded": j["kappa_graded"].mean(),
                    "kappa_binary": j["kappa_binary"].mean(),
                    "tau_all": _tau(col, table[HUMAN], list(col.index)),
                    "tau_oracles": _tau(col, table[HUMAN], [s for s in oracles if s in col.index]),
                    "systems": len(col),
                    "labelled_pairs": int(j["labelled_pairs"].max()),
                    "failed_calls": int(j["calls_failed"].max()) if "calls_failed" in j else 0,
                }
            )
    return pd.DataFrame(rows)


def _tau(judge_col: pd.Series, human_col: pd.Series, systems: list[str]) -> float:
    if len(systems) < 2:
        return math.nan
    tau, _ = kendall_tau(judge_col[systems].to_dict(), human_col[systems].to_dict())
    return tau


def missing_cells(jobs: pd.DataFrame) -> list[tuple[str, str, str]]:
    """Grid cells (dataset, system, judge) with no finished run: reported, never silently dropped."""
    judges = [j for j in jobs["judge"].unique()]
    out = []
    for dataset, d in jobs.groupby("dataset", sort=False):
        have = set(zip(d["system"], d["judge"]))
        for s in d["system"].unique():
            for j in judges:
                if (s, j) not in have:
                    out.append((dataset, s, j))
    return out
