"""The discrimination section of a compare report (compare/analyses/discrimination.py computes it): a Markdown table of
the judges ranked by how they order the oracle rankers against their construction order, beside kappa, the rank
correlations, the one-sentence answer, a CSV, and a figure (judges ranked, oracles-only per-query tau with its
interval beside kappa). report.html renders the Markdown."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare.analyses import discrimination as analysis
from judgebench.compare.base import names
from judgebench.compare.base.findings import Finding
from judgebench.compare.base.resampling import Resampling
from judgebench.compare.base.section import Section
from judgebench.compare.renderers import render

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

FIGURE = "figure_discrimination.png"
CAPTION = (
    "judges ranked by discriminative power: oracle pairs ordered as constructed, oracles-only per-query tau with its "
    "t interval, kappa"
)
COUNTS = ["pairs", "as_constructed", "reversed", "undecided", "worse_than_humans"]


def _interval(value: float, lo: float, hi: float) -> str:
    if value != value:
        return render.MISSING
    return f"{value:.3f} [{lo:.2f}, {hi:.2f}]" if lo == lo else f"{value:.3f}"


def _point(value: float) -> str:
    return render.MISSING if value != value else f"{value:.3f}"


def view(d: analysis.Discrimination, dataset: str) -> pd.DataFrame:
    """One row per judge, ranked, with the per-query tau written "value [lo, hi]" and the taus of the means as
    points."""
    t = d.table[d.table["dataset"] == dataset]
    return pd.DataFrame(
        {
            "rank": range(1, len(t) + 1),
            "judge": t["judge"].to_numpy(),
            "kappa": t["kappa_graded"].to_numpy(),
            **{c: t[c].to_numpy() for c in COUNTS},
            "per-query tau oracles [CI]": [
                _interval(*v) for v in zip(t["query_tau_oracles"], t["query_tau_oracles_lo"], t["query_tau_oracles_hi"])
            ],
            "tau oracles (means)": [_point(v) for v in t["tau_oracles"]],
            "tau_AP oracles (means)": [_point(v) for v in t["tau_ap_oracles"]],
        }
    )


def markdown(r: Report) -> list[str]:
    """The section's Markdown blocks (none when the experiment has no oracle rankers or fewer than 3 judges)."""
    d = r.discrimination
    if not d:
        return []
    o = r.options
    parts = [
        f"\n## Discriminative power: which judges order the oracle rankers as they were constructed "
        f"(alpha {o.alpha}, against {o.reference})\n",
        "The oracle rankers are built in a known order (Perfect > Swap[3] > Swap[2] > Swap[1] > Swap[2,3] > Swap[1,2], "
        "docs/protocol.md#oracle-rankers). "
        "Per judge and constructed pair: `as_constructed` / `reversed`: an exact sign "
        "test over the queries where the judge's nDCG@10 of the two differ, Holm over the judge's pairs, "
        "significant in "
        "the constructed / the other direction; `undecided`: neither; `worse_than_humans`: pairs the judge separates "
        "less well than the humans do (a one-sided sign test of sign(human difference) - sign(judge difference) per "
        "query, Holm over the pairs). Judges ranked by `as_constructed`, then fewer `worse_than_humans`, then the "
        "per-query tau. Per-query tau: how often, query by query, the judge orders two oracles as the humans do, with "
        f"its {o.level:.0%} delta-method t interval over queries; tau and tau_AP of the means: points (no interval "
        "covers them, docs/protocol.md#calibration). kappa vs each statistic: Spearman's rho across judges with its "
        f"{o.level:.0%} interval (Fisher's z, Bonett-Wright s.e.; rough under {analysis.ROUGH_BELOW} judges) and an "
        "exact permutation test, Holm over the two.\n",
    ]
    for dataset, sentence in d.answers.items():
        sig, total = d.human.get(dataset, (0, 0))
        parts += [
            f"\n### {names.markdown(dataset)}\n",
            f"**{names.markdown(sentence)}** Humans order {sig} of {total} oracle pairs as constructed.\n",
            render.markdown(view(d, dataset), index=False, integers=["rank", *COUNTS]),
        ]
        c = d.correlations[d.correlations["dataset"] == dataset].assign(
            statistic=lambda f: f["statistic"].map(analysis.STATISTICS)
        )
        parts += [
            "\n",
            render.markdown(
                c.drop(columns="dataset").rename(columns={"statistic": "kappa vs"}), index=False, integers=["judges"]
            ),
        ]
    return parts


