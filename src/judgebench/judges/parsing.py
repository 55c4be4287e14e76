"""Reading a label out of a judge's text. No parsable score is a failure, never a 0.

The rule: every ``final score`` in the answer ("##final score: 2", "## Final Score: **2**", "final score - 2",
"Final score:2", trailing punctuation such as "2." allowed) must give the same grade 0-3; an answer whose
scores disagree ("##final score: 1 ... ##final score: 3") or include one outside 0-3 has no score (it is
re-asked, then reported as a failure): picking one of them would be a guess. Answers holding several
scores are counted (metric ``answers_multiple_scores``). A ``final score`` followed by more numbers
("final score: 0, 1, or 2", "final score 0-3") names the scale, not a grade, and is no score. Without any
``final score``, an answer that is just a digit 0-3 is that grade.
"""

from __future__ import annotations

import re

# Bumped whenever the rule below changes: labels are re-read from cached answers, so a finished cell whose
# answers would now parse differently must be recomputed (it is part of every cell's resume key).
PARSE_VERSION = "2"
# The number is taken whole (2.5 is one number, out of the scale); what follows it (".", "!", "**") is ignored,
# except another number: "final score: 0, 1, or 2" and "final score 0-3" name the scale, not a grade.
FINAL_SCORE = re.compile(
    r"final\s*score\s*[:=\-]?\s*\**\s*\[?(\d+(?:\.\d+)?)(?!\d|\.\d|\s*(?:,|or\b|-|to\b)\s*\d)", re.IGNORECASE
)
BARE_DIGIT = re.compile(r"^\s*\**([0-3])\**\s*\.?\s*$")
GRADES = {"0", "1", "2", "3"}


def score_count(text: str | None) -> int:
    """How many ``final score`` values the answer holds."""
    return len(FINAL_SCORE.findall(text)) if text else 0


def parse_label(text: str | None) -> int | None:
    if not text:
        return None
    matches = FINAL_SCORE.findall(text)
    if matches:
        if len(set(matches)) == 1 and matches[0] in GRADES:
            return int(matches[0])
        return None
    bare = BARE_DIGIT.match(text)
    return int(bare.group(1)) if bare else None
