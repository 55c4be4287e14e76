"""The latent "model prior" of a simulated model family, shared by its simulated judges and LLM rankers.

u(q, d) ~ N(0, 1) is a pure function of (the family's seed, query id, doc id), so a judge and a ranker of one
family see the same preference without sharing state, in any process, in any order; two families have
independent priors. A family is a name: ``simulated-<integer>`` has that integer as its seed (the default
family ``simulated-2024`` is ``simulation.prior_seed``), any other name (``simulated-A``) a seed derived from
the name itself, so the same name is the same prior everywhere. A judge of family F labels
``h + w_j * u_F + ...`` and a ranker of family F scores ``h + w_r * u_F + ...``: the judge favours F's rankers
by an amount set by the weights, a self-preference of known size.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np

_NUMBERED = re.compile(r"simulated-(-?\d+)")


def _normal(*parts: object) -> float:
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return float(np.random.default_rng(int.from_bytes(digest[:8], "little")).standard_normal())


def family_seed(family: str) -> int:
    """The prior seed of a simulated family: N for ``simulated-N``, else 8 bytes of sha256 of the name."""
    numbered = _NUMBERED.fullmatch(str(family))
    if numbered:
        return int(numbered.group(1))
    return int.from_bytes(hashlib.sha256(f"family\x1f{family}".encode()).digest()[:8], "little")


def latent_prior(seed: int, query_id: str, doc_id: str) -> float:
    """The preference an LLM ranker and an LLM judge of the same family would share."""
    return _normal("prior", seed, query_id, doc_id)


def noise(seed: int, role: str, query_id: str, doc_id: str) -> float:
    """Independent N(0,1) noise per component (role) and pair."""
    return _normal("noise", role, seed, query_id, doc_id)
