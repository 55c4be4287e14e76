"""Figures a reader would rather look at than a table (PNG, Agg backend: no display needed): every figure file's
caption, and the figures of nDCG per system (bars or, past their readable size, a heatmap) and of content bias.

The human-vs-judge scatter and kappa-vs-tau are in compare/renderers/scatter_figures.py, the figures of the labels
themselves in compare/renderers/label_figures.py, the colours and the save they share in figure_style.py.

Every name drawn goes through names.plot, and every figure is drawn with mathtext off (``plain_text``): a
judge called ``cost $\\frac$ x`` is that text, not a formula matplotlib fails to parse.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.compare.base import names  # noqa: E402
from judgebench.compare.renderers import figure_style  # noqa: E402
from judgebench.compare.renderers.figure_style import (  # noqa: E402
    TYPE_COLOURS,
    TYPE_HATCHES,
    judge_colours,
    plain_text,
    plot_names,
)
from judgebench.metrics.agreement import LEVELS  # noqa: E402

CAPTIONS = {
    "figure_ndcg_bars.png": "nDCG@10 per system under each judge (t intervals over queries; hatching = system type)",
    "figure_ndcg_heatmap.png": "nDCG@10 per judge (rows) and system (columns), drawn instead of the bars "
    "past 10 judges or 120 bars (intervals: Table 6)",
    "figure_scatter.png": "human vs judge nDCG@10 per system (above the line: the judge overrates the system)",
    "figure_kappa_tau.png": "label agreement (kappa) vs system-ordering agreement (tau) per judge",
    "figure_content_bias.png": "judge labels on original vs rewritten text",
    "figure_agreement.png": "agreement with the human labels per judge",
    "figure_label_distribution.png": "label distribution per judge",
    "figure_confusion.png": "label confusion per judge",
}


@plain_text
def ndcg_bars(t1: dict[str, pd.DataFrame], path: Path, ci: pd.DataFrame | None = None, level: float = 0.95) -> Path:
    """The paper's Figure 3: grouped bars of nDCG@10 per system under each judge, with the t interval of
    each mean as an error bar (when computed); hatching and the tick colour give the system type; missing cells:
    no bar."""
    judges_all = list(dict.fromkeys(c for t in t1.values() for c in t.columns if c != "type"))
    if len(judges_all) > BAR_JUDGES or max(len(t) for t in t1.values()) * len(judges_all) > BARS:
        return ndcg_heatmap(t1, path.with_name(path.name.replace("_bars", "_heatmap")))  # its own name and caption
    colours = judge_colours(judges_all)
    fig, axes = plt.subplots(
        len(t1), 1, figsize=(max(8, 0.9 * max(len(t) for t in t1.values()) + 3), 3.8 * len(t1)), squeeze=False
    )
    for ax, (dataset, table) in zip(axes[:, 0], t1.items()):
        judges = [c for c in table.columns if c != "type"]
        x = np.arange(len(table))
        width = 0.8 / max(1, len(judges))
        hatches = [TYPE_HATCHES.get(t, "") for t in table["type"]]
        for i, judge in enumerate(judges):
            values = table[judge].astype(float)
            err = None
            if ci is not None and len(ci):
                c = ci[(ci["dataset"] == dataset) & (ci["judge"] == judge)].set_index("system").reindex(table.index)
                err = np.vstack([(values - c["lo"]).clip(lower=0), (c["hi"] - values).clip(lower=0)]).astype(float)
                err = np.nan_to_num(err)
            ax.bar(
                x + (i - (len(judges) - 1) / 2) * width,
                values.fillna(0),
                width,
                label=names.plot(judge),
                color=colours[judge],
                hatch=hatches,
                edgecolor="white",
                linewidth=0.3,
                yerr=err,
                error_kw={"elinewidth": 0.7, "capsize": 1.5, "ecolor": "black"},
            )
        ax.set_xticks(x, plot_names(table.index), rotation=30, ha="right")
        for tick, kind in zip(ax.get_xticklabels(), table["type"]):
            tick.set_color(TYPE_COLOURS.get(kind, "black"))
        ax.set_ylabel("nDCG@10 (judged only)")
        ax.set_ylim(0, 1.05)
        interval = f", {level:.0%} t intervals" if ci is not None and len(ci) else ""
        kinds = ", ".join(f"{k} {TYPE_HATCHES.get(k) or 'plain'}" for k in dict.fromkeys(table["type"]))
        ax.set_title(
            f"{names.plot(dataset)}: nDCG@10 per system and judge{interval}\nhatch = system type: {kinds}",
            fontsize="medium",
        )
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: bars reach the top
        ax.grid(axis="y", alpha=0.3)
    return figure_style.save(fig, path)


BAR_JUDGES, BARS = 10, 120  # past either, bars are slivers and the legend a column of colours: a heatmap instead


@plain_text
def ndcg_heatmap(t1: dict[str, pd.DataFrame], path: Path) -> Path:
    """nDCG@10 as a judge x system heatmap, a panel per dataset, sized from the counts (a fixed size per cell, so
    35 x 35 is as readable as 5 x 8); each system's tick coloured by its type, values printed in the cells when they
    fit (up to 20 systems)."""
    shape = [(len([c for c in t.columns if c != "type"]), len(t)) for t in t1.values()]
    width = max(6.4, 2.6 + 0.32 * max(s for _, s in shape))  # at least the title's width
    heights = [1.6 + 0.26 * j for j, _ in shape]
    fig, axes = plt.subplots(
        len(t1), 1, figsize=(width, sum(heights) + 1.4 * len(t1)), squeeze=False, gridspec_kw={"height_ratios": heights}
    )
    for ax, (dataset, table) in zip(axes[:, 0], t1.items()):
        judges = [c for c in table.columns if c != "type"]
        grid = table[judges].astype(float).T
        image = ax.imshow(grid.to_numpy(), cmap="viridis", vmin=0, vmax=1, aspect="auto", interpolation="nearest")
        ax.set_xticks(np.arange(len(table)), plot_names(table.index), rotation=90, fontsize=7)
        ax.set_yticks(np.arange(len(judges)), plot_names(judges), fontsize=7)
        for tick, kind in zip(ax.get_xticklabels(), table["type"]):
            tick.set_color(TYPE_COLOURS.get(kind, "black"))
        if len(table) <= 20:
            for (i, j), v in np.ndenumerate(grid.to_numpy()):
                if v == v:
                    ax.text(
                        j, i, f"{v:.2f}", ha="center", va="center", fontsize=5.5, color="white" if v < 0.6 else "black"
                    )
        kinds = ", ".join(
            f"{k} {TYPE_COLOURS.get(k, 'black').removeprefix('tab:')}" for k in dict.fromkeys(table["type"])
        )
        ax.set_title(
            f"{names.plot(dataset)}: nDCG@10 per judge (rows) and system (columns)\nsystem names coloured by type: "
            f"{kinds}; blank: missing",
            fontsize="small",
        )
        fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02, label="nDCG@10")
    return figure_style.save(fig, path)


@plain_text
def content_bias(dist: pd.DataFrame, path: Path) -> Path:
    """Per human level, the judge's label distribution on original vs rewritten text, with the
    uniform share (1/4) for reference; rows are (dataset, judge, view)."""
    groups = list(dist.groupby(["dataset", "judge", "view"], sort=False))
    fig, axes = plt.subplots(
        len(groups), len(LEVELS), figsize=(3.2 * len(LEVELS), 2.8 * len(groups)), squeeze=False, sharey=True
    )
    x = np.arange(len(LEVELS))
    for row, ((dataset, judge, view), g) in zip(axes, groups):
        for ax, human in zip(row, LEVELS):
            h = g[g["human"] == human].set_index("label")[["original", "rewritten"]].reindex(list(LEVELS)).fillna(0)
            ax.bar(x - 0.2, h["original"], 0.4, label="original")
            ax.bar(x + 0.2, h["rewritten"], 0.4, label=names.plot(view))
            ax.axhline(1 / len(LEVELS), color="black", lw=0.8, ls="--", label="uniform")
            ax.set_xticks(x, LEVELS)
            ax.set_ylim(0, 1)
            ax.set_title(f"{names.plot(dataset)} / {names.plot(judge)}: human={human}", fontsize="small")
            ax.set_xlabel("judge label")
        row[0].set_ylabel("share of pairs")
        row[0].legend(fontsize="x-small")
    return figure_style.save(fig, path)
