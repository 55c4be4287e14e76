"""How tables look: the same frame as Markdown (report.md), LaTeX (paper-ready .tex) or plain text (the terminal).

Numbers are formatted once here, so every output says "missing" for an absent cell and marks
the best value of a column the same way (bold in both formats). Every cell, header and index entry is
escaped by names.py: a cell may hold a judge's or a system's name, and a name is never markup.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Literal

import pandas as pd

from judgebench.compare.base import names

Style = Literal["md", "tex", "plain"]
MISSING = "missing"
WIDTH = 120  # the terminal lines' width (compare/console.py)
_ESCAPE = {"md": names.markdown, "tex": names.latex, "plain": names.plain}


def escape(text: str, style: Style) -> str:
    return _ESCAPE[style](text)


def bold(text: str, style: Style) -> str:
    return {"md": f"**{text}**", "tex": f"\\textbf{{{text}}}"}.get(style, text)


def number(v: object, digits: int = 4, integer: bool = False) -> str:
    """A cell value as text: "missing" for nan/None, yes/no for booleans."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return MISSING
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return str(int(round(v))) if integer else f"{v:.{digits}f}"
    return str(v)


def cells(
    df: pd.DataFrame,
    style: Style,
    best: Iterable[str] = (),
    integers: Iterable[str] = (),
    digits: int = 4,
    strong: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """Every cell as escaped text; in the ``best`` columns the maximum (all ties) is bold, and so is a cell of a
    ``strong`` column ({column: value}) holding that value (the bias table's INVERTED)."""
    best, integers, strong = set(best), set(integers), dict(strong or {})
    out = pd.DataFrame(
        index=[escape(str(i), style) for i in df.index],
        columns=[escape(str(c), style) for c in df.columns],
        dtype=object,
    )
    out.index.name = escape(str(df.index.name), style) if df.index.name else None
    for c_in, c_out in zip(df.columns, out.columns):
        col = df[c_in]
        top = pd.to_numeric(col, errors="coerce").max() if c_in in best else None
        texts = []
        for v in col:
            v = v.item() if hasattr(v, "item") else v
            t = escape(number(v, digits, c_in in integers), style)
            if (top is not None and isinstance(v, (int, float)) and not isinstance(v, bool) and v == top) or (
                c_in in strong and v == strong[c_in]
            ):
                t = bold(t, style)
            texts.append(t)
        out[c_out] = texts
    return out


def _align(df: pd.DataFrame, index: bool) -> list[str]:
    """Numbers right, text left (pandas 3 stores text as "str", so test for numbers, not object)."""
    cols = [
        "right" if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) else "left"
        for c in df.columns
    ]
    return (["left"] if index else []) + cols


def markdown(df: pd.DataFrame, index: bool = True, **kw) -> str:
    return cells(df, "md", **kw).to_markdown(index=index, disable_numparse=True, colalign=_align(df, index))


JUDGE_COLUMNS = 12  # judges (references included) a system x judge table shows as columns; past it, judges are rows


def judge_table(df: pd.DataFrame, judges: list[str], **kw) -> tuple[str, bool]:
    """A system x judge frame as Markdown, and whether it was turned: up to JUDGE_COLUMNS ``judges`` it is as given
    (systems as rows); past it (35 judges as in +experiment=llmjudge_oracles) judges are the rows and systems the
    columns, so the table grows down, not sideways. The cells (bold best per judge) are rendered before turning."""
    if len(judges) <= JUDGE_COLUMNS:
        return markdown(df, **kw), False
    texts = cells(df, "md", **kw).T
    texts.index.name, texts.columns.name = "judge", None
    return texts.to_markdown(disable_numparse=True, colalign=["left", *["right"] * len(texts.columns)]), True


def judge_table_under(heading: str, df: pd.DataFrame, columns_are: str) -> list[str]:
    """A per-dataset Markdown heading and the :func:`judge_table` of ``df`` (every column a judge) under it; a turned
    table's heading says so, naming what its columns are then (``columns_are``, singular: system, pair)."""
    table, turned = judge_table(df, list(df.columns))
    return [
        f"\n### {heading}" + (f" (one row per judge, one column per {columns_are})" if turned else "") + "\n",
        table,
    ]


def latex(df: pd.DataFrame, caption: str, label: str, index: bool = True, **kw) -> str:
    if index:  # the index as a first column: pandas would give its name a header row of its own
        df = df.reset_index()
    align = "".join(a[0] for a in _align(df, False))
    return cells(df, "tex", **kw).to_latex(
        index=False, escape=False, caption=escape(caption, "tex"), label=label, column_format=align, position="t"
    )


TERMINAL_ROWS = 6  # rows of a table in the terminal summary: the first and last few, the rest in the report


def plain(frame: pd.DataFrame, index: bool = True, width: int = WIDTH, rows: int | None = None, **kw) -> str:
    """A plain text table for the terminal; columns that would pass ``width`` are left out and named, and past ``rows``
    rows only the first and last few are shown (the terminal summary stays a screen at 35 judges or systems). The cells
    are rendered once and the widest prefix of the columns that fits is found by bisection (a line only grows with each
    column): dropping one column at a time re-rendered the table a hundred times for a hundred judges."""
    cols = list(frame.columns)
    if not cols:
        return ""
    left_out = 0
    if rows is not None and len(frame) > rows:
        left_out = len(frame) - rows
        frame = pd.concat([frame.head(rows - rows // 2), frame.tail(rows // 2)])
    texts, align = cells(frame, "plain", digits=3, **kw), _align(frame, index)

    def table(k: int) -> str:
        return texts.iloc[:, :k].to_markdown(
            index=index, tablefmt="simple", disable_numparse=True, colalign=align[: k + 1] if index else align[:k]
        )

    def fits(k: int) -> bool:
        return max(len(line) for line in table(k).splitlines()) <= width

    k = len(cols)
    if not fits(k):  # the largest k that fits, or 1
        lo, hi = 1, k - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid - 1)
        k = lo
    dropped = cols[k:]
    notes = ([f"{left_out} rows between the first {rows - rows // 2} and the last {rows // 2}"] if left_out else []) + (
        [f"{len(dropped)} columns: {', '.join(dropped)}"] if dropped else []
    )
    return table(k) + (f"\n(+ {'; + '.join(notes)}; in the report)" if notes else "")
