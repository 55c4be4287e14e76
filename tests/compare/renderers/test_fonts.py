"""The figures' font fallback (compare/renderers/fonts.py): a CJK-capable font, when one is installed, follows
DejaVu Sans."""

from __future__ import annotations

import matplotlib.pyplot as plt

from judgebench.compare.renderers import figure_style, fonts


def test_the_first_known_cjk_font_installed_follows_dejavu():
    assert fonts.choose({"DejaVu Sans", "WenQuanYi Zen Hei", "Noto Sans CJK JP"}) == ["DejaVu Sans", "Noto Sans CJK JP"]
    assert fonts.choose({"DejaVu Sans", "Unifont"}) == ["DejaVu Sans", "Unifont"]
    assert fonts.choose({"DejaVu Sans", "Comic Sans MS"}) == ["DejaVu Sans"]  # none known: DejaVu alone, as before


def test_every_figure_function_draws_with_the_fallback_list():
    @figure_style.plain_text
    def family():
        return list(plt.rcParams["font.family"])

    assert family() == fonts.fallback()["font.family"] and family()[0] == "DejaVu Sans"
