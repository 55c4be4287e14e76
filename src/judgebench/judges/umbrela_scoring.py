"""Read a UMBRELA grade (0-3) from a local model's next-token distribution instead of parsing generated text.

The prompt ends with the forced assistant prefix ``##final score: `` INCLUDING its trailing space: a
byte-level BPE model (SmolLM2) writes " 0" as two tokens ('Ġ', '0') and after ``score:`` puts ~0.7 of
its mass on the space, so the digit is only readable once the space token is part of the prompt
(:class:`~judgebench.llm.transformers_model.TransformersModel` keeps it as the last prompt token).  A local judge therefore
cannot fail to parse: every pair gets a label, its expected grade and the full 4-way distribution.
"""

from __future__ import annotations

import numpy as np

from judgebench.llm.transformers_model import TransformersModel

UMBRELA_PREFIX = "##final score: "
GRADES = ("0", "1", "2", "3")


def umbrela_digit_logprobs(model: TransformersModel, prompts: list[str], system: str | None = None,
                           prefixes: list[str | None] | None = None) -> np.ndarray:
    """(n, 4) log-probabilities of the digits 0..3 over the full vocabulary (their total mass shows how
    much the model actually wants to answer with a digit there).  ``prefixes``: the text of each prompt
    before its passage, scored once per distinct value (see :mod:`judgebench.llm.prefix_cache`)."""
    return model.next_token_logprobs(prompts, list(GRADES), forced_prefix=UMBRELA_PREFIX, system=system, prefixes=prefixes)


def umbrela_label_distribution(model: TransformersModel, prompts: list[str], system: str | None = None,
                               prefixes: list[str | None] | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels = argmax grade, expected grade, probs (n, 4) renormalised over the four digits)."""
    lp = umbrela_digit_logprobs(model, prompts, system, prefixes)
    if lp.size == 0:
        return np.empty(0, dtype=int), np.empty(0), np.empty((0, len(GRADES)))
    lp = lp - lp.max(axis=1, keepdims=True)
    probs = np.exp(lp)
    probs /= probs.sum(axis=1, keepdims=True)
    grades = np.arange(len(GRADES), dtype=float)
    return probs.argmax(axis=1), probs @ grades, probs
