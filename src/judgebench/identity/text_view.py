"""The name of the text a ranker and a judge read: the original passages, or one rewriter's output.

Jobs tag each run with it (``text_view``) and compare, the content-bias statistics and the reports split
labels by it, so the names are made in one place.
"""

from __future__ import annotations

ORIGINAL = "original"


def rewritten(rewriter: str) -> str:
    """The view of the passages as rewriter ``rewriter`` wrote them."""
    return f"rewritten:{rewriter}"
