"""References built from hand-made Table 1 frames, for the known-answer tests of compare's statistics."""

from __future__ import annotations

import pandas as pd

from judgebench.compare.base.reference import HUMAN_JUDGED, OWN, References
from judgebench.evaluation import REFERENCES


def refs_of(
    t1: dict[str, pd.DataFrame], reference: str = "human_labelset", judged: dict[str, str] | None = None
) -> References:
    """One pseudo-query per system holding its Table 1 mean, so means are the table's values. ``judged``:
    {judge: column of the table standing for that judge's human_judged values}."""
    rows = []
    for dataset, table in t1.items():
        for column in [c for c in table.columns if c != "type"]:
            keys = [(column, column if column in REFERENCES else OWN)]
            keys += [(j, HUMAN_JUDGED) for j, c in (judged or {}).items() if c == column]
            for name, role in keys:
                rows += [
                    {"dataset": dataset, "system": s, "judge": name, "role": role, "query_id": "q", "value": v}
                    for s, v in table[column].items()
                    if v == v
                ]
    return References(
        pd.DataFrame(rows, columns=["dataset", "system", "judge", "role", "query_id", "value"]), reference
    )
