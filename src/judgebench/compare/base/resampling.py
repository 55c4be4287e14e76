"""The resampling and test settings that compare's analyses share, passed as one object.

Self-preference, the run-type bias and discriminative power all draw query resamples (or permutations) from a seed
and state intervals at a level and decisions at alpha. Passing these four as one frozen ``Resampling`` keeps the
analyses' signatures about their data, and a section builds it once from the report's options
(``Resampling.from_options``), so no analysis can be handed a seed without its level or alpha.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resampling:
    """How many resamples (or random permutations) to draw, from which seed, and the interval level and test size.

    The defaults are the report's (``Options``: 1,000 bootstrap resamples, seed 0, 95 % intervals, alpha 0.05)."""

    n_resamples: int = 1000
    seed: int = 0
    level: float = 0.95
    alpha: float = 0.05

    @classmethod
    def from_options(cls, options) -> Resampling:
        """The report's options (``bootstrap``, ``seed``, ``level``, ``alpha``) as one object."""
        return cls(options.bootstrap, options.seed, options.level, options.alpha)
