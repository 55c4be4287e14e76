"""One identity per dataset name in a report: runs scored on other qrels, pools or passages never share a table.

Every job run carries its dataset's fingerprint (``data/fingerprint.py``): ``dataset_hash`` over the queries,
qrels and pool as loaded, and ``texts_hash`` over the passage texts where the cell read them. Rerun some
cells with ``dataset.qrels=...`` or ``dataset.pool_depth=50`` and the experiment holds two ``dl19``s; the
latest run per cell would otherwise win, so Table 1, tau and the t-tests would compare systems scored on
different label sets without a word. compare refuses instead, names both identities and how to pick one:
``datasets=dl19@<hash prefix>`` (a ``dataset_hash`` prefix, or a ``texts_hash`` prefix: the cells that read
those texts plus the cells that read none) or ``sweep=ID``.
"""

from __future__ import annotations

import pandas as pd

from judgebench.exceptions import CompareError

UNRECORDED = "unrecorded"  # runs logged before datasets had an identity (metric version < 3)
COLUMNS = ("dataset_hash", "dataset_parts", "texts_hash")


def parse(requested: list[str] | None) -> tuple[list[str] | None, dict[str, str]]:
    """(dataset names, {name: hash prefix}) from ``datasets=dl19@3fa2c1,dl20``."""
    if not requested:
        return None, {}
    names, picks = [], {}
    for item in requested:
        name, _, prefix = item.partition("@")
        if name in picks or (prefix and name in names):  # two picks of one name: one report holds one identity each
            raise CompareError(
                f"datasets={','.join(requested)}: {name} is named twice ({item} and an earlier "
                f"{name}{'@' + picks[name] if name in picks else ''}); one report holds one identity per "
                f"dataset name: pick one ({name}@<hash prefix>), and compare the other in a report of its own"
            )
        names.append(name)
        if prefix:
            picks[name] = prefix
    return names, picks


def _pick(frame: pd.DataFrame, name: str, prefix: str) -> pd.DataFrame:
    rows = frame["dataset"] == name
    if not rows.any():
        return frame
    d = frame[rows]
    by_dataset = d["dataset_hash"].str.startswith(prefix)
    if by_dataset.any():
        keep = by_dataset
    else:
        texts = d["texts_hash"].fillna("").str.startswith(prefix)
        if not texts.any():
            raise CompareError(
                f"datasets={name}@{prefix}: no run of dataset {name} has that identity; it has {_listing(d)}"
            )
        cores = set(d.loc[texts, "dataset_hash"])
        keep = d["dataset_hash"].isin(cores) & (texts | d["texts_hash"].isna())
    return frame[~rows | keep.reindex(frame.index, fill_value=False)]


def _listing(d: pd.DataFrame, column: str = "dataset_hash") -> str:
    parts = []
    for value, g in d.groupby(column, sort=False):
        last = pd.to_datetime(g["start_time"].max(), unit="ms").strftime("%Y-%m-%d %H:%M")
        extra = (
            f", {g['dataset_parts'].iloc[-1]}"
            if column == "dataset_hash" and isinstance(g["dataset_parts"].iloc[-1], str)
            else ""
        )
        parts.append(f"{g['dataset'].iloc[0]}@{value} ({len(g)} runs, latest {last}{extra})")
    return " and ".join(parts)


def _differ(d: pd.DataFrame) -> str:
    """Which parts (queries, qrels, pool) differ between the identities of one dataset name."""
    seen = [
        dict(p.split("=", 1) for p in str(v).split(",") if "=" in p)
        for v in d.drop_duplicates("dataset_hash")["dataset_parts"]
    ]
    keys = list(dict.fromkeys(k for s in seen for k in s))
    differ = [k for k in keys if len({s.get(k) for s in seen}) > 1]
    return ", ".join(differ) if differ else "identities recorded by different judgebench versions"


def one_identity(
    frame: pd.DataFrame, picks: dict[str, str] | None = None, experiment: str = "", names: list[str] | None = None
) -> pd.DataFrame:
    """``frame`` (one row per run, with the COLUMNS and start_time) restricted to the picked identities;
    refuses a dataset name (of ``names``, default all) that still has two dataset or texts identities."""
    frame = frame.copy()
    for c in COLUMNS:
        frame[c] = frame[c] if c in frame.columns else None
    frame["dataset_hash"] = frame["dataset_hash"].fillna(UNRECORDED)
    for name, prefix in (picks or {}).items():
        frame = _pick(frame, name, prefix)
    where = f" in experiment {experiment!r}" if experiment else ""
    for name, d in frame.groupby("dataset", sort=False):
        if names and name not in names:
            continue
        if d["dataset_hash"].nunique() > 1:
            raise CompareError(
                f"dataset {name} has {d['dataset_hash'].nunique()} identities{where}: {_listing(d)}; they differ in "
                f"{_differ(d)}, so their numbers cannot share a table. Select one with datasets={name}@<hash> "
                f"(e.g. datasets={name}@{d['dataset_hash'].iloc[-1]}) or one sweep with sweep=ID"
            )
        texts = d.dropna(subset=["texts_hash"])
        if texts["texts_hash"].nunique() > 1:
            raise CompareError(
                f"dataset {name}: the cells that read passage texts read {texts['texts_hash'].nunique()} "
                f"different texts{where}: "
                f"{_listing(texts, 'texts_hash')}. Select one with datasets={name}@<texts hash> "
                f"(e.g. datasets={name}@{texts['texts_hash'].iloc[-1]}) or one sweep with sweep=ID"
            )
    return frame


def describe(frame: pd.DataFrame) -> dict[str, str]:
    """{dataset name: ``name@hash``} of a checked frame (for the report's header)."""
    return {name: f"{name}@{d['dataset_hash'].iloc[-1]}" for name, d in frame.groupby("dataset", sort=False)}
