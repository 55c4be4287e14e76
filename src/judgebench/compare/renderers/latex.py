"""LaTeX versions of the report tables (booktabs, best values bold), ready for \\input in a paper."""

from __future__ import annotations

from pathlib import Path

from judgebench.compare.base.section import LatexTable
from judgebench.compare.renderers import render


def write(tables: list[LatexTable], out: Path) -> list[Path]:
    """One .tex file per (file stem, frame, caption, render options): the sections' tables (compare/sections)."""
    files = []
    for stem, frame, caption, kw in tables:
        path = out / f"{stem}.tex"
        path.write_text(render.latex(frame, caption, f"tab:{stem.replace('_', '-')}", **kw), encoding="utf-8")
        files.append(path)
    return files
