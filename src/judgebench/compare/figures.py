"""Figures a reader would rather look at than a table (PNG, Agg backend: no display needed)."""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.compare.artifacts import HUMAN_LABELSET, REFERENCES  # noqa: E402
from judgebench.metrics.agreement import LEVELS  # noqa: E402

TYPE_COLOURS = {"oracle": "tab:blue", "llm": "tab:red", "lexical": "tab:green", "external": "tab:purple"}


def slug(name: str) -> str:
    """A judge name as a safe file-name part."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "judge"


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def ndcg_bars(t1: dict[str, pd.DataFrame], path: Path) -> Path:
    """The paper's Figure 3: grouped bars of nDCG@10 per system under each judge (missing cells: no bar)."""
    fig, axes = plt.subplots(len(t1), 1, figsize=(max(8, 0.9 * max(len(t) for t in t1.values()) + 3), 3.6 * len(t1)), squeeze=False)
    for ax, (dataset, table) in zip(axes[:, 0], t1.items()):
        judges = [c for c in table.columns if c != "type"]
        x = np.arange(len(table))
        width = 0.8 / max(1, len(judges))
        for i, judge in enumerate(judges):
            ax.bar(x + (i - (len(judges) - 1) / 2) * width, table[judge].astype(float).fillna(0), width, label=judge)
        ax.set_xticks(x, table.index, rotation=30, ha="right")
        ax.set_ylabel("nDCG@10 (judged only)")
        ax.set_ylim(0, 1)
        ax.set_title(f"{dataset}: systems under each judge")
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))  # outside: bars reach the top
        ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def confusion(labels: pd.DataFrame, judge: str, path: Path) -> Path:
    """Human level x judge level for one judge, one panel per dataset, each row normalised to 1."""
    datasets = list(dict.fromkeys(labels["dataset"]))
    fig, axes = plt.subplots(1, len(datasets), figsize=(3.8 * len(datasets), 3.6), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        lab = labels[labels["dataset"] == dataset]
        counts = pd.crosstab(lab["human"], lab["relevance"]).reindex(index=list(LEVELS), columns=list(LEVELS), fill_value=0)
        share = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).fillna(0).to_numpy()
        ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
        for (i, j), v in np.ndenumerate(share):
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", color="white" if v > 0.6 else "black", fontsize=9)
        ax.set_xticks(range(len(LEVELS)), LEVELS)
        ax.set_yticks(range(len(LEVELS)), LEVELS)
        ax.set_xlabel(f"{judge} label")
        ax.set_ylabel("human label")
        ax.set_title(f"{dataset} (n={len(lab)})")
    fig.suptitle(f"Label confusion, rows normalised: {judge}")
    return _save(fig, path)


def scatter(t1: dict[str, pd.DataFrame], path: Path, reference: str = HUMAN_LABELSET) -> Path:
    """Human (``reference``) vs judge nDCG@10 per system, coloured by system type, with y = x: points above
    the line are systems the judge overrates."""
    judges = list(dict.fromkeys(c for t in t1.values() for c in t.columns if c not in ("type", *REFERENCES)))
    fig, axes = plt.subplots(len(t1), max(1, len(judges)), figsize=(3.6 * max(1, len(judges)), 3.6 * len(t1)), squeeze=False)
    for row, (dataset, table) in zip(axes, t1.items()):
        for ax, judge in zip(row, judges):
            for kind, g in table.groupby("type", sort=False):
                if judge in g:
                    ax.scatter(g[reference], g[judge], label=kind, color=TYPE_COLOURS.get(kind, "tab:gray"), s=28)
            ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls="--")
            ax.set_xlim(0, 1)
            ax.set_ylim(0, 1)
            ax.set_xlabel(f"nDCG@10 under humans ({reference})")
            ax.set_ylabel(f"nDCG@10 under {judge}")
            ax.set_title(f"{dataset}: {judge}", fontsize="medium")
            ax.legend(fontsize="x-small", loc="lower right")
            ax.grid(alpha=0.3)
    return _save(fig, path)


def content_bias(dist: pd.DataFrame, path: Path) -> Path:
    """Per human level, the judge's label distribution on original vs rewritten text, with the
    uniform share (1/4) for reference; rows are (dataset, judge, view)."""
    groups = list(dist.groupby(["dataset", "judge", "view"], sort=False))
    fig, axes = plt.subplots(len(groups), len(LEVELS), figsize=(3.2 * len(LEVELS), 2.8 * len(groups)), squeeze=False, sharey=True)
    x = np.arange(len(LEVELS))
    for row, ((dataset, judge, view), g) in zip(axes, groups):
        for ax, human in zip(row, LEVELS):
            h = g[g["human"] == human].set_index("label")[["original", "rewritten"]].reindex(list(LEVELS)).fillna(0)
            ax.bar(x - 0.2, h["original"], 0.4, label="original")
            ax.bar(x + 0.2, h["rewritten"], 0.4, label=view)
            ax.axhline(1 / len(LEVELS), color="black", lw=0.8, ls="--", label="uniform")
            ax.set_xticks(x, LEVELS)
            ax.set_ylim(0, 1)
            ax.set_title(f"{dataset} / {judge}: human={human}", fontsize="small")
            ax.set_xlabel("judge label")
        row[0].set_ylabel("share of pairs")
        row[0].legend(fontsize="x-small")
    return _save(fig, path)


