"""Order bias of the pairwise (PRP) rankers, as their rankings logged it: how often the two orders of a pair agree.

PRP asks every comparison in both orders (rankers/prp.py); the ranking stores the share of pairs whose two answers
prefer the same passage (order consistency) and the share of answers naming the passage shown first, and every
cell that uses the ranking logs them (rankings.py). compare reads them from the job runs' metrics.
"""

from __future__ import annotations

import math

import pandas as pd

COLUMNS = ["dataset", "system", "ranker_family", "pairs", "order_consistency", "first_position", "reading"]
METRICS = {"pairs": "prp_pairs", "order_consistency": "prp_order_consistency", "first_position": "prp_first_position"}
FASTCHAT_FLIP = 0.129  # the share of verdicts FastChat-style pairwise LLM judges flip on a swap, for comparison


def reading(consistency: float, first: float) -> str:
    """A one-line reading of the two shares."""
    if consistency != consistency:
        return "no answered pair"
    flips = 1 - consistency
    side = ("the first" if first > 0.5 else "the second") + f" passage in {max(first, 1 - first):.0%} of answers"
    if abs(first - 0.5) < 0.05:
        side = "no position preferred overall"
    compared = "more" if flips > FASTCHAT_FLIP else "fewer"
    return (
        f"flips {flips:.0%} of its verdicts when the two passages swap places ({compared} than the "
        f"{FASTCHAT_FLIP:.1%} of "
        f"FastChat-style pairwise judges); {side}"
    )


def order_table(jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per (dataset, system) whose runs carry PRP's order statistics (the latest run's values)."""
    if METRICS["order_consistency"] not in jobs:
        return pd.DataFrame(columns=COLUMNS)
    found = jobs.dropna(subset=[METRICS["order_consistency"]]).sort_values("start_time", kind="stable")
    found = found.drop_duplicates(["dataset", "system"], keep="last")
    rows = []
    for _, job in found.iterrows():
        row = {"dataset": job["dataset"], "system": job["system"], "ranker_family": job.get("ranker_family")}
        row.update({k: float(job.get(m, math.nan)) for k, m in METRICS.items()})
        row["pairs"] = int(row["pairs"]) if row["pairs"] == row["pairs"] else row["pairs"]
        row["reading"] = reading(row["order_consistency"], row["first_position"])
        rows.append(row)
    return pd.DataFrame(rows, columns=COLUMNS)
