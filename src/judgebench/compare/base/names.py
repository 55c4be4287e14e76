"""Every user-supplied name (judge, system, ranker, dataset, rewriter, experiment) as each output needs it.

Names come from configs and the command line, so they can hold anything: ``![x](http://host/x.png)`` is an
image report.html would fetch, ``$\\frac$`` stops matplotlib's mathtext (and the whole report), ``|`` or a
newline breaks a table row, ``%`` or ``}`` breaks a LaTeX table, ``/`` or ``..`` in a file name writes
elsewhere, an escape sequence rewrites the terminal. The renderers (render.py's tables, markdown.py,
labels_report.py, the sections, console.py, figures.py, report.py's file names) call these
functions and never escape on their own, so a name reads the same in every output and no name is markup.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Characters that start inline markup in CommonMark or GitHub's Markdown (escapes, code spans, emphasis,
# links and images, autolinks and raw HTML, entities, table cells, strikethrough, math, heading closers).
# A backslash before any ASCII punctuation is that character in CommonMark, so escaping them is exact.
MARKDOWN_SPECIAL = frozenset("\\`*_[]<>&|~$#")
LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    # a row that starts with [ or * after the previous row's \\ would be read as \\[length] or \\*
    "[": "{[}",
    "]": "{]}",
    "*": "{*}",
}
# Bidirectional overrides and isolates reorder the text around them on screen (a name could show as another).
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
PLOT_LIMIT = 60  # characters of a name in a figure: a longer one would squeeze the axes to nothing
FILE_LIMIT = 60
_FILE_SAFE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def _invisible(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Zl", "Zp") or c in BIDI


def visible(name: object) -> str:
    """The name on one line: control characters, line separators and bidi controls as Python escapes (``\\n``)."""
    text = str(name)
    return "".join(c.encode("unicode_escape").decode("ascii") if _invisible(c) else c for c in text)


def markdown(name: object) -> str:
    """The name as literal Markdown text: it renders as itself, never as markup or a second line. An ``_``
    between two letters or digits stays bare (``kappa_graded``): CommonMark never reads it as emphasis."""
    text = visible(name)
    out = []
    for i, c in enumerate(text):
        intraword = c == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum() and text[i + 1].isalnum()
        out.append("\\" + c if c in MARKDOWN_SPECIAL and not intraword else c)
    return "".join(out)


def latex(name: object) -> str:
    """The name as literal LaTeX text (inside a tabular cell, a caption or running text)."""
    return "".join(LATEX.get(c, c) for c in visible(name))


def plain(name: object) -> str:
    """The name for a terminal: one line, no escape sequences."""
    return visible(name)


def plot(name: object, limit: int = PLOT_LIMIT) -> str:
    """The name for a matplotlib text (the figures turn mathtext off, so ``$`` is a dollar): one line, at most
    ``limit`` characters, and never starting with ``_`` (matplotlib leaves such labels out of a legend)."""
    text = visible(name)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return " " + text if text.startswith("_") else text


def file_part(name: object, limit: int = FILE_LIMIT) -> str:
    """The name as part of a file name or an MLflow metric key: itself when it is already plain (letters,
    digits, ``_.-``, not starting with a dot or dash, short), else its plain characters and a hash of the
    whole name, so that two names never share a file."""
    text = str(name)
    if _FILE_SAFE.fullmatch(text) and len(text) <= limit:
        return text
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:limit].strip("_.-") or "name"
    return f"{base}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
