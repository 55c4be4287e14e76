"""The discrimination section of a compare report (compare/analyses/discrimination.py computes it): a Markdown table of the
judges ranked by discriminative power beside kappa, the rank correlations, the one-sentence answer, a CSV, and a
figure (judges ranked, oracles-only tau with its interval beside kappa). report.html renders the Markdown."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from judgebench.compare import names
from judgebench.compare.renderers import render
from judgebench.compare.analyses.discrimination import STATISTICS, Discrimination

if TYPE_CHECKING:
    from judgebench.compare.report_model import Report

FIGURE = "figure_discrimination.png"
CAPTION = "judges ranked by discriminative power: oracle pairs agreed with humans, oracles-only tau with its interval, kappa"
COUNTS = ["human_significant", "agree", "missed", "spurious", "reversed"]


def _interval(value: float, lo: float, hi: float) -> str:
    if value != value:
        return render.MISSING
    return f"{value:.3f} [{lo:.2f}, {hi:.2f}]" if lo == lo else f"{value:.3f}"


def view(d: Discrimination, dataset: str) -> pd.DataFrame:
    """One row per judge, ranked, with tau and tau_AP written "value [lo, hi]"."""
    t = d.table[d.table["dataset"] == dataset]
    return pd.DataFrame({
        "rank": range(1, len(t) + 1),
        "judge": t["judge"].to_numpy(),
        "kappa": t["kappa_graded"].to_numpy(),
        **{c: t[c].to_numpy() for c in COUNTS},
        "tau oracles [CI]": [_interval(*v) for v in zip(t["tau_oracles"], t["tau_oracles_lo"], t["tau_oracles_hi"])],
        "tau_AP oracles [CI]": [_interval(*v) for v in zip(t["tau_ap_oracles"], t["tau_ap_oracles_lo"], t["tau_ap_oracles_hi"])],
    })


def markdown(r: Report) -> list[str]:
    """The section's Markdown blocks (none when the experiment has no oracle rankers or fewer than 3 judges)."""
    d = r.discrimination
    if not d:
        return []
    o = r.options
    parts = [f"\n## Discriminative power: which judges separate the oracle rankers humans separate "
             f"(alpha {o.alpha}, correction {o.correction}, against {o.reference})\n",
             "Judges ranked by `agree` (oracle pairs humans separate significantly that the judge also separates, in the same "
             "direction), then by oracles-only Kendall's tau; `missed`: human-significant pairs the judge does not separate; "
             "`reversed`: separated the other way; `spurious`: pairs the judge separates and humans do not. Intervals: "
             f"percentile bootstrap over queries ({o.bootstrap} resamples). Rank correlations: Spearman across judges, "
             "percentile bootstrap over judges; flagged unreliable when most judges tie.\n"]
    for dataset, sentence in d.answers.items():
        sig, total = d.human.get(dataset, (0, 0))
        parts += [f"\n### {names.markdown(dataset)}\n", f"**{names.markdown(sentence)}** Humans separate {sig} of {total} "
                  "oracle pairs.\n", render.markdown(view(d, dataset), index=False, integers=["rank", *COUNTS])]
        c = d.correlations[d.correlations["dataset"] == dataset].assign(statistic=lambda f: f["statistic"].map(STATISTICS))
        parts += ["\n", render.markdown(c.drop(columns="dataset").rename(columns={"statistic": "kappa vs"}), index=False,
                                        integers=["judges"])]
    return parts


def csv_frames(r: Report) -> list[tuple[str, pd.DataFrame]]:
    d = r.discrimination
    return [("discrimination", d.table), ("discrimination_correlations", d.correlations)] if d else []


def figure(r: Report, out: Path) -> list[Path]:
    """Per dataset a panel: judges ranked top to bottom, tau with its interval (bars), kappa as a second marker,
    the count of pairs agreed written beside each judge."""
    d = r.discrimination
    if not d:
        return []
    from judgebench.compare.renderers.figures import _save, plain_text, plt

    @plain_text
    def draw() -> Path:
        datasets = list(d.answers)
        height = max(3.0, 0.26 * d.table.groupby("dataset").size().max() + 1.6)
        fig, axes = plt.subplots(1, len(datasets), figsize=(8.0 * len(datasets), height), squeeze=False)
        for ax, dataset in zip(axes[0], datasets):
            t = d.table[d.table["dataset"] == dataset].reset_index(drop=True)
            y = list(range(len(t)))[::-1]
            lo = (t["tau_oracles"] - t["tau_oracles_lo"]).clip(lower=0).fillna(0)
            hi = (t["tau_oracles_hi"] - t["tau_oracles"]).clip(lower=0).fillna(0)
            ax.errorbar(t["tau_oracles"], y, xerr=[lo, hi], fmt="o", color="tab:blue", capsize=2, label="oracles-only tau [CI]")
            ax.scatter(t["kappa_graded"], y, marker="D", color="tab:orange", zorder=3, label="kappa (graded)")
            ax.set_yticks(y)
            ax.set_yticklabels([f"{names.plot(j)} ({int(a)})" if a == a else names.plot(j) for j, a in zip(t["judge"], t["agree"])],
                               fontsize=7)
            ax.axvline(0, color="grey", linewidth=0.6)
            ax.set_xlim(-1.05, 1.05)
            sig, total = d.human.get(dataset, (0, 0))
            ax.set_title(f"{names.plot(dataset)}: judges ranked (pairs agreed of {sig} human-significant)", fontsize="medium")
            ax.legend(loc="lower left", fontsize=7)
            ax.grid(alpha=0.3, axis="x")
        return _save(fig, out / FIGURE)

    return [draw()]
