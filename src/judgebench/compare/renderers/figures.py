"""Figures a reader would rather look at than a table (PNG, Agg backend: no display needed).

Every name drawn goes through names.plot, and every figure is drawn with mathtext off (``plain_text``): a
judge called ``cost $\\frac$ x`` is that text, not a formula matplotlib fails to parse.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.compare.base import names
from judgebench.compare.base.artifacts import REFERENCES  # noqa: E402
from judgebench.compare.base.reference import References  # noqa: E402
from judgebench.compare.renderers import fonts, label_layout
from judgebench.metrics.agreement import LEVELS  # noqa: E402

# The same thing has the same colour (and marker, hatch) in every figure: system types by TYPE_*, judges by
# judge_colours() (references in greys, then a fixed palette in report order).
TYPE_COLOURS = {"oracle": "tab:blue", "llm": "tab:red", "lexical": "tab:green", "external": "tab:purple"}
TYPE_MARKERS = {"oracle": "o", "llm": "^", "lexical": "s", "external": "D"}
TYPE_HATCHES = {"oracle": "", "llm": "//", "lexical": "..", "external": "xx"}
REFERENCE_COLOURS = {"human": "#4d4d4d", "human_labelset": "#9a9a9a"}
JUDGE_PALETTE = [
    "tab:orange",
    "tab:cyan",
    "tab:pink",
    "tab:olive",
    "tab:brown",
    "tab:purple",
    "gold",
    "teal",
    "navy",
    "crimson",
]
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


def judge_colours(judges: list[str]) -> dict[str, str]:
    """A colour per judge: the references grey, the others in order from a fixed palette (stable across figures)."""
    others = [j for j in dict.fromkeys(judges) if j not in REFERENCE_COLOURS]
    return {**REFERENCE_COLOURS, **{j: JUDGE_PALETTE[i % len(JUDGE_PALETTE)] for i, j in enumerate(others)}}


def plain_text(draw):
    """Decorates a figure function: every text it creates is drawn as written (``$`` is no mathtext delimiter)."""

    @functools.wraps(draw)
    def wrapper(*args, **kwargs):
        with plt.rc_context(
            {"text.parse_math": False, **fonts.fallback()}
        ):  # names in any script (compare/renderers/fonts.py)
            return draw(*args, **kwargs)

    return wrapper


def _names(values) -> list[str]:
    return [names.plot(v) for v in values]


SCATTER_COLUMNS = 6  # panels per row of the human-vs-judge scatter


def _save(fig, path: Path) -> Path:
    """Lay the figure out and write it with every drawn artist inside the image: ``bbox_inches="tight"`` grows or
    crops the canvas to what is drawn, so a legend placed outside the axes, a long title or tick label is never
    clipped. Matplotlib's "Tight layout not applied" (panels too small for their labels) is no user's business:
    the tight bounding box still keeps everything in the picture."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied")
        fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.1)
    plt.close(fig)
    return path


def _type_legend(ax, types: list[str], loc: str = "lower right") -> None:
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], ls="", marker=TYPE_MARKERS.get(t, "o"), color=TYPE_COLOURS.get(t, "tab:gray"), label=t)
        for t in types
    ]
    ax.legend(handles=handles, fontsize="x-small", loc=loc, title="system type", title_fontsize="x-small")


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
        ax.set_xticks(x, _names(table.index), rotation=30, ha="right")
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
    return _save(fig, path)


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
        ax.set_xticks(np.arange(len(table)), _names(table.index), rotation=90, fontsize=7)
        ax.set_yticks(np.arange(len(judges)), _names(judges), fontsize=7)
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
    return _save(fig, path)


def _counts(lab: pd.DataFrame) -> pd.DataFrame:
    return pd.crosstab(lab["human"], lab["relevance"]).reindex(index=list(LEVELS), columns=list(LEVELS), fill_value=0)


