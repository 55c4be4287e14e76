"""Table 1: mean nDCG@10 per system and judge (human references first), the virtual judges that joined it, and the
grouped bars with their bootstrap intervals (the paper's Figure 3)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare import names
from judgebench.compare.renderers import figures
from judgebench.compare.renderers import render
from judgebench.compare.artifacts import REFERENCES
from judgebench.compare.section import LatexTable, Section

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report


def _best(t: pd.DataFrame) -> list[str]:
    return [c for c in t.columns if c != "type"]


class Table1(Section):
    name = "table1"

    def markdown(self, r: Report) -> list[str]:
        md, o = names.markdown, r.options
        parts = ["\n## Table 1: mean nDCG@10 on judged documents (system x judge; best per column in bold)",
                 "\n`human`: all human qrels (the paper's column); `human_labelset`: the human labels of the label set "
                 "(pool ∩ qrels), the qrels a judge is scored against."]
        for dataset, t in r.table1.items():
            parts += [f"\n### {md(dataset)}\n", render.markdown(t, best=_best(t))]
        if r.virtual:
            parts += ["\nVirtual judges (built from the judges' labels, no new calls; nDCG recomputed from each system's run file):"]
            parts += [f"- {md(v.describe())}" for v in r.virtual]
            for alias, same in r.aliases.items():
                parts.append(f"- {md(alias)} = {md(same)} here (same members, same rule): reported once, as {md(same)}"
                             + (" (the default panel takes one judge per non-human, non-simulated family when there are 2 or "
                                "more such families; here there are not)" if alias == "panel" and not o.panel else ""))
        else:
            real = [j for j in r.judges if j not in REFERENCES and j not in {v.name for v in r.virtual}]
            parts.append(f"\nNo ensembles or panel: they need at least 2 non-human judges, found {len(real)}.")
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        return [(f"table1_{names.file_part(d)}", t, f"Mean nDCG@10 (judged only) on {d}; best per column in bold.",
                 {"best": _best(t)}) for d, t in r.table1.items()]

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(f"table1_{names.file_part(d)}", t, True) for d, t in r.table1.items()]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return [figures.ndcg_bars(r.table1, out / "figure_ndcg_bars.png", r.ci_means, r.options.level)]

    def console(self, r: Report) -> list[str]:
        return [line for dataset, t in r.table1.items()
                for line in (f"\nTable 1 ({names.plain(dataset)}): mean nDCG@10, judged only", render.plain(t))]
