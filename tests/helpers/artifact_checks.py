"""Content checks of the files compare writes: a figure is a decodable PNG of a plot, a .tex table has its rows."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
from PIL import Image


def png(path: Path, min_size: tuple[int, int] = (300, 200)) -> tuple[int, int]:
    """Decode ``path`` fully; it is at least ``min_size`` pixels and is drawn (many colours, not one flat field)."""
    with Image.open(path) as image:
        assert image.format == "PNG", (path, image.format)
        image.load()
        rgb = np.asarray(image.convert("RGB")).astype(int)
        size = image.size
    assert size[0] >= min_size[0] and size[1] >= min_size[1], (path, size)
    colours = len(np.unique(rgb.reshape(-1, 3), axis=0))
    assert colours >= 16 and rgb.std() > 10, (path, colours, float(rgb.std()))
    # ink somewhere beyond a frame: dark pixels (text, axes) and not a page of them
    dark = float((rgb.mean(axis=2) < 128).mean())
    assert 0.001 < dark < 0.6, (path, dark)
    return size


def tex_rows(path: Path) -> list[list[str]]:
    """The body rows of a booktabs tabular (between \\midrule and \\bottomrule), each a list of cells."""
    text = path.read_text(encoding="utf-8")
    assert r"\begin{tabular}" in text and r"\end{tabular}" in text, path
    body = text.split(r"\midrule", 1)[1].split(r"\bottomrule", 1)[0]
    rows = []
    for line in body.splitlines():
        line = line.strip()
        if not line or line.startswith("\\") and "&" not in line:
            continue
        rows.append([cell.strip() for cell in re.sub(r"\\\\\s*$", "", line).split("&")])
    assert rows, path
    return rows


def numbers(cells: list[str]) -> list[float]:
    """The numbers of a row's cells (\\textbf{..} and similar unwrapped), in order."""
    out = []
    for cell in cells:
        m = re.fullmatch(r"(?:\\[a-z]+\{)?\$?(-?\d+(?:\.\d+)?)\$?\}?", cell)
        if m:
            out.append(float(m.group(1)))
    return out