@plain_text
def confusion(labels: pd.DataFrame, judge: str, path: Path) -> Path:
    """Human level x judge level for one judge, one panel per dataset: the colour is the row share (each human
    level sums to 1, colour bar beside), the text the count and the share."""
    datasets = list(dict.fromkeys(labels["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.6 * len(datasets), 3.8), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        lab = labels[labels["dataset"] == dataset]
        counts = _counts(lab)
        share = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).fillna(0).to_numpy()
        image = ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
        for (i, j), v in np.ndenumerate(share):
            ax.text(
                j,
                i,
                f"{counts.to_numpy()[i, j]}\n{v:.2f}",
                ha="center",
                va="center",
                color="white" if v > 0.6 else "black",
                fontsize=8,
            )
        ax.set_xticks(range(len(LEVELS)), LEVELS)
        ax.set_yticks(range(len(LEVELS)), LEVELS)
        ax.set_xlabel(f"{names.plot(judge)} label")
        ax.set_ylabel("human label")
        ax.set_title(f"{names.plot(dataset)} (n={len(lab)})")
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="share of the human level")
    fig.suptitle(f"Label confusion (count, row share):\n{names.plot(judge)}")  # a long judge name on a line of its own
    return _save(fig, path)


def _title_stats(t2: pd.DataFrame | None, dataset: str, judge: str) -> str:
    if t2 is None or not len(t2):
        return ""
    row = t2[(t2["dataset"] == dataset) & (t2["judge"] == judge)]
    if row.empty:
        return ""
    fmt = lambda v: "n/a" if v != v else f"{v:.2f}"  # noqa: E731
    return f"\nτ={fmt(float(row['tau_all'].iloc[0]))}  κ={fmt(float(row['kappa_graded'].iloc[0]))}"


SCATTER_LABELS = 8  # point labels a panel holds readably; past it the extremes that find room (the panel title says so)


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
        {"x": xs.to_numpy(dtype=float), "y": ys.to_numpy(dtype=float), "name": _names(systems)}
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
            _type_legend(ax, list(dict.fromkeys(table["type"])))
            ax.grid(alpha=0.3)
    fig.tight_layout()  # labels are placed in the final layout's coordinates
    for args in labels:
        _label_points(*args)
    return _save(fig, path)


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
    return _save(fig, path)


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
        points.append((ax, [(at[kappa][i], at[tau][i], _group_label(_names(at["judges"][i]))) for i in keep]))
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
    return _save(fig, path)


KAPPA_TAU_LABELS = 10


AGREEMENT_MARKERS = {"kappa_graded": "o", "kappa_ge1": "<", "kappa_ge2": "s", "kappa_ge3": ">", "alpha_ordinal": "D"}


@plain_text
def agreement_dots(table: pd.DataFrame, path: Path) -> Path:
    """Per judge (rows, best kappa on top), kappa on the 4 levels, at each binary cut and alpha ordinal:
    many judges on one page, and whether a judge is good at one cut only. A panel per dataset."""
    datasets = list(dict.fromkeys(table["dataset"]))
    height = max(3.0, 0.28 * table.groupby("dataset").size().max() + 1.4)
    fig, axes = plt.subplots(1, len(datasets), figsize=(7.5 * len(datasets), height), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        d = table[table["dataset"] == dataset].sort_values("kappa_graded", na_position="first")
        y = np.arange(len(d))
        for name, marker in AGREEMENT_MARKERS.items():
            ax.scatter(d[name], y, marker=marker, s=22, label=name)
        ax.set_yticks(y, _names(d["judge"]), fontsize=8)
        ax.set_xlabel("agreement with the human labels")
        ax.set_title(f"{names.plot(dataset)}: {len(d)} judges", fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize="x-small", loc="lower right")
    return _save(fig, path)


@plain_text
def label_shares(table: pd.DataFrame, path: Path) -> Path:
    """Stacked label distribution per judge, the humans' first: lenient and strict judges at a glance."""
    datasets = list(dict.fromkeys(table["dataset"]))
    height = max(3.0, 0.28 * (table.groupby("dataset").size().max() + 1) + 1.4)
    fig, axes = plt.subplots(1, len(datasets), figsize=(7.5 * len(datasets), height), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        d = table[table["dataset"] == dataset]
        rows = ["human", *_names(d["judge"])]
        shares = np.vstack(
            [
                d[[f"human_share_{k}" for k in LEVELS]].iloc[:1].to_numpy(),
                d[[f"judge_share_{k}" for k in LEVELS]].to_numpy(),
            ]
        ).astype(float)
        y = np.arange(len(rows))[::-1]
        left = np.zeros(len(rows))
        for k in LEVELS:
            ax.barh(y, np.nan_to_num(shares[:, k]), left=left, label=f"label {k}", color=plt.cm.Blues(0.25 + 0.25 * k))
            left += np.nan_to_num(shares[:, k])
        ax.set_yticks(y, rows, fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the pairs")
        ax.set_title(f"{names.plot(dataset)}: label distribution", fontsize="medium")
        ax.legend(fontsize="x-small", loc="lower right", ncols=4)
    return _save(fig, path)


@plain_text
def confusion_grid(labels: pd.DataFrame, path: Path, columns: int = 6) -> Path:
    """Human level x judge level for every (dataset, judge), rows normalised to 1, as small multiples:
    one file for the many judges of a labels-only experiment."""
    groups = list(labels.groupby(["dataset", "judge"], sort=False))
    cols = min(columns, max(1, len(groups)))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.3 * cols, 2.4 * rows), squeeze=False)
    for ax in axes.flat[len(groups) :]:
        ax.axis("off")
    for ax, ((dataset, judge), lab) in zip(axes.flat, groups):
        counts = _counts(lab)
        share = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).fillna(0).to_numpy()
        image = ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
        for (i, j), v in np.ndenumerate(counts.to_numpy()):
            ax.text(j, i, str(v), ha="center", va="center", color="white" if share[i, j] > 0.6 else "black", fontsize=6)
        ax.set_xticks(range(len(LEVELS)), LEVELS, fontsize=7)
        ax.set_yticks(range(len(LEVELS)), LEVELS, fontsize=7)
        ax.set_title(
            names.plot(judge) if labels["dataset"].nunique() == 1 else f"{names.plot(dataset)}: {names.plot(judge)}",
            fontsize=7,
        )
    fig.supxlabel("judge label", fontsize=9)
    fig.supylabel("human label", fontsize=9)
    fig.suptitle("Label confusion per judge: counts, colour = row share", fontsize=10)
    fig.tight_layout()
    if groups:
        fig.colorbar(image, ax=axes.ravel().tolist(), fraction=0.02, pad=0.02, label="share of the human level")
    fig.savefig(path, dpi=120, bbox_inches="tight", pad_inches=0.1)  # titles and the colour bar inside the image
    plt.close(fig)
    return path
