"""Ranker-bias summary: does a judge move LLM rankers ahead of the oracle rankers humans prefer?

The paper's warning sign is an inversion: humans place the oracles (perturbed human rankings)
ahead of the LLM rankers, an LLM judge places the LLM rankers ahead. We rank every system by
mean nDCG@10 (1 = best, ties share the average rank) under the judge and under humans, compare
the mean rank of the two groups, and flag the judge when the order of the groups flips. The
share of (LLM, oracle) pairs won by the LLM systems, the LLM systems placed above every oracle,
the nDCG gap (judge minus human) per system type, and the (LLM, oracle) pairs humans order oracle first that the
judge flips, with the judge's mean nDCG margin in them, say by how much, and which systems moved.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import rankdata

from judgebench.compare.base.reference import References
from judgebench.compare.base.tables import judge_columns

COLUMNS = [
    "dataset",
    "judge",
    "reference",
    "llm_rank_judge",
    "oracle_rank_judge",
    "llm_rank_human",
    "oracle_rank_human",
    "inverted",
    "llm_wins_judge",
    "llm_wins_human",
    "llm_above_oracles_judge",
    "llm_above_oracles_human",
    "oracle_first_pairs",
    "flipped_pairs",
    "flip_margin",
]
TYPES = ("oracle", "llm", "lexical", "external")


def _ranks(values: pd.Series) -> pd.Series:
    return pd.Series(rankdata(-values.to_numpy(dtype=float), method="average"), index=values.index)


def _wins(values: pd.Series, llm: list[str], oracles: list[str]) -> float:
    """Share of (LLM, oracle) pairs where the LLM system scores higher."""
    if not llm or not oracles:
        return math.nan
    return float(np.mean(values[llm].to_numpy(dtype=float)[:, None] > values[oracles].to_numpy(dtype=float)[None, :]))


def _flips(judge: pd.Series, human: pd.Series, llm: list[str], oracles: list[str]) -> tuple[float, float, float]:
    """(pairs humans order oracle over LLM system, how many of them the judge orders LLM first, the judge's mean nDCG
    margin of the LLM system in those): by how much a judge puts the LLM rankers above oracles humans rank higher."""
    if not llm or not oracles:
        return math.nan, math.nan, math.nan
    hl, ho = human[llm].to_numpy(float)[:, None], human[oracles].to_numpy(float)[None, :]
    jl, jo = judge[llm].to_numpy(float)[:, None], judge[oracles].to_numpy(float)[None, :]
    humans_oracle_first = ho > hl
    flipped = humans_oracle_first & (jl > jo)
    margin = float((jl - jo)[flipped].mean()) if flipped.any() else math.nan
    return float(humans_oracle_first.sum()), float(flipped.sum()), margin


def _above(values: pd.Series, llm: list[str], oracles: list[str]) -> str:
    """The LLM systems scoring above every oracle ("-" for none): one system can jump the whole group
    while the group's mean rank stays behind."""
    if not oracles:
        return "-"
    return ", ".join(s for s in llm if values[s] > values[oracles].max()) or "-"


def _order(llm_rank: float, oracle_rank: float) -> int:
    """-1: LLM group ahead, +1: oracle group ahead, 0: tie or undefined."""
    if math.isnan(llm_rank) or math.isnan(oracle_rank):
        return 0
    return int(np.sign(llm_rank - oracle_rank))


def ranker_bias(t1: dict[str, pd.DataFrame], refs: References) -> pd.DataFrame:
    """One row per (dataset, judge) over the systems scored under both the judge and its human reference (``refs``);
    ``inverted``: the LLM group overtakes the oracle group, or an LLM system that humans put below
    some oracle is above every oracle under the judge; None without LLM or oracle systems."""
    rows = []
    for dataset, table in t1.items():
        for judge in judge_columns(table):
            human = refs.column(dataset, judge, table.index)
            reference = ("reference",)  # a column no judge name (a string) can collide with
            both = table.copy()
            both[reference] = human
            both = both[table[judge].notna() & human.notna()]
            llm = list(both.index[both["type"] == "llm"])
            oracles = list(both.index[both["type"] == "oracle"])
            rj, rh = _ranks(both[judge]), _ranks(both[reference])
            row = {
                "dataset": dataset,
                "judge": judge,
                "reference": refs.reference,
                "llm_rank_judge": rj[llm].mean() if llm else math.nan,
                "oracle_rank_judge": rj[oracles].mean() if oracles else math.nan,
                "llm_rank_human": rh[llm].mean() if llm else math.nan,
                "oracle_rank_human": rh[oracles].mean() if oracles else math.nan,
                "llm_wins_judge": _wins(both[judge], llm, oracles),
                "llm_wins_human": _wins(both[reference], llm, oracles),
                "llm_above_oracles_judge": _above(both[judge], llm, oracles),
                "llm_above_oracles_human": _above(both[reference], llm, oracles),
            }
            row["oracle_first_pairs"], row["flipped_pairs"], row["flip_margin"] = _flips(
                both[judge], both[reference], llm, oracles
            )
            human_order = _order(row["llm_rank_human"], row["oracle_rank_human"])
            judge_order = _order(row["llm_rank_judge"], row["oracle_rank_judge"])
            # the group order flips, or an LLM ranker the humans put below the oracles tops them all
            # under the judge (the paper's finding: a judge rating an LLM reranker above the Perfect oracle)
            jumped = (
                set(row["llm_above_oracles_judge"].split(", "))
                - set(row["llm_above_oracles_human"].split(", "))
                - {"-"}
            )
            flipped = human_order != 0 and judge_order == -human_order
            row["inverted"] = None if not (llm and oracles) else bool(flipped or jumped)
            for t in TYPES:
                of_type = both[both["type"] == t]
                if len(of_type) or any(table["type"] == t):
                    row[f"gap_{t}"] = float((of_type[judge] - of_type[reference]).mean()) if len(of_type) else math.nan
            rows.append(row)
    out = pd.DataFrame(rows)
    gaps = [f"gap_{t}" for t in TYPES if f"gap_{t}" in out.columns]
    return out.reindex(columns=[*COLUMNS, *gaps])
