"""The calibration benchmark's result rows and its pass rule (benchmarks/calibration.py, docs/protocol.md#calibration):
a row meets its target only when its measured value is within it and its Monte-Carlo standard error is small
enough to say so, so that noise can neither pass a row nor hide a miss."""

from __future__ import annotations

import numpy as np

COLUMNS = ["statistic", "setting", "n_queries", "k", "nominal", "measured", "mc_se", "target", "meets", "flagged"]
POWER_SE_LIMIT = 0.01  # the MC s.e. (simulated and claimed together) a power row must reach to be judged
SE_LIMIT = {"quick": 0.01, "full": 0.005}  # the Monte-Carlo s.e. a coverage or size row must reach to be judged
PRECISE = ("0.93-0.97", "<=0.06")  # the targets of coverage and size rows


def ratio(num, den) -> tuple[float, float]:
    """sum(num) / sum(den) over populations and its MC s.e. (the ratio's linearisation, populations independent):
    a rate over the draws of a kind (say, those without a warning) that each population has in a different number."""
    num, den = np.asarray(num, float), np.asarray(den, float)
    if den.sum() <= 0:
        return float("nan"), float("nan")
    r = num.sum() / den.sum()
    P = len(den)
    return float(r), float(np.sqrt(P / max(P - 1, 1) * ((num - r * den) ** 2).sum()) / den.sum())


def row(statistic, setting, n, k, nominal, per_pop, target, meets, flagged=False, se_limit=None, estimate=None) -> dict:
    """One result row. It meets its target only if the measured value itself is within the target and, for a
    coverage or size row, the Monte-Carlo s.e. is at most ``se_limit`` (row.se_limit, set by run()): noise can
    neither pass nor hide a miss. ``estimate``: (measured, s.e.) given (ratio()), per_pop then unused."""
    se_limit = row.se_limit if se_limit is None else se_limit
    per_pop = np.asarray(per_pop, float)
    per_pop = per_pop[np.isfinite(per_pop)]
    measured = float(per_pop.mean()) if len(per_pop) else float("nan")
    se = float(per_pop.std(ddof=1) / np.sqrt(len(per_pop))) if len(per_pop) > 1 else float("nan")
    if estimate is not None:
        measured, se = estimate
    precise = target not in PRECISE or (se == se and se <= se_limit)
    ok = measured == measured and bool(meets(measured, nominal)) and precise
    return {
        "statistic": statistic,
        "setting": setting,
        "n_queries": n,
        "k": k,
        "nominal": round(float(nominal), 4),
        "measured": round(measured, 4),
        "mc_se": round(se, 4),
        "target": target,
        "meets": ok,
        "flagged": bool(flagged),
    }


row.se_limit = SE_LIMIT["full"]


def covers(x):
    return 0.93 <= x <= 0.97


def within(rel):
    return lambda m, nominal: abs(m / nominal - 1) <= rel
