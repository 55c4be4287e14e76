"""The findings grouped by kind, so that the panel that opens the report stays about one screen at any number of judges.

At 35 judges, one bullet per finding per judge made a Findings box of ~5,400 px ("inversion not measured: it needs both
LLM and oracle systems" 35 times) and pushed the discriminative-power answer 16 screens down. Here each kind (topic)
of finding becomes, in the panel and the terminal:

- the selection-wide sentences (grid, a dataset's answer) as they are;
- up to ``FEW`` subjects: their sentences as they are (a small report reads as before);
- subjects that all say the same: that sentence once, with how many judges it is about;
- subjects whose short forms (``brief``) take at most ``FEW_VERDICTS`` values (inverted / not inverted): one line per
  verdict naming how many judges, and which where few;
- otherwise one compact table, judges as rows, ranked by the Table 2 column in ``RANK_BY`` (best first; alerts
  first where the kind has no column), cut to ``PANEL_ROWS`` rows: the top and the bottom, with how many are left out.

Every finding, in full, stays in the section "Findings per judge" lower down (compare/sections/findings_detail.py).
Only the layout is decided here: the findings' wording and verdicts are findings.py's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from judgebench.compare.base.findings import GRID, Finding

FEW = 6  # subjects of a kind shown sentence by sentence (a report of a few judges reads as before)
FEW_VERDICTS = 2  # distinct short forms that read as one line per verdict
PANEL_ROWS = 6  # rows of a kind's ranked table in the panel (top half, bottom half)
NAMED = 5  # a verdict's judges are named where at most this many
# The Table 2 column a kind's table is ranked by, best (highest) first.
RANK_BY = {"oracle order": "tau_oracles", "system order": "tau_all", "label agreement": "kappa_graded"}


@dataclass
class Kind:
    """One kind of finding as the panel shows it: ``sentences`` (shown as they are), or one ``common`` sentence about
    ``count`` subjects, or ``verdicts`` ({brief: subjects}), or ranked ``rows`` of which ``hidden`` are left out."""

    topic: str
    sentences: list[Finding] = field(default_factory=list)
    common: Finding | None = None
    count: int = 0
    verdicts: dict[str, list[Finding]] = field(default_factory=dict)
    rows: list[Finding] = field(default_factory=list)
    hidden: int = 0
    ranked_by: str = ""

    @property
    def condensed(self) -> bool:
        """Whether the panel leaves some finding's full sentence to the per-judge section."""
        return bool(self.common or self.verdicts or self.rows)


def _value(table2: pd.DataFrame | None, column: str, f: Finding) -> float:
    if table2 is None or column not in getattr(table2, "columns", ()):
        return math.nan
    hit = table2.loc[(table2["dataset"] == f.dataset) & (table2["judge"] == f.judge), column]
    return float(hit.iloc[0]) if len(hit) and pd.notna(hit.iloc[0]) else math.nan


def kinds(found: list[Finding], table2: pd.DataFrame | None = None, rows: int = PANEL_ROWS) -> list[Kind]:
    """The findings by kind, in the order their kinds first appear (selection-wide findings first, as findings.py
    sorts)."""
    by_topic: dict[str, list[Finding]] = {}
    for f in found:
        by_topic.setdefault(f.topic, []).append(f)
    out = []
    for topic, items in by_topic.items():
        kind = Kind(topic, sentences=[f for f in items if f.judge == GRID])
        per_subject = [f for f in items if f.judge != GRID]
        texts, briefs = {f.text for f in per_subject}, {f.brief or f.text for f in per_subject}
        if len(per_subject) <= FEW:
            kind.sentences += per_subject
        elif len(texts) == 1:
            kind.common, kind.count = per_subject[0], len(per_subject)
        elif len(briefs) <= FEW_VERDICTS and topic not in RANK_BY:
            for f in sorted(per_subject, key=lambda f: not f.alert):
                kind.verdicts.setdefault(f.brief or f.text, []).append(f)
        else:
            column = RANK_BY.get(topic, "")
            value = {id(f): _value(table2, column, f) for f in per_subject}
            ranked = sorted(
                per_subject, key=lambda f: (not f.alert, -value[id(f)] if not math.isnan(value[id(f)]) else math.inf)
            )
            kind.ranked_by = column if any(not math.isnan(v) for v in value.values()) else ""
            if len(ranked) > rows:
                kind.hidden = len(ranked) - rows
                ranked = ranked[: rows - rows // 2] + ranked[len(ranked) - rows // 2 :]
            kind.rows = ranked
        out.append(kind)
    return out


def subjects(items: list[Finding], named: int = NAMED) -> str:
    """'3 judges (a, b, c)' or '30 judges': who a verdict is about, named where few."""
    who = [f.subject for f in items]
    noun = "judge" if len(who) == 1 else "judges"
    return f"{len(who)} {noun} ({', '.join(who)})" if len(who) <= named else f"{len(who)} {noun}"