def csv_frames(r: Report) -> list[tuple[str, pd.DataFrame]]:
    d = r.discrimination
    return [("discrimination", d.table), ("discrimination_correlations", d.correlations)] if d else []


def figure(r: Report, out: Path) -> list[Path]:
    """Per dataset a panel: judges ranked top to bottom, tau with its interval (bars), kappa as a second marker,
    the count of pairs ordered as constructed written beside each judge."""
    d = r.discrimination
    if not d:
        return []
    from judgebench.compare.renderers.figure_style import plain_text, plt, save

    @plain_text
    def draw() -> Path:
        datasets = list(d.answers)
        height = max(3.0, 0.26 * d.table.groupby("dataset").size().max() + 1.6)
        fig, axes = plt.subplots(1, len(datasets), figsize=(8.0 * len(datasets), height), squeeze=False)
        for ax, dataset in zip(axes[0], datasets):
            t = d.table[d.table["dataset"] == dataset].reset_index(drop=True)
            y = list(range(len(t)))[::-1]
            lo = (t["query_tau_oracles"] - t["query_tau_oracles_lo"]).clip(lower=0).fillna(0)
            hi = (t["query_tau_oracles_hi"] - t["query_tau_oracles"]).clip(lower=0).fillna(0)
            ax.errorbar(
                t["query_tau_oracles"],
                y,
                xerr=[lo, hi],
                fmt="o",
                color="tab:blue",
                capsize=2,
                label="oracles-only per-query tau [CI]",
            )
            ax.scatter(t["kappa_graded"], y, marker="D", color="tab:orange", zorder=3, label="kappa (graded)")
            ax.set_yticks(y)
            ax.set_yticklabels(
                [
                    f"{names.plot(j)} ({int(a)})" if a == a else names.plot(j)
                    for j, a in zip(t["judge"], t["as_constructed"])
                ],
                fontsize=7,
            )
            ax.axvline(0, color="grey", linewidth=0.6)
            ax.set_xlim(-1.05, 1.05)
            sig, total = d.human.get(dataset, (0, 0))
            ax.set_title(
                f"{names.plot(dataset)}: judges ranked (pairs ordered as constructed, of {total})", fontsize="medium"
            )
            ax.legend(loc="lower left", fontsize=7)
            ax.grid(alpha=0.3, axis="x")
        return save(fig, out / FIGURE)

    return [draw()]


class Discrimination(Section):
    """Which judges order the oracle rankers as constructed (compare/analyses/discrimination.py)."""

    name = "discrimination"

    def compute(self, r: Report) -> dict:
        o = r.options
        return {
            "discrimination": analysis.analyse(
                r.per_query,
                r.table1,
                r.table2,
                r.refs,
                replace(Resampling.from_options(o), n_resamples=analysis.PERMUTATIONS),
                exclude=[v.name for v in r.virtual],
            )
        }

    def markdown(self, r: Report) -> list[str]:
        return markdown(r)

    def csv(self, r: Report) -> list[tuple[str, pd.DataFrame, bool]]:
        return [(n, f, False) for n, f in csv_frames(r)]

    def figures(self, r: Report, out: Path) -> list[Path]:
        return figure(r, out)

    def captions(self) -> dict[str, str]:
        return {FIGURE: CAPTION}

    def findings(self, r: Report) -> Iterable[Finding]:
        """Per dataset, how the judges order the oracle rankers against their construction order and whether label
        agreement predicts it, where the report holds that analysis (``r.discrimination``:
        compare/analyses/discrimination.py's answers, table and human pair counts; read by attribute, so this module
        needs no import of it)."""
        d = getattr(r, "discrimination", None)
        if not d:
            return
        for dataset, sentence in d.answers.items():
            t = d.table[d.table["dataset"] == dataset]
            sig, total = d.human.get(dataset, (0, 0))
            best = int(t["as_constructed"].max()) if len(t) else 0
            head = (
                f"humans order {sig} of {total} oracle pairs as constructed; "
                f"{int((t['as_constructed'] == best).sum())} of "
                f"{len(t)} judges order {best} (sign test per pair, Holm over the pairs). "
            )
            yield Finding("discrimination", head + sentence, dataset, brief=head + sentence.partition(": ")[0])
