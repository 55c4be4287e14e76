"""The figures of one labelled point per system or per judge: human vs judge nDCG@10 per system (the scatter) and
label agreement vs system-ordering agreement per judge (kappa vs tau).

Their point labels are what makes them hard: placed where they overlap no other label or marker
(compare/renderers/label_layout.py), points at one place sharing one label, and past a readable number only the
extremes labelled, which the panel's title then says.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.compare.base import names  # noqa: E402
from judgebench.compare.base.artifacts import REFERENCES  # noqa: E402
from judgebench.compare.base.reference import References  # noqa: E402
from judgebench.compare.renderers import figure_style, label_layout  # noqa: E402
from judgebench.compare.renderers.figure_style import (  # noqa: E402
    TYPE_COLOURS,
    TYPE_MARKERS,
    judge_colours,
    plain_text,
    plot_names,
    type_legend,
)

SCATTER_COLUMNS = 6  # panels per row of the human-vs-judge scatter
SCATTER_LABELS = 8  # point labels a panel holds readably; past it the extremes that find room (the panel title says so)
KAPPA_TAU_LABELS = 10  # point labels a kappa-vs-tau panel holds readably


def _title_stats(t2: pd.DataFrame | None, dataset: str, judge: str) -> str:
    if t2 is None or not len(t2):
        return ""
    row = t2[(t2["dataset"] == dataset) & (t2["judge"] == judge)]
    if row.empty:
        return ""
    fmt = lambda v: "n/a" if v != v else f"{v:.2f}"  # noqa: E731
    return f"\nτ={fmt(float(row['tau_all'].iloc[0]))}  κ={fmt(float(row['kappa_graded'].iloc[0]))}"


def _extremes(score: pd.Series, limit: int) -> list:
    """The index of every entry when there are at most ``limit``, else of the limit/2 highest and limit/2 lowest
    ``score``: a crowded panel labels its extremes, never 35 labels over each other."""
    if len(score) <= limit:
        return list(score.index)
    ranked = score.sort_values(kind="stable")
    return list(ranked.index[-(limit // 2) :]) + list(ranked.index[: limit - limit // 2])


def _group_label(names_: list[str]) -> str:
    """One label for the points at one place: both names, or the first and how many more."""
    return ", ".join(names_) if len(names_) <= 2 else f"{names_[0]} +{len(names_) - 1}"


def _label_points(ax, xs: pd.Series, ys: pd.Series, systems: pd.Index) -> None:
    """Labels placed where they overlap no other label, marker or the legend (label_layout); points within 0.005 of
    each other share one label ("A, B"); past SCATTER_LABELS places only the most over- and underrated are labelled."""
    frame = pd.DataFrame(
        {"x": xs.to_numpy(dtype=float), "y": ys.to_numpy(dtype=float), "name": plot_names(systems)}
    ).dropna()
    groups = [g for _, g in frame.groupby([(frame["x"] / 0.005).round(), (frame["y"] / 0.005).round()], sort=False)]
    keep = _extremes(pd.Series([g["y"].mean() - g["x"].mean() for g in groups]), SCATTER_LABELS)
    groups = [groups[i] for i in keep]
    label_layout.place(
        ax,
        [g["x"].mean() for g in groups],
        [g["y"].mean() for g in groups],
        [_group_label(list(g["name"])) for g in groups],
        crowded="skip" if len(keep) < len(frame) else "draw",
    )


@plain_text
def scatter(t1: dict[str, pd.DataFrame], path: Path, refs: References, t2: pd.DataFrame | None = None) -> Path:
    """Human (each judge's reference, ``refs``) vs judge nDCG@10 per system, one marker and colour per system
    type, each point labelled with its system, y = x drawn: points above the line are systems the judge
    overrates. The panel title gives the judge's τ (all systems, against its reference) and graded κ when
    ``t2`` has them."""
    judges = list(dict.fromkeys(c for t in t1.values() for c in t.columns if c not in ("type", *REFERENCES)))
    cols = max(
        1, min(len(judges), SCATTER_COLUMNS)
    )  # small multiples that wrap: 35 judges are 6 rows of 6, not a strip
    per_dataset = -(-max(1, len(judges)) // cols)
    fig, grid = plt.subplots(
        per_dataset * len(t1), cols, figsize=(4.0 * cols, 4.0 * per_dataset * len(t1)), squeeze=False
    )
    for n, ax in enumerate(grid.flat):
        ax.set_visible(n % (per_dataset * cols) < max(1, len(judges)))
    axes = [grid.flat[d * per_dataset * cols : d * per_dataset * cols + max(1, len(judges))] for d in range(len(t1))]
    labels = []
    for row, (dataset, table) in zip(axes, t1.items()):
        for ax, judge in zip(row, judges):
            if judge in table:
                human = refs.column(dataset, judge, table.index)
                for kind, g in table.groupby("type", sort=False):
                    ax.scatter(
                        human[g.index],
                        g[judge],
                        color=TYPE_COLOURS.get(kind, "tab:gray"),
                        marker=TYPE_MARKERS.get(kind, "o"),
                        s=30,
                    )
                labels.append((ax, human, table[judge], table.index))
            ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls="--")
            ax.set_xlim(0, 1.02)
            ax.set_ylim(0, 1.02)
            ax.set_xlabel(f"nDCG@10 under humans ({refs.reference})")
            ax.set_ylabel(f"nDCG@10 under {names.plot(judge)}")
            subset = (
                f"\nlabels: {SCATTER_LABELS // 2} most over-, {SCATTER_LABELS // 2} most underrated"
                if len(table) > SCATTER_LABELS
                else ""
            )
            ax.set_title(
                f"{names.plot(dataset)}: {names.plot(judge)}{_title_stats(t2, dataset, judge)}{subset}",
                fontsize="medium",
            )
            type_legend(ax, list(dict.fromkeys(table["type"])))
            ax.grid(alpha=0.3)
    fig.tight_layout()  # labels are placed in the final layout's coordinates
    for args in labels:
        _label_points(*args)
    return figure_style.save(fig, path)


@plain_text
def kappa_tau(t2: pd.DataFrame, path: Path, kappa: str = "kappa_graded", tau: str = "tau_all") -> Path:
    """Label agreement against system-ordering agreement, one labelled point per judge and a panel per
    dataset (the LLMJudge overview's Figure 2 for any experiment): a judge can order systems well with
    labels that agree poorly, and the reverse. Judges without both numbers are left out."""
    datasets = list(dict.fromkeys(t2["dataset"]))
    fig, axes = plt.subplots(1, max(1, len(datasets)), figsize=(5.2 * max(1, len(datasets)), 4.4), squeeze=False)
    points = []
    for ax, dataset in zip(axes[0], datasets):
        d = t2[(t2["dataset"] == dataset) & t2[kappa].notna() & t2[tau].notna()]
        colours = judge_colours(list(t2["judge"]))
        # ties drawn as one marker whose area counts the judges there (35 judges often share a tau)
        at = (
            d.groupby([d[kappa].round(4), d[tau].round(4)], sort=False)["judge"]
            .agg(list)
            .rename("judges")
            .reset_index()
        )
        count = at["judges"].str.len().to_numpy()
        ax.scatter(
            at[kappa],
            at[tau],
            s=34 * count,
            color=[colours[j[0]] if len(j) == 1 else "white" for j in at["judges"]],
            edgecolor="black",
            linewidth=0.4,
        )
        keep = _extremes(at[tau] + 1e-6 * at[kappa], KAPPA_TAU_LABELS)
        points.append((ax, [(at[kappa][i], at[tau][i], _group_label(plot_names(at["judges"][i]))) for i in keep]))
        shared = int((count > 1).sum())
        notes = ([f"{shared} point{'s' if shared > 1 else ''} shared (area = judges)"] if shared else []) + (
            [f"{len(keep)} of {len(at)} labelled"] if len(keep) < len(at) else []
        )
        ax.set_xlim(min(0.0, float(d[kappa].min()) - 0.05) if len(d) else 0.0, 1.0)
        ax.set_ylim(min(0.0, float(d[tau].min()) - 0.05) if len(d) else 0.0, 1.05)
        ax.set_xlabel(f"Cohen's kappa ({kappa})")
        ax.set_ylabel(f"Kendall's tau ({tau})")
        ax.set_title(
            f"{names.plot(dataset)}: labels vs system ordering ({len(d)} judges)"
            + ("\n" + "; ".join(notes) if notes else ""),
            fontsize="medium",
        )
        ax.grid(alpha=0.3)
    fig.tight_layout()  # labels are placed in the final layout's coordinates
    for ax, p in points:
        label_layout.place(ax, [x for x, _, _ in p], [y for _, y, _ in p], [t for _, _, t in p], fontsize=8)
    return figure_style.save(fig, path)
