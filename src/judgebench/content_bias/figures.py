"""The content-bias job's figures (PNG, Agg backend: no display needed)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from judgebench.metrics.agreement import LEVELS  # noqa: E402


def distribution_figure(dist: pd.DataFrame, path, title: str) -> None:
    fig, axes = plt.subplots(1, 4, figsize=(14, 3.4), sharey=True)
    for ax, level in zip(axes, LEVELS):
        sub = dist[dist["human"] == level].set_index("view")
        x = np.arange(4)
        for i, view in enumerate(("original", "rewritten")):
            if view in sub.index:
                ax.bar(x + (i - 0.5) * 0.4, [sub.loc[view, f"judge_{k}"] for k in LEVELS], 0.4, label=view)
        total = sub[[f"judge_{k}" for k in LEVELS]].sum(axis=1).max() if len(sub) else 0
        ax.axhline(total / 4, color="grey", ls="--", lw=1, label="uniform")
        ax.set_xticks(x, [str(k) for k in LEVELS])
        ax.set_title(f"human level {level}")
        ax.set_xlabel("judge label")
    axes[0].set_ylabel("pairs")
    axes[0].legend(fontsize="small")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def histogram_figure(diff: pd.Series, path, title: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.hist(diff, bins=30)
    ax.axvline(0, color="black", lw=1)
    ax.set_xlabel("score(rewritten) - score(original)")
    ax.set_ylabel("pairs")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
