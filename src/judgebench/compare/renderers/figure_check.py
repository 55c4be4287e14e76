"""Is a figure readable before it is saved: every drawn artist inside the picture, and no two labels over each other.

A figure that grows with the number of judges or systems can clip a legend, a title or a tick label at the canvas edge,
or draw 35 tick labels over each other. This asks matplotlib where each artist lands (``get_window_extent`` after a
draw, in pixels) and compares the boxes (``Bbox.overlaps``). The figures' save (figure_style.py) runs it so a report
never writes an unreadable PNG silently (a warning names what is wrong), and tests run it on the figures of a 35-judge
and a 35-system report.
"""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

SLACK = 1.0  # pixels: rounding in the renderer


def _visible_texts(fig: Figure) -> list[tuple[str, Text]]:
    """(what the text is, the text) for each visible, non-empty text: titles, axis labels, tick labels, legend texts,
    point labels, the figure's own texts."""
    out: list[tuple[str, Text]] = []
    for ax in fig.axes:
        for kind, texts, axis, limits in (
            ("x tick", ax.get_xticklabels(), 0, ax.get_xlim()),
            ("y tick", ax.get_yticklabels(), 1, ax.get_ylim()),
        ):
            low, high = sorted(limits)  # a tick outside the view is listed but not drawn
            out += [(kind, t) for t in texts if low - 1e-9 <= t.get_position()[axis] <= high + 1e-9]
        out += [("title", t) for t in (ax.title, ax._left_title, ax._right_title)]
        out += [("axis label", ax.xaxis.label), ("axis label", ax.yaxis.label)]
        out += [("text", t) for t in ax.texts]
        legend = ax.get_legend()
        if legend is not None:
            out += [("legend", t) for t in legend.get_texts()]
    if fig._suptitle is not None:
        out.append(("title", fig._suptitle))
    out += [("figure text", t) for t in fig.texts if t is not fig._suptitle]
    return [(k, t) for k, t in out if t.get_visible() and t.get_text().strip()]


def problems(fig: Figure) -> list[str]:
    """What is unreadable in ``fig``, one line each (empty: readable): an artist (axes, colour bar, legend, text) whose
    box passes the figure's own box (the canvas sized from the counts: the tight box that savefig crops to must not be
    what rescues it), and two texts of one axes whose boxes overlap (tick label on tick label, label on label)."""
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    frame = fig.bbox
    found: list[str] = []
    artists = [("axes", ax, ax) for ax in fig.axes]
    artists += [("legend", ax.get_legend(), ax) for ax in fig.axes if ax.get_legend() is not None]
    texts = _visible_texts(fig)
    for kind, artist, _ in artists + [(k, t, None) for k, t in texts]:
        box = artist.get_window_extent(renderer)
        if (
            box.x0 < frame.x0 - SLACK
            or box.y0 < frame.y0 - SLACK
            or box.x1 > frame.x1 + SLACK
            or box.y1 > frame.y1 + SLACK
        ):
            what = f" {artist.get_text()!r}" if isinstance(artist, Text) else ""
            found.append(f"{kind}{what} passes the image's edge")
    by_axes: dict[int, list[tuple[str, Text, Bbox]]] = {}
    for kind, t in texts:
        owner = t.axes if t.axes is not None else None
        key = id(owner) if kind not in ("legend", "figure text") else -1 - id(t.figure)
        by_axes.setdefault(key, []).append(
            (kind, t, Text.get_window_extent(t, renderer))
        )  # the text, not a leader line
    for group in by_axes.values():
        boxes = np.array([[b.x0, b.y0, b.x1, b.y1] for _, _, b in group])
        if len(boxes) < 2:
            continue
        # every pair at once: a strict overlap of positive width and height (touching boxes are fine)
        w = np.minimum(boxes[:, None, 2], boxes[None, :, 2]) - np.maximum(boxes[:, None, 0], boxes[None, :, 0])
        h = np.minimum(boxes[:, None, 3], boxes[None, :, 3]) - np.maximum(boxes[:, None, 1], boxes[None, :, 1])
        hit = np.triu((w > SLACK) & (h > SLACK), k=1)
        for i, j in zip(*np.nonzero(hit)):
            a, b = group[i], group[j]
            found.append(f"{a[0]} {a[1].get_text()!r} overlaps {b[0]} {b[1].get_text()!r}")
    return found
