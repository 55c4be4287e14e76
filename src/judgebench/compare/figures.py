"""Figures a reader would rather look at than a table (PNG, Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def ndcg_bars(t1: dict[str, pd.DataFrame], path: Path) -> Path:
    """The paper's Figure 3: grouped bars of nDCG@10 per system under each judge."""
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
        ax.legend(fontsize="small", ncols=min(4, len(judges)))
        ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
