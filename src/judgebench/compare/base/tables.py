"""Table 1 (systems x judges, mean nDCG@10) and Table 2 (agreement with humans per judge).

Both are computed from per-query values and labels, so virtual judges (ensembles, panels) get
exactly the same treatment as real ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pandas as pd

from judgebench.compare.base import columns
from judgebench.compare.base.artifacts import HUMAN, REFERENCES
from judgebench.compare.base.reference import References, own_rows
from judgebench.identity.text_view import ORIGINAL

TYPE_ORDER = {"oracle": 0, "llm": 1, "lexical": 2, "external": 3, "human": 4}
TABLE2 = [
    "dataset",
    "judge",
    "reference",
    *columns.AGREEMENT,
    *columns.ORDERING_COLUMNS,
    "systems",
    "labelled_pairs",
    "failed_pairs",
    *columns.SHARES,
]


def judge_columns(table: pd.DataFrame) -> list[str]:
    """The judge columns of a Table 1 frame: everything but the type and the two human references."""
    return [c for c in table.columns if c not in ("type", *REFERENCES)]


def datasets_with_rows(
    per_query: pd.DataFrame, t1: dict[str, pd.DataFrame]
) -> Iterator[tuple[str, pd.DataFrame, pd.DataFrame]]:
    """(dataset, its Table 1, its per-query rows) for each dataset of Table 1 that has per-query rows: where every
    analysis over queries starts (a dataset without them has no query to resample or correlate)."""
    for dataset, table in t1.items():
        rows = per_query[per_query["dataset"] == dataset]
        if not rows.empty:
            yield dataset, table, rows


def system_types(jobs: pd.DataFrame) -> pd.Series:
    """system -> ranker type, in report order: by type (oracle, LLM, lexical, external), then first run."""
    first = jobs.sort_values("start_time", kind="stable").drop_duplicates("system").copy()
    first["_t"] = first["ranker_type"].map(TYPE_ORDER).fillna(9)
    first = first.sort_values(["_t", "start_time"], kind="stable")
    return pd.Series(first["ranker_type"].to_numpy(), index=pd.Index(first["system"], name="system"), name="type")


def judge_order(jobs: pd.DataFrame, requested: list[str] | None = None) -> list[str]:
    """The two human references first, then the judges in order of first run (or as requested)."""
    seen = list(dict.fromkeys([*(requested or []), *jobs.sort_values("start_time", kind="stable")["judge"]]))
    return [*REFERENCES, *[j for j in seen if j not in REFERENCES]]


def means(per_query: pd.DataFrame) -> pd.DataFrame:
    """Mean per (dataset, system, judge) over the queries that have a value (nan: no qrels for the query)."""
    return per_query.groupby(["dataset", "system", "judge"], sort=False)["value"].mean().reset_index()


def table1(
    per_query: pd.DataFrame, types: pd.Series, judges: list[str], datasets: list[str]
) -> dict[str, pd.DataFrame]:
    """Per dataset: a frame indexed by system with columns type, human, <judges>; nan = missing cell (the per-judge
    references are no column: compare/base/reference.py)."""
    m = means(own_rows(per_query))
    out = {}
    for dataset in datasets:
        d = m[m["dataset"] == dataset].pivot(index="system", columns="judge", values="value")
        table = d.reindex(index=types.index, columns=judges).astype(float)
        table.insert(0, "type", types.to_numpy())
        table.columns.name = None
        out[dataset] = table
    return out


def table2(t1: dict[str, pd.DataFrame], labels: pd.DataFrame, usage: pd.DataFrame, refs: References) -> pd.DataFrame:
    """Per dataset and judge: the agreement statistics on the label set (kappa graded, weighted, at each binary
    cut, alpha, ...), the ordering statistics against each judge's human reference (``refs``: tau over all
    systems and oracles only, tau_AP, rho, tau top 5), labelled and failed pairs, label shares. ``usage`` has
    dataset, judge, labelled_pairs, failed_pairs (virtual judges: 0 failed)."""
    k = columns.agreement_table(labels).set_index(["dataset", "judge"])
    u = usage.set_index(["dataset", "judge"]) if len(usage) else pd.DataFrame()
    rows = []
    for dataset, table in t1.items():
        oracles = list(table.index[table["type"] == "oracle"])
        for judge in judge_columns(table):
            col, human = table[judge], refs.column(dataset, judge, table.index)
            key = (dataset, judge)
            rows.append(
                {
                    "dataset": dataset,
                    "judge": judge,
                    "reference": refs.reference,
                    **columns.agreement_columns(k, key),
                    **columns.ordering(col, human, list(table.index), oracles),
                    "systems": int(np.sum(col.notna() & human.notna())),
                    "labelled_pairs": u.at[key, "labelled_pairs"] if key in u.index else math.nan,
                    "failed_pairs": u.at[key, "failed_pairs"] if key in u.index else math.nan,
                }
            )
    return pd.DataFrame(rows, columns=TABLE2)


def usage(summaries: pd.DataFrame, vlabels: pd.DataFrame) -> pd.DataFrame:
    """Labelled and failed pairs per (dataset, judge) on the original text: from each real judge's summary run
    (logged once per dataset, judge and text view), label counts and 0 failures for virtual judges."""
    cols = ["dataset", "judge", "labelled_pairs", "failed_pairs"]
    real = (
        summaries[(summaries["judge"] != HUMAN) & (summaries["text_view"] == ORIGINAL)] if len(summaries) else summaries
    )
    u = real.reindex(columns=cols).drop_duplicates(["dataset", "judge"], keep="last")
    v = (
        vlabels.groupby(["dataset", "judge"], sort=False)
        .size()
        .rename("labelled_pairs")
        .reset_index()
        .assign(failed_pairs=0)
    )
    return pd.concat([u, v], ignore_index=True).reindex(columns=cols)


SILENT = ["dataset", "judge", "failed_pairs"]


def silent_judges(summaries: pd.DataFrame) -> pd.DataFrame:
    """(dataset, judge, failed_pairs) of each judge that labelled no pair of a dataset's label set on the original
    text (every call failed and ``max_failed_share=1.0`` let its cells finish). Its nDCG would be 0 for every system
    and its agreement 0 or undefined: numbers that read as a verdict on a judge that said nothing. It gets a note in
    the report instead (compare/sections/table1.py) and no number anywhere."""
    if not len(summaries) or "labelled_pairs" not in summaries:
        return pd.DataFrame(columns=SILENT)
    rows = summaries[
        (summaries["text_view"] == ORIGINAL) & (summaries["judge"] != HUMAN) & (summaries["labelled_pairs"] == 0)
    ]
    return rows.reindex(columns=SILENT).drop_duplicates(["dataset", "judge"], keep="last").reset_index(drop=True)


def without(frame: pd.DataFrame, silent: pd.DataFrame) -> pd.DataFrame:
    """``frame``'s rows of (dataset, judge) pairs that are not silent."""
    if not len(silent) or not len(frame):
        return frame
    keys = pd.MultiIndex.from_frame(frame[["dataset", "judge"]].astype(str))
    drop = pd.MultiIndex.from_frame(silent[["dataset", "judge"]].astype(str))
    return frame[~keys.isin(drop)].reset_index(drop=True)


def silent_everywhere(jobs: pd.DataFrame, silent: pd.DataFrame) -> set[str]:
    """The judges silent on every dataset they ran on: they get no column at all."""
    if not len(silent):
        return set()
    ran = jobs.groupby("judge")["dataset"].agg(set)
    said = silent.groupby("judge")["dataset"].agg(set)
    return {j for j in said.index if j in ran.index and ran[j] <= said[j]}
