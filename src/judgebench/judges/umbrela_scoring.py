"""Read a UMBRELA grade (0-3) from a local model's next-token distribution instead of parsing generated text.

The prompt ends with the forced assistant prefix ``##final score: `` INCLUDING its trailing space: a
byte-level BPE model (SmolLM2) writes " 0" as two tokens ('Ġ', '0') and after ``score:`` puts ~0.7 of
its mass on the space, so the digit is only readable once the space token is part of the prompt
(:class:`~judgebench.llm.local.transformers_model.TransformersModel` keeps it as the last prompt token).  A local judge
therefore
cannot fail to parse: every pair gets a label, its expected grade and the full 4-way distribution.
"""

from __future__ import annotations

import numpy as np

from judgebench.llm.local.transformers_model import TransformersModel

UMBRELA_PREFIX = "##final score: "
GRADES = ("0", "1", "2", "3")


def umbrela_digit_logprobs(
    model: TransformersModel, prompts: list[str], system: str | None = None, prefixes: list[str | None] | None = None
) -> np.ndarray:
    """(n, 4) log-probabilities of the digits 0..3 over the full vocabulary (their total mass shows how
    much the model actually wants to answer with a digit there).  ``prefixes``: the text of each prompt
    before its passage, scored once per distinct value (see :mod:`judgebench.llm.local.prefix_cache`)."""
    return model.next_token_scores(
        prompts, list(GRADES), forced_prefix=UMBRELA_PREFIX, system=system, prefixes=prefixes
    )


TIE_NATS = 1e-3  # grades whose log-probabilities are this close to the best one's are tied


def grades_from_logprobs(lp: np.ndarray) -> np.ndarray:
    """The label of each row of (n, 4) digit log-probabilities: the most probable grade, where grades within
    :data:`TIE_NATS` of the best are tied and the LOWEST tied grade wins (the conservative reading).

    Why a tolerance: the log-probabilities come from float32 logits, and a batch's composition (its padding,
    the kernels its shape picks, a shared prefix or not) moves them by ~1e-6 on a CPU and ~1e-2 in bf16. A
    plain argmax turns such a move into a different label for a near-tie; with the tolerance a near-tie has
    one label whatever the batch (exact ties were already the lowest grade: numpy's argmax takes the first)."""
    if lp.size == 0:
        return np.empty(0, dtype=int)
    return np.argmax(lp >= lp.max(axis=1, keepdims=True) - TIE_NATS, axis=1)


def umbrela_label_distribution(
    model: TransformersModel, prompts: list[str], system: str | None = None, prefixes: list[str | None] | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels: :func:`grades_from_logprobs`, expected grade, probs (n, 4) renormalised over the four digits)."""
    lp = umbrela_digit_logprobs(model, prompts, system, prefixes)
    if lp.size == 0:
        return np.empty(0, dtype=int), np.empty(0), np.empty((0, len(GRADES)))
    labels = grades_from_logprobs(lp)
    lp = lp - lp.max(axis=1, keepdims=True)
    probs = np.exp(lp)
    probs /= probs.sum(axis=1, keepdims=True)
    grades = np.arange(len(GRADES), dtype=float)
    return labels, probs @ grades, probs
