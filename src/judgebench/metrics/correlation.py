"""Rank correlation of system orderings (judge qrels vs human qrels).

Kendall's tau-b (scipy.stats.kendalltau) is the usual TREC measure of whether a
judge ranks systems as the human assessors do; tau-b handles tied scores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from scipy.stats import kendalltau


def kendall_tau(
    a: Mapping[str, float],
    b: Mapping[str, float],
    systems: Iterable[str] | None = None,
) -> tuple[float, float]:
    """(tau_b, p) over the systems present in both mappings (restricted to
    ``systems`` when given). Raises ValueError with fewer than 2 common systems."""
    candidates = list(systems) if systems is not None else list(a)
    common = [s for s in dict.fromkeys(candidates) if s in a and s in b]
    if len(common) < 2:
        raise ValueError(
            f"Kendall's tau needs at least 2 systems scored in both orderings, "
            f"got {len(common)}: {common}"
        )
    tau, p = kendalltau([a[s] for s in common], [b[s] for s in common])
    return float(tau), float(p)
