"""How spread out each judge's labels are: the Shannon entropy (bits) of its label distribution beside the humans'
on the same pairs. A judge that gives almost every pair the same grade has little entropy left, whatever its kappa:
the collapse shows here before it shows in the orderings. (Added as one module and one line in SECTIONS.)"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pandas as pd
from scipy.stats import entropy

from judgebench import label_scale
from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding
from judgebench.compare.base.section import LatexTable, Section, latex_table
from judgebench.compare.renderers import render
from judgebench.identity.text_view import ORIGINAL

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

COLLAPSED = 0.5  # a judge with less than this share of the humans' entropy gets a finding (a rule of thumb, not a test)
COLUMNS = ["dataset", "judge", "scale", "pairs", "judge_bits", "human_bits", "difference"]


def bits(labels: pd.Series) -> float:
    """Shannon entropy in bits of the distribution of ``labels`` (0 for a single grade)."""
    return float(entropy(labels.value_counts().to_numpy(), base=2)) if len(labels) else float("nan")


def label_entropy(labels: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, judge) of the original text view: pairs, the judge's and the humans' label entropy (bits) on
    those pairs, and judge minus human."""
    if not len(labels):
        return pd.DataFrame(columns=COLUMNS)
    original = labels[labels["text_view"] == ORIGINAL] if "text_view" in labels else labels
    rows = []
    for (dataset, judge), g in original.groupby(["dataset", "judge"], sort=False):
        tag = g["scale"].iloc[0] if "scale" in g else None
        scale = label_scale.from_tag(tag if isinstance(tag, str) else None)
        # one scale on both sides: the judge's labels as human levels, the humans' seen through the judge's scale
        # (a binary judge against relevant-or-not, never its 1 bit against the humans' 0-3)
        j, h = bits(g["relevance"]), bits(pd.Series(scale.coarsen_human(g["human"])))
        rows.append(
            {
                "dataset": dataset,
                "judge": judge,
                "scale": scale.describe(),
                "pairs": len(g),
                "judge_bits": j,
                "human_bits": h,
                "difference": j - h,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


class LabelEntropy(Section):
    name = "label_entropy"

    def compute(self, r: Report) -> dict[str, pd.DataFrame]:
        return {self.name: label_entropy(r.labels)}

    def markdown(self, r: Report) -> list[str]:
        table = self.nonempty_result(r)
        if table is None:
            return []
        return [
            "\n## Label entropy per judge (bits; the humans' on the same pairs)\n",
            "Shannon entropy of each judge's label distribution on the original texts, beside the human labels' on the "
            "pairs it labelled, both on the judge's scale (a binary judge against the human labels as relevant "
            "or not); "
            "a judge far below the humans gives most pairs one grade.\n",
            render.markdown(table, index=False, integers=["pairs"], digits=3),
        ]

    def latex(self, r: Report) -> list[LatexTable]:
        caption = "Label entropy per judge (bits), beside the human labels' on the same pairs."
        return latex_table("label_entropy", self.result(r), caption, index=False, integers=["pairs"], digits=3)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        table = self.nonempty_result(r)
        return [] if table is None else [("label_entropy", table, False)]

    def console(self, r: Report) -> list[str]:
        table = self.nonempty_result(r)
        if table is None:
            return []
        return [
            "  label entropy, judge vs human (bits): "
            + "; ".join(
                f"{names.plain(x.dataset)} / {names.plain(x.judge)} {x.judge_bits:.2f} vs {x.human_bits:.2f}"
                for x in table.itertuples(index=False)
            )
        ]

    def findings(self, r: Report) -> Iterable[Finding]:
        table = self.result(r)
        for x in table.itertuples(index=False) if table is not None else ():
            if x.human_bits > 0 and x.judge_bits < COLLAPSED * x.human_bits:
                yield Finding(
                    "label entropy",
                    f"gives most pairs the same grade: its labels carry {x.judge_bits:.2f} bits "
                    f"against the humans' {x.human_bits:.2f} on the same {x.pairs} pairs.",
                    x.dataset,
                    x.judge,
                    brief=f"label entropy {x.judge_bits:.2f} vs humans' {x.human_bits:.2f} bits",
                )
