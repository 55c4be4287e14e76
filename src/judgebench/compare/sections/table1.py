"""Table 1: mean nDCG@10 per system and judge (human references first), the virtual judges that joined it, and the
grouped bars with their t intervals (Table 6) (the paper's Figure 3)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding
from judgebench.compare.base.section import LatexTable, Section
from judgebench.compare.renderers import figures, render

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report


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
    return [
        (d, s, int(k), int(n)) for d, s, k, n in zip(rows["dataset"], rows["system"], rows[KEPT], rows[OF].fillna(0))
    ]


def _outside_line(dataset: str, system: str, kept: int, of: int) -> str:
    return (
        f"{system} keeps {kept} of {of} documents outside the judged pool (ranker.outside_pool=keep): the human column "
        "counts them, no judge labels them, so its row compares different document lists"
    )


def silent(r: Report, dataset: str | None = None) -> list[tuple[str, str, str]]:
    """(dataset, judge, line) of each judge that labelled nothing (of ``dataset``, or of any): the note that stands
    where its numbers would be (compare/base/tables.py ``silent_judges``)."""
    rows = getattr(r, "silent", None)  # a report built by hand (tests) may have none
    if rows is None or not len(rows):
        return []
    rows = rows[rows["dataset"] == dataset] if dataset is not None else rows
    out = []
    for d, judge, failed in zip(rows["dataset"], rows["judge"], rows["failed_pairs"]):
        of = f"none of its {int(failed)} pairs" if failed == failed else "no pair"
        out.append(
            (
                d,
                judge,
                f"judge {judge} labelled {of} on {d} (every call failed; max_failed_share=1.0 let its cells "
                "finish): it has no numbers, so it is in no table, figure or finding of this dataset",
            )
        )
    return out


class Table1(Section):
    name = "table1"

    def markdown(self, r: Report) -> list[str]:
        md, o = names.markdown, r.options
        turned = any(len(_best(t)) > render.JUDGE_COLUMNS for t in r.table1.values())
        shape = "judge x system; best per judge in bold" if turned else "system x judge; best per column in bold"
        parts = [
            f"\n## Table 1: mean nDCG@10 on judged documents ({shape})",
            "\n`human`: all human qrels (the paper's column); `human_labelset`: the human labels of the label set "
            "(pool ∩ qrels), the qrels a judge is scored against.",
        ]
        for dataset, t in r.table1.items():
            table, turned = render.judge_table(t, _best(t), best=_best(t))
            parts += [f"\n### {md(dataset)}\n"]
            parts += (
                [
                    f"\n{len(_best(t))} judges: one row per judge, one column per system (the first row is the "
                    "system's "
                    "type); best per judge in bold.\n"
                ]
                if turned
                else []
            )
            parts += [table]
            parts += [f"\n**Note:** {md(_outside_line(*x))}." for x in outside_pool(r, dataset)]
            parts += [f"\n**Note:** {md(line)}." for _, _, line in silent(r, dataset)]
        if r.virtual:
            parts += [
                "\nVirtual judges (built from the judges' labels, no new calls; nDCG recomputed from each "
                "system's run file):"
            ]
            parts += [f"- {md(v.describe())}" for v in r.virtual]
            for alias, same in r.aliases.items():
                parts.append(
                    f"- {md(alias)} = {md(same)} here (same members, same rule): reported once, as {md(same)}"
                    + (
                        " (the default panel takes one judge per non-human, non-simulated family when there are 2 or "
                        "more such families; here there are not)"
                        if alias == "panel" and not o.panel
                        else ""
                    )
                )
        else:
            real = r.real_judges
            parts.append(f"\nNo ensembles or panel: they need at least 2 non-human judges, found {len(real)}.")
        return parts

    def latex(self, r: Report) -> list[LatexTable]:
        return [
            (
                f"table1_{names.file_part(d)}",
                t,
                f"Mean nDCG@10 (judged only) on {d}; best per column in bold.",
                {"best": _best(t)},
            )
            for d, t in r.table1.items()
        ]

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(f"table1_{names.file_part(d)}", t, True) for d, t in r.table1.items()]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return [figures.ndcg_bars(r.table1, out / "figure_ndcg_bars.png", r.ci_means, r.options.level)]

    def console(self, r: Report) -> list[str]:
        """The table's first rows and columns; past JUDGE_COLUMNS judges one line (the terminal shows about 5 of 35
        judges' columns: Table 2's headline rows say more about them in the summary's ~30 lines)."""

        def shown(dataset: str, t: pd.DataFrame) -> tuple[str, ...]:
            if len(_best(t)) > render.JUDGE_COLUMNS:
                return (
                    f"\nTable 1 ({names.plain(dataset)}): mean nDCG@10, judged only, {len(t)} systems x "
                    f"{len(_best(t))} judges: "
                    "in the report (one row per judge)",
                )
            return f"\nTable 1 ({names.plain(dataset)}): mean nDCG@10, judged only", render.plain(
                t, rows=render.TERMINAL_ROWS
            )

        return [
            line
            for dataset, t in r.table1.items()
            for line in (
                *shown(dataset, t),
                *(
                    f"  note: {names.plain(x[1])} keeps {x[2]} of {x[3]} documents outside the judged pool "
                    "(ranker.outside_pool=keep)"
                    for x in outside_pool(r, dataset)
                ),
                *(f"  note: {names.plain(line)}" for _, _, line in silent(r, dataset)),
            )
        ]

    def findings(self, r: Report) -> Iterable[Finding]:
        for dataset, system, kept, of in outside_pool(r):
            yield Finding(
                "grid",
                _outside_line(dataset, system, kept, of) + ".",
                dataset,
                alert=True,
                brief=f"{system}: {kept} of {of} documents outside the judged pool",
            )
        for dataset, judge, line in silent(r):
            yield Finding(
                "grid",
                line[0].upper() + line[1:] + ".",
                dataset,
                judge,
                alert=True,
                brief=f"{judge}: no labels, no numbers",
            )
