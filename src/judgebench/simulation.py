"""The latent "model prior" shared by the simulated judge and the simulated LLM ranker.

u(q, d) ~ N(0, 1) is a pure function of (seed, query id, doc id), so the judge and the ranker
see the same preference without sharing state, in any process, in any order.
"""

from __future__ import annotations

import hashlib

import numpy as np


def _normal(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return float(np.random.default_rng(int.from_bytes(digest[:8], "little")).standard_normal())


def latent_prior(seed: int, query_id: str, doc_id: str) -> float:
    """The preference an LLM ranker and an LLM judge of the same family would share."""
    return _normal("prior", seed, query_id, doc_id)


def noise(seed: int, role: str, query_id: str, doc_id: str) -> float:
    """Independent N(0,1) noise per component (role) and pair."""
    return _normal("noise", role, seed, query_id, doc_id)
