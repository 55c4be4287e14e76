"""Per-query results of many runs under several sets of labels, turned into the cells a grid would have logged.

Each set of labels is a judge (its name is the judge's; the human reference's set is the judge ``human``), each run
a system. A cell (run, judge) holds, per query, the run's value under that judge's labels and under the human
reference's, the columns a grid cell's ``per_query.csv`` has (docs/datasets.md, "Existing evaluations as input"):
compare then reads imported and computed cells alike. Nothing is dropped without a word: a run or a query present
under one set of labels and missing under another is listed by :func:`gaps`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from judgebench.data.reading import lines, read_text
from judgebench.data.results_files import read_results
from judgebench.evaluation import HUMAN, HUMAN_JUDGED, HUMAN_LABELSET
from judgebench.exceptions import DataError

GAPS = ["run", "judge", "missing", "queries"]  # missing: "run" (every query) or "queries" (those listed)
PER_QUERY = ["query_id", f"ndcg10_{HUMAN}", f"ndcg10_{HUMAN_LABELSET}", f"ndcg10_{HUMAN_JUDGED}", "ndcg10_judge"]


@dataclass(frozen=True)
class RunInfo:
    """What a run is, from the runs table: its type (the table's column, e.g. GPT, T5), the model family that type
    maps to (the ``families`` setting) and whether it uses an LLM (ranker type ``llm``, else ``external``)."""

    kind: str = ""
    family: str = ""
    llm: bool = False


@dataclass
class Results:
    """Every judge's per-query values of one measure: ``values`` has run, judge, query_id, value."""

    measure: str
    values: pd.DataFrame
    runs: dict[str, RunInfo] = field(default_factory=dict)

    def judges(self) -> list[str]:
        return list(dict.fromkeys(self.values["judge"]))

    def systems(self) -> list[str]:
        return list(dict.fromkeys(self.values["run"]))


def read_judge(name: str, paths: list[Path], measure: str) -> pd.DataFrame:
    """The per-query values of ``measure`` in every file of one judge (run, judge, query_id, value); a file without the
    measure, or a run in two of them, is a DataError naming the file."""
    frames, owner = [], {}
    for path in paths:
        rows = read_results(path, {measure}).rows
        if rows.empty:
            raise DataError(path, f"no per-query values of measure {measure!r} (results.measure)")
        for run in rows["run"].unique():
            if run in owner:
                raise DataError(
                    path, f"run {run} of judge {name} is also in {owner[run]}, expected each run in one file"
                )
            owner[run] = str(path)
        frames.append(rows.drop(columns="measure").assign(judge=name))
    return pd.concat(frames, ignore_index=True)[["run", "judge", "query_id", "value"]]


def read_run_table(
    path: Path, id_column: str, type_column: str, llm_column: str | None, families: dict[str, str]
) -> dict[str, RunInfo]:
    """The runs table (tab- or space-separated with a header line): run id -> RunInfo. A type without a family in
    ``families`` is a DataError naming the line and the setting."""
    rows = [(n, line.split("\t") if "\t" in line else line.split()) for n, line in lines(read_text(path))]
    if not rows:
        raise DataError(path, "empty, expected a header line and one line per run")
    header = rows[0][1]
    for column in (id_column, type_column, *([llm_column] if llm_column else [])):
        if column not in header:
            raise DataError(path, f"no column {column!r} in the header ({', '.join(header)})", rows[0][0])
    at = {c: header.index(c) for c in header}
    out = {}
    for n, fields in rows[1:]:
        if len(fields) != len(header):
            raise DataError(path, f"expected {len(header)} fields like the header, got {len(fields)}", n)
        kind = fields[at[type_column]]
        if kind not in families:
            raise DataError(
                path,
                f"run type {kind!r} has no family: add it to results.runs.families "
                f"(known: {', '.join(families) or 'none'})",
                n,
            )
        llm = bool(llm_column) and fields[at[llm_column]].strip() not in ("0", "", "false", "False")
        out[fields[at[id_column]]] = RunInfo(kind, str(families[kind]), llm)
    return out


def gaps(results: Results, reference: str = HUMAN) -> pd.DataFrame:
    """Every run missing under a judge that has other runs, and every run's queries missing under one judge that
    another judge scored for it (GAPS columns; ``queries`` space-separated)."""
    v = results.values
    judges, rows = results.judges(), []
    have = v.groupby(["run", "judge"])["query_id"].agg(frozenset)
    for run in results.systems():
        union = frozenset().union(*(have.get((run, j), frozenset()) for j in judges))
        for j in judges:
            mine = have.get((run, j))
            if mine is None:
                rows.append({"run": run, "judge": j, "missing": "run", "queries": len(union)})
            elif union - mine:
                rows.append({"run": run, "judge": j, "missing": "queries", "queries": " ".join(sorted(union - mine))})
    return pd.DataFrame(rows, columns=GAPS)


def cell_per_query(v: pd.DataFrame, judge: str, reference: str = HUMAN) -> pd.DataFrame:
    """The per_query.csv of cell (run, judge) from the run's rows ``v`` of Results.values: every query either side
    scored, the reference's values in the three
    human columns (one set of human labels: no label set or failed pairs to tell them apart) and the judge's
    own; nan where a side has no value (listed by :func:`gaps`)."""
    ref = v[v["judge"] == reference].set_index("query_id")["value"]
    own = v[v["judge"] == judge].set_index("query_id")["value"]
    queries = list(dict.fromkeys([*ref.index, *own.index]))
    human = ref.reindex(queries).to_numpy(dtype=float)
    return pd.DataFrame(
        {
            "query_id": queries,
            PER_QUERY[1]: human,
            PER_QUERY[2]: human,
            PER_QUERY[3]: human,
            "ndcg10_judge": own.reindex(queries).to_numpy(dtype=float),
        },
        columns=PER_QUERY,
    )


def cell_means(per_query: pd.DataFrame) -> dict[str, float]:
    """The cell's metrics: each column's mean over the queries it has, and the number of queries."""
    out = {c: float(np.nanmean(per_query[c])) if per_query[c].notna().any() else float("nan") for c in PER_QUERY[1:]}
    return {**out, "n_queries": len(per_query)}
