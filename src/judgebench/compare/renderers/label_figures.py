"""The figures of the judges' labels against the humans': confusion matrices (per judge, or every judge of a
labels-only experiment as small multiples), agreement per judge at each binary cut, and each judge's label shares.

They need labels only, no systems: the labels-only report draws them all, the grid report its per-judge confusion.
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
from judgebench.compare.renderers.figure_style import plain_text, plot_names  # noqa: E402
from judgebench.metrics.agreement import LEVELS  # noqa: E402

AGREEMENT_MARKERS = {"kappa_graded": "o", "kappa_ge1": "<", "kappa_ge2": "s", "kappa_ge3": ">", "alpha_ordinal": "D"}


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
    return figure_style.save(fig, path)


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
        ax.set_yticks(y, plot_names(d["judge"]), fontsize=8)
        ax.set_xlabel("agreement with the human labels")
        ax.set_title(f"{names.plot(dataset)}: {len(d)} judges", fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize="x-small", loc="lower right")
    return figure_style.save(fig, path)


@plain_text
def label_shares(table: pd.DataFrame, path: Path) -> Path:
    """Stacked label distribution per judge, the humans' first: lenient and strict judges at a glance."""
    datasets = list(dict.fromkeys(table["dataset"]))
    height = max(3.0, 0.28 * (table.groupby("dataset").size().max() + 1) + 1.4)
    fig, axes = plt.subplots(1, len(datasets), figsize=(7.5 * len(datasets), height), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        d = table[table["dataset"] == dataset]
        rows = ["human", *plot_names(d["judge"])]
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
    return figure_style.save(fig, path)


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