def kappa_tau(t2: pd.DataFrame, path: Path, kappa: str = "kappa_graded", tau: str = "tau_all") -> Path:
    """Label agreement against system-ordering agreement, one labelled point per judge and a panel per
    dataset (the LLMJudge overview's Figure 2 for any experiment): a judge can order systems well with
    labels that agree poorly, and the reverse. Judges without both numbers are left out."""
    datasets = list(dict.fromkeys(t2["dataset"]))
    fig, axes = plt.subplots(1, max(1, len(datasets)), figsize=(5.2 * max(1, len(datasets)), 4.4), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        d = t2[(t2["dataset"] == dataset) & t2[kappa].notna() & t2[tau].notna()]
        ax.scatter(d[kappa], d[tau], s=30, color="tab:blue")
        for (x, y), g in d.groupby([d[kappa].round(4), d[tau].round(4)], sort=False):  # one label per point
            ax.annotate(", ".join(map(str, g["judge"])), (x, y), xytext=(4, 3), textcoords="offset points", fontsize=8)
        ax.set_xlim(min(0.0, float(d[kappa].min()) - 0.05) if len(d) else 0.0, 1.0)
        ax.set_ylim(min(0.0, float(d[tau].min()) - 0.05) if len(d) else 0.0, 1.05)
        ax.set_xlabel(f"Cohen's kappa ({kappa})")
        ax.set_ylabel(f"Kendall's tau ({tau})")
        ax.set_title(f"{dataset}: labels vs system ordering ({len(d)} judges)", fontsize="medium")
        ax.grid(alpha=0.3)
    return _save(fig, path)


AGREEMENT_MARKERS = {"kappa_graded": "o", "kappa_ge1": "<", "kappa_ge2": "s", "kappa_ge3": ">", "alpha_ordinal": "D"}


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
        ax.set_yticks(y, d["judge"], fontsize=8)
        ax.set_xlabel("agreement with the human labels")
        ax.set_title(f"{dataset}: {len(d)} judges", fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
        ax.legend(fontsize="x-small", loc="lower right")
    return _save(fig, path)


def label_shares(table: pd.DataFrame, path: Path) -> Path:
    """Stacked label distribution per judge, the humans' first: lenient and strict judges at a glance."""
    datasets = list(dict.fromkeys(table["dataset"]))
    height = max(3.0, 0.28 * (table.groupby("dataset").size().max() + 1) + 1.4)
    fig, axes = plt.subplots(1, len(datasets), figsize=(7.5 * len(datasets), height), squeeze=False)
    for ax, dataset in zip(axes[0], datasets):
        d = table[table["dataset"] == dataset]
        names = ["human", *d["judge"]]
        shares = np.vstack([d[[f"human_share_{k}" for k in LEVELS]].iloc[:1].to_numpy(),
                            d[[f"judge_share_{k}" for k in LEVELS]].to_numpy()]).astype(float)
        y = np.arange(len(names))[::-1]
        left = np.zeros(len(names))
        for k in LEVELS:
            ax.barh(y, np.nan_to_num(shares[:, k]), left=left, label=f"label {k}", color=plt.cm.Blues(0.25 + 0.25 * k))
            left += np.nan_to_num(shares[:, k])
        ax.set_yticks(y, names, fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of the pairs")
        ax.set_title(f"{dataset}: label distribution", fontsize="medium")
        ax.legend(fontsize="x-small", loc="lower right", ncols=4)
    return _save(fig, path)


def confusion_grid(labels: pd.DataFrame, path: Path, columns: int = 6) -> Path:
    """Human level x judge level for every (dataset, judge), rows normalised to 1, as small multiples:
    one file for the many judges of a labels-only experiment."""
    groups = list(labels.groupby(["dataset", "judge"], sort=False))
    cols = min(columns, max(1, len(groups)))
    rows = -(-len(groups) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.3 * cols, 2.4 * rows), squeeze=False)
    for ax in axes.flat[len(groups):]:
        ax.axis("off")
    for ax, ((dataset, judge), lab) in zip(axes.flat, groups):
        counts = pd.crosstab(lab["human"], lab["relevance"]).reindex(index=list(LEVELS), columns=list(LEVELS), fill_value=0)
        share = counts.div(counts.sum(axis=1).replace(0, np.nan), axis=0).fillna(0).to_numpy()
        ax.imshow(share, vmin=0, vmax=1, cmap="Blues")
        ax.set_xticks(range(len(LEVELS)), LEVELS, fontsize=7)
        ax.set_yticks(range(len(LEVELS)), LEVELS, fontsize=7)
        ax.set_title(f"{judge}" if labels["dataset"].nunique() == 1 else f"{dataset}: {judge}", fontsize=7)
    fig.supxlabel("judge label", fontsize=9)
    fig.supylabel("human label", fontsize=9)
    fig.suptitle("Label confusion per judge, rows normalised (darker = larger share)", fontsize=10)
    return _save(fig, path)
