"""Reading a label out of a judge's text. No parsable score is a failure, never a 0."""

from __future__ import annotations

import re

# "##final score: 2", "## Final Score: **2**", "final score - 2", "Final score:2" ...; the last one wins.
FINAL_SCORE = re.compile(r"final\s*score\s*[:=\-]?\s*\**\s*\[?([0-3])\]?\**(?![\d.])", re.IGNORECASE)
BARE_DIGIT = re.compile(r"^\s*\**([0-3])\**\s*\.?\s*$")


def parse_label(text: str | None) -> int | None:
    if not text:
        return None
    matches = FINAL_SCORE.findall(text)
    if matches:
        return int(matches[-1])
    bare = BARE_DIGIT.match(text)
    return int(bare.group(1)) if bare else None
