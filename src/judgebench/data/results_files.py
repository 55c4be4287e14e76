"""Existing evaluations as input: per-query results files, as trec_eval -q and leaderboards write them.

Many groups hold per-query scores of runs, not the runs: ``trec_eval -q`` output, one file per run with lines
``measure query value`` (its ``runid all <name>`` line names the run, else the file's stem), or one file for all
runs with lines ``run measure query value`` (TREC DL 2023's ``all.pass.*.ndcgeval``). :func:`read_results` reads
either into one frame (run, measure, query_id, value), one line of error naming file and line for anything else.

The ``all`` rows are trec_eval's means over the queries. They are not read as values: every statistic is computed
from the per-query rows. Each is checked against the mean of its run's per-query values of that measure (to the
rounding both were printed at: a stored intermediate is verified when read), so a file whose means and per-query
rows disagree (a truncated file, queries filtered after the fact) stops at the ``all`` line that shows it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from judgebench.data.reading import lines, read_text
from judgebench.exceptions import DataError

COLUMNS = ["run", "measure", "query_id", "value"]
ALL = "all"
# trec_eval's lines that are not per-query scores of a measure (num_q, runid) are counts and names, not means
NOT_MEANS = {"runid", "num_q", "num_ret", "num_rel", "num_rel_ret"}


@dataclass(frozen=True)
class ResultsFile:
    """What :func:`read_results` read from one file: its per-query rows and the ``all`` means it verified."""

    path: str
    rows: pd.DataFrame  # COLUMNS
    checked_means: int  # ``all`` rows verified against the per-query mean


def _decimals(text: str) -> int:
    return len(text.partition(".")[2]) if "." in text else 0


def read_results(path: str | Path, measures: set[str] | None = None) -> ResultsFile:
    """Per-query rows of ``path`` (both layouts; a file holds one layout), only ``measures`` when given.

    A value that is no number, a line of another field count, a (run, measure, query) given twice, or an ``all``
    row that is not the mean of its per-query rows raises :class:`DataError` with the file and the line."""
    text = read_text(path)
    width = None
    runid = None
    runs, names, queries, values, where = [], [], [], [], []
    alls: list[tuple[str, str, float, int, int]] = []  # run, measure, mean, decimals, line
    for n, line in lines(text):
        fields = line.split()
        if width is None:
            width = len(fields)
            if width not in (3, 4):
                raise DataError(
                    path,
                    f"expected 'measure query value' (trec_eval -q) or 'run measure query value', got {width} fields",
                    n,
                )
        if len(fields) != width:
            raise DataError(path, f"expected {width} fields like the file's first line, got {len(fields)}", n)
        run, measure, query, value = fields if width == 4 else [None, *fields]
        if measure == "runid" and width == 3:
            runid = value
            continue
        if measure in NOT_MEANS or (measures is not None and measure not in measures):
            continue
        try:
            number = float(value)
        except ValueError:
            raise DataError(path, f"measure {measure}, query {query}: value {value!r} is not a number", n) from None
        if not np.isfinite(number):
            raise DataError(path, f"measure {measure}, query {query}: value {value!r} is not a finite number", n)
        if query == ALL:
            alls.append((run, measure, number, _decimals(value), n))
            continue
        runs.append(run)
        names.append(measure)
        queries.append(query)
        values.append(number)
        where.append(n)
    if width == 3:
        own = runid or Path(str(path)).name.split(".")[0]
        runs = [own] * len(values)
        alls = [(own, m, v, d, n) for _, m, v, d, n in alls]
    rows = pd.DataFrame({"run": runs, "measure": names, "query_id": queries, "value": values}, columns=COLUMNS)
    twice = rows.duplicated(["run", "measure", "query_id"], keep="first")
    if twice.any():
        at = int(np.flatnonzero(twice.to_numpy())[0])
        r = rows.iloc[at]
        raise DataError(
            path,
            f"run {r['run']}, measure {r['measure']}, query {r['query_id']} is given twice, expected once",
            where[at],
        )
    _check_means(path, rows, alls)
    return ResultsFile(str(path), rows.astype({"query_id": str}), len(alls))


def _check_means(path, rows: pd.DataFrame, alls: list[tuple[str, str, float, int, int]]) -> None:
    """Each ``all`` row against its run's per-query mean, within the rounding of both (half a unit of the ``all``
    row's last printed decimal, plus as much again for the per-query values' own rounding)."""
    if not alls:
        return
    means = rows.groupby(["run", "measure"])["value"].agg(["mean", "size"])
    for run, measure, value, decimals, n in alls:
        if (run, measure) not in means.index:
            raise DataError(path, f"run {run}, measure {measure}: an 'all' row but no per-query row for it", n)
        mean, size = means.loc[(run, measure)]
        tolerance = 10.0**-decimals + 1e-9
        if abs(mean - value) > tolerance:
            raise DataError(
                path,
                f"run {run}, measure {measure}: the 'all' row says {value} but the mean of its {int(size)} "
                f"per-query values is {mean:.6f} (expected within {tolerance:.1g}); is the file complete?",
                n,
            )
