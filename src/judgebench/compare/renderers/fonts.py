"""A font fallback for the figures: names in any script are drawn, where the machine has a font for them.

Why: judge, system and dataset names are the user's (compare/base/names.py draws them as text), and matplotlib's
default DejaVu Sans has no CJK glyphs: a name such as 日本 came out as boxes with a "Glyph ... missing" warning
per figure. Since matplotlib 3.6 ``font.family`` may list several fonts, tried glyph by glyph; this module puts
the first installed CJK-capable font it knows after DejaVu Sans. Where none is installed nothing changes: the
glyphs stay boxes and the test suite filters that warning (pyproject.toml, with this reason).
"""

from __future__ import annotations

import functools

BASE = "DejaVu Sans"
CJK_FONTS = (
    "Noto Sans CJK JP",
    "Noto Sans CJK SC",
    "Noto Sans CJK TC",
    "Noto Sans CJK KR",
    "Source Han Sans",
    "WenQuanYi Zen Hei",
    "WenQuanYi Micro Hei",
    "IPAGothic",
    "IPAexGothic",
    "Droid Sans Fallback",
    "Arial Unicode MS",
    "Unifont",
)


def choose(available: set[str]) -> list[str]:
    """The font.family list: DejaVu Sans, then the first known CJK-capable font among ``available``."""
    return [BASE, *[name for name in CJK_FONTS if name in available][:1]]


@functools.cache
def fallback() -> dict[str, list[str]]:
    """rcParams for the figures (an rc_context): the fallback list from the fonts matplotlib knows here."""
    from matplotlib import font_manager

    return {"font.family": choose({f.name for f in font_manager.fontManager.ttflist})}
