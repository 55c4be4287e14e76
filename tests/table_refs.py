"""References built from hand-made Table 1 frames, for the known-answer tests of compare's statistics."""

from __future__ import annotations

import pandas as pd

from judgebench.compare.reference import References, judged_name


def refs_of(t1: dict[str, pd.DataFrame], reference: str = "human_labelset", judged: dict[str, str] | None = None) -> References:
    """One pseudo-query per system holding its Table 1 mean, so means are the table's values. ``judged``:
    {judge: column of the table standing for that judge's human_judged values}."""
    rows = []
    for dataset, table in t1.items():
        for column in [c for c in table.columns if c != "type"]:
            names = [column] + [judged_name(j) for j, c in (judged or {}).items() if c == column]
            for name in names:
                rows += [{"dataset": dataset, "system": s, "judge": name, "query_id": "q", "value": v}
                         for s, v in table[column].items() if v == v]
    return References(pd.DataFrame(rows, columns=["dataset", "system", "judge", "query_id", "value"]), reference)
