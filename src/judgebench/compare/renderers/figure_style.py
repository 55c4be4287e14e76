"""How every figure of the report looks and is written: one colour, marker and hatch per system type and per judge,
names drawn as written, and a save that keeps every artist inside the image.

The figure modules (compare/renderers/figures.py, scatter_figures.py, label_figures.py) and the sections that draw
their own figures share these, so the same thing looks the same in every figure and no figure clips its labels.
"""

from __future__ import annotations

import functools
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from judgebench.compare.base import names  # noqa: E402
from judgebench.compare.renderers import fonts  # noqa: E402

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


def plot_names(values) -> list[str]:
    """Every name as the figures draw it (compare/base/names.py's ``plot``)."""
    return [names.plot(v) for v in values]


def save(fig, path: Path) -> Path:
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


def type_legend(ax, types: list[str], loc: str = "lower right") -> None:
    """The legend of the system types, one marker and colour each, as the points are drawn."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], ls="", marker=TYPE_MARKERS.get(t, "o"), color=TYPE_COLOURS.get(t, "tab:gray"), label=t)
        for t in types
    ]
    ax.legend(handles=handles, fontsize="x-small", loc=loc, title="system type", title_fontsize="x-small")
