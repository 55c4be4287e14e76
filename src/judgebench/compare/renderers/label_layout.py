"""Point labels that do not overlap: a small deterministic placement for the scatter panels.

adjustText would do this by simulation; it is not a dependency, and a panel has at most a few dozen points, so a
greedy search is enough: label by label, try positions around the point at growing distance and keep the first
whose box overlaps no label placed before, no marker and stays inside the axes (else the one that overlaps least).
A label moved away from its point gets a thin leader line. The same input draws the same figure.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

# (dx, dy) in points and the text's alignment there: right, left, above, below, then the diagonals
_RING = [
    ((1, 0), "left", "center"),
    ((-1, 0), "right", "center"),
    ((0, 1), "center", "bottom"),
    ((0, -1), "center", "top"),
    ((1, 1), "left", "bottom"),
    ((-1, 1), "right", "bottom"),
    ((1, -1), "left", "top"),
    ((-1, -1), "right", "top"),
]
_DISTANCES = (4, 10, 18, 28, 40)  # points
_MARKER = 4.0  # half-size of a marker's box, in pixels


def _overlap(a: np.ndarray, b: np.ndarray) -> float:
    """Area shared by box ``a`` (x0, y0, x1, y1) and each row of ``b``, summed."""
    if not len(b):
        return 0.0
    w = np.clip(np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0]), 0, None)
    h = np.clip(np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1]), 0, None)
    return float((w * h).sum())


def place(
    ax, xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], fontsize: float = 6.5, crowded: str = "draw"
) -> list:
    """Annotate each point (x, y) with its text where it overlaps nothing; returns the annotations. Call it after
    the axes' limits, legend and the figure's layout are set (the search works in display coordinates). A label that
    finds no free place overlaps least (``crowded="draw"``) or is left out (``"skip"``: a panel that labels a
    subset)."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    points = (
        ax.transData.transform(np.column_stack([np.asarray(xs, float), np.asarray(ys, float)]))
        if len(xs)
        else np.empty((0, 2))
    )
    markers = np.column_stack([points - _MARKER, points + _MARKER]) if len(points) else np.empty((0, 4))
    legend = ax.get_legend()
    if legend is not None:  # the legend is an obstacle too
        e = legend.get_window_extent(renderer)
        markers = np.vstack([markers, [[e.x0, e.y0, e.x1, e.y1]]])
    frame = ax.get_window_extent(renderer)
    placed: list[np.ndarray] = []
    out = []
    for n in np.lexsort((np.asarray(xs, float), -np.asarray(ys, float))):  # top to bottom, then left to right
        ann = ax.annotate(texts[n], (xs[n], ys[n]), xytext=(0, 0), textcoords="offset points", fontsize=fontsize)
        best, best_cost = None, np.inf
        for dist in _DISTANCES:
            for (ux, uy), ha, va in _RING:
                ann.set_position((ux * dist, uy * dist))
                ann.set_ha(ha)
                ann.set_va(va)
                e = ann.get_window_extent(renderer)
                box = np.array([e.x0, e.y0, e.x1, e.y1])
                outside = (
                    max(0.0, frame.x0 - box[0])
                    + max(0.0, box[2] - frame.x1)
                    + max(0.0, frame.y0 - box[1])
                    + max(0.0, box[3] - frame.y1)
                )
                cost = _overlap(box, np.array(placed).reshape(-1, 4)) + _overlap(box, markers) + 50.0 * outside
                if cost < best_cost:
                    best, best_cost = ((ux * dist, uy * dist), ha, va, box, dist), cost
                if cost == 0:
                    break
            if best_cost == 0:
                break
        (dx, dy), ha, va, box, dist = best
        ann.remove()  # drawn again where it goes, with a leader line when it is away from its point
        if crowded == "skip" and _overlap(box, np.array(placed).reshape(-1, 4)) > 0:
            continue
        leader = (
            {"arrowstyle": "-", "lw": 0.5, "color": "0.4", "shrinkA": 1, "shrinkB": 3}
            if dist >= _DISTANCES[1]
            else None
        )
        ann = ax.annotate(
            texts[n],
            (xs[n], ys[n]),
            xytext=(dx, dy),
            textcoords="offset points",
            fontsize=fontsize,
            ha=ha,
            va=va,
            arrowprops=leader,
        )
        ann.set_in_layout(False)  # tight_layout must not move the axes under labels placed for them
        placed.append(box)
        out.append(ann)
    return out
