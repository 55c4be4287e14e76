"""Table 1: mean nDCG@10 per system and judge (human references first), the virtual judges that joined it, and the
grouped bars with their t intervals (Table 6) (the paper's Figure 3)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare import names
from judgebench.compare.renderers import figures
from judgebench.compare.renderers import render
from judgebench.compare.findings import Finding
from judgebench.compare.section import LatexTable, Section

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report


def _best(t: pd.DataFrame) -> list[str]:
    return [c for c in t.columns if c != "type"]


KEPT, OF = "outside_pool_kept", "outside_pool_of"  # a run file's ranking statistics (rankers/runfile.py)


def outside_pool(r: Report, dataset: str | None = None) -> list[tuple[str, str, int, int]]:
    """(dataset, system, documents kept outside the pool, documents of its run) of each system (of ``dataset``, or of
    any) whose run file kept documents no judge labels (``ranker.outside_pool=keep``): the human column counts them,
    the judges' cannot."""
    jobs = r.jobs
    if KEPT not in jobs.columns:
        return []
    rows = jobs[(jobs[KEPT].fillna(0) > 0) & ((jobs["dataset"] == dataset) if dataset is not None else True)]
    rows = rows.drop_duplicates(["dataset", "system"])
    return [(d, s, int(k), int(n)) for d, s, k, n in zip(rows["dataset"], rows["system"], rows[KEPT], rows[OF].fillna(0))]


def _outside_line(dataset: str, system: str, kept: int, of: int) -> str:
    return (f"{system} keeps {kept} of {of} documents outside the judged pool (ranker.outside_pool=keep): the human column "
            "counts them, no judge labels them, so its row compares different document lists")


class Table1(Section):
    name = "table1"

    def markdown(self, r: Report) -> list[str]:
        md, o = names.markdown, r.options
        parts = ["\n## Table 1: mean nDCG@10 on judged documents (system x judge; best per column in bold)",
                 "\n`human`: all human qrels (the paper's column); `human_labelset`: the human labels of the label set "
                 "(pool ∩ qrels), the qrels a judge is scored against."]
        for dataset, t in r.table1.items():
            parts += [f"\n### {md(dataset)}\n", render.markdown(t, best=_best(t))]
            parts += [f"\n**Note:** {md(_outside_line(*x))}." for x in outside_pool(r, dataset)]
        if r.virtual:
            parts += ["\nVirtual judges (built from the judges' labels, no new calls; nDCG recomputed from each system's run file):"]
            parts += [f"- {md(v.describe())}" for v in r.virtual]
            for alias, same in r.aliases.items():
                parts.append(f"- {md(alias)} = {md(same)} here (same members, same rule): reported once, as {md(same)}"
                             + (" (the default panel takes one judge per non-human, non-simulated family when there are 2 or "
                                "more such families; here there are not)" if alias == "panel" and not o.panel else ""))
        else:
            real = r.real_judges
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
                for line in (f"\nTable 1 ({names.plain(dataset)}): mean nDCG@10, judged only", render.plain(t),
                             *(f"  note: {names.plain(x[1])} keeps {x[2]} of {x[3]} documents outside the judged pool "
                               "(ranker.outside_pool=keep)" for x in outside_pool(r, dataset)))]

    def findings(self, r: Report) -> Iterable[Finding]:
        for dataset, system, kept, of in outside_pool(r):
            yield Finding("grid", _outside_line(dataset, system, kept, of) + ".", dataset, alert=True,
                          brief=f"{system}: {kept} of {of} documents outside the judged pool")
