"""What the fake LLM server answers: deterministic functions of the prompt, so a test can predict every label,
every pairwise choice and every rewrite the server will give."""

from __future__ import annotations

import hashlib
import re

JUDGE_MARKER = "##final score"
PRP_MARKER = "Output Passage A or Passage B"
REWRITE_MARKER = "Please rewrite the following text:"
REWRITE_PREFIX = "In other words: "
NOSCORE_TEXT = "I think it is relevant."
MALFORMED_BODY = b'{"id": "truncated", "choices": [{"message": {"content": "##final'
"""What a ``fail_malformed`` answer carries: a 200 with ``application/json`` whose body is cut short."""
_PRP_RE = re.compile(r"Passage A:(.*?)Passage B:(.*?)(?:Output Passage A or Passage B|$)", re.DOTALL)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+")


def sha256_hex(text: str) -> str:
    """The digest recorded per request (``stats()["prompt_sha256"]``) and behind every fake decision."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fake_label(prompt: str) -> int:
    """The default relevance label (0-3) the fake judge gives a prompt."""
    return int(sha256_hex(prompt), 16) % 4


def _prp_choice(prompt: str, prefer: list[str]) -> str:
    """ "Passage A"/"Passage B": the only passage holding the first decisive preferred substring, else sha parity."""
    m = _PRP_RE.search(prompt)
    if m:
        a, b = m.group(1), m.group(2)
        for sub in prefer:
            if (sub in a) != (sub in b):
                return "Passage A" if sub in a else "Passage B"
    return "Passage A" if int(sha256_hex(prompt), 16) % 2 == 0 else "Passage B"


def fake_rewrite(text: str) -> str:
    """The fake rewriter: a fixed prefix, then the sentences in reverse order."""
    sentences = [s for s in _SENTENCE_RE.split(text.strip()) if s]
    return REWRITE_PREFIX + " ".join(reversed(sentences))


def fake_answer(prompt: str, labels: dict[str, int] | None = None, prefer: list[str] | None = None) -> str:
    """The answer text for a prompt (a fault-free request): tests call this to predict what the server says.

    Judging prompts (containing ``##final score``) get ``##final score: N``, N from the first ``labels``
    substring found in the prompt, else :func:`fake_label`; pairwise prompts get ``Passage A``/``Passage B``;
    rewrite prompts get :func:`fake_rewrite` of the text after the first newline; anything else ``OK``.
    """
    if JUDGE_MARKER in prompt:
        label = next((v for k, v in (labels or {}).items() if k in prompt), None)
        return f"##final score: {fake_label(prompt) if label is None else int(label)}"
    if PRP_MARKER in prompt:
        return _prp_choice(prompt, list(prefer or []))
    if prompt.lstrip().startswith(REWRITE_MARKER):
        _, _, text = prompt.lstrip().partition("\n")
        return fake_rewrite(text)
    return "OK"
