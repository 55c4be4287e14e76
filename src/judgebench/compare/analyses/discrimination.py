"""Discriminative power of the judges: can each judge separate the oracle rankers that humans separate, and
does label agreement (kappa) predict it?

The paper's argument is that a judge can agree well with human labels and still fail to tell good rankings
from slightly worse ones (or the reverse). With oracle rankers (Perfect, Swap[k]) and at least three judges,
this module ranks the judges by discriminative power:

1. on the oracle pairs that humans separate significantly (the paired t-tests of Tables 3/4, with the
   report's alpha and correction, compare/analyses/significance.py): how many the judge also separates in the same
   direction (``agree``), misses, reverses; and how many pairs it separates that humans do not (``spurious``);
2. the oracles-only Kendall tau and tau_AP between the judge's and its human reference's orderings, with
   percentile bootstrap intervals over queries (the resampling contract of compare/analyses/bootstrap.py);

beside graded kappa (Table 2). Across judges, Spearman's rho of kappa with pairs agreed and with tau, each
with a percentile bootstrap interval over judges, answers in one sentence whether label agreement predicts
discriminative power on the collection. A correlation is flagged unreliable when most judges tie on the
other variable (then rho rests on the few judges that differ).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from judgebench.compare.analyses import significance
from judgebench.compare.artifacts import REFERENCES, per_query_matrix
from judgebench.compare.analyses.bootstrap import percentile_interval, resample_indices
from judgebench.compare.reference import References, own_rows
from judgebench.metrics import tau_b
from judgebench.metrics.correlation import tau_ap

MIN_JUDGES = 3
TIE_SHARE = 0.5  # rho is flagged unreliable when at least this share of judges ties on one value
COLUMNS = ["dataset", "judge", "kappa_graded", "human_significant", "agree", "missed", "spurious", "reversed",
           "tau_oracles", "tau_oracles_lo", "tau_oracles_hi", "tau_ap_oracles", "tau_ap_oracles_lo", "tau_ap_oracles_hi"]
CORRELATIONS = ["dataset", "statistic", "rho", "lo", "hi", "judges", "modal_share", "unreliable"]
STATISTICS = {"agree": "pairs agreed", "tau_oracles": "oracles-only tau"}


@dataclass
class Discrimination:
    """``table``: one row per (dataset, judge), ranked by pairs agreed then tau; ``correlations``: rho of kappa
    with each statistic; ``human``: per dataset (human-significant pairs, oracle pairs); ``answers``: the
    one-sentence answer per dataset."""

    table: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=COLUMNS))
    correlations: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=CORRELATIONS))
    human: dict[str, tuple[int, int]] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(len(self.table))


def ranked_judges(table1: pd.DataFrame, exclude=()) -> list[str]:
    """The judges the section ranks: Table 1's judge columns but the human references and ``exclude`` (the virtual
    judges: built from the others' labels, they are no judge of their own)."""
    return [c for c in table1.columns if c != "type" and c not in REFERENCES and c not in set(exclude)]


def applies(table1: pd.DataFrame, exclude=()) -> bool:
    """Only with at least two oracle rankers and MIN_JUDGES judges (not the human references)."""
    return int((table1["type"] == "oracle").sum()) >= 2 and len(ranked_judges(table1, exclude)) >= MIN_JUDGES


def analyse(per_query: pd.DataFrame, t1: dict[str, pd.DataFrame], table2: pd.DataFrame, refs: References, alpha: float = 0.05,
            use_holm: bool = False, n_resamples: int = 1000, seed: int = 0, level: float = 0.95, exclude=()) -> Discrimination:
    """The discrimination table, the correlations and the answer of every dataset where :func:`applies`; the
    judges in ``exclude`` (virtual ones) are left out."""
    rows, corr, human, answers = [], [], {}, {}
    kappa = {(d, j): k for d, j, k in zip(table2.get("dataset", []), table2.get("judge", []), table2.get("kappa_graded", []))}
    for dataset, table in t1.items():
        if not applies(table, exclude):
            continue
        oracles = [s for s in table.index if table.at[s, "type"] == "oracle"]
        judges = ranked_judges(table, exclude)
        d = per_query[(per_query["dataset"] == dataset) & per_query["system"].isin(oracles)]
        counts = decisions(d[d["judge"].isin([*judges, *REFERENCES])], oracles, refs, alpha, use_holm)
        taus = ordering_intervals(d, oracles, judges, refs, n_resamples, seed, level)
        frame = pd.DataFrame({"dataset": dataset, "judge": judges})
        frame["kappa_graded"] = [kappa.get((dataset, j), math.nan) for j in judges]
        frame = frame.merge(counts, on="judge", how="left").merge(taus, on="judge", how="left")
        frame = frame.sort_values(["agree", "tau_oracles", "kappa_graded"], ascending=False, kind="stable", na_position="last")
        rows.append(frame[COLUMNS])
        human[dataset] = (int(counts["human_significant"].max()) if len(counts) else 0, len(oracles) * (len(oracles) - 1) // 2)
        c = correlations(frame, n_resamples, seed, level).assign(dataset=dataset)[CORRELATIONS]
        corr.append(c)
        answers[dataset] = answer(dataset, c, len(frame))
    if not rows:
        return Discrimination()
    return Discrimination(pd.concat(rows, ignore_index=True), pd.concat(corr, ignore_index=True), human, answers)


def decisions(per_query: pd.DataFrame, oracles: list[str], refs: References, alpha: float, use_holm: bool) -> pd.DataFrame:
    """Per judge: pairs humans separate significantly, and agree (same pair, same direction) / missed / spurious /
    reversed, from Tables 3/4's pairwise classification restricted to the oracle rankers."""
    dataset = per_query["dataset"].iloc[0] if len(per_query) else ""
    counts, pairs = significance.decision_agreement(per_query, {dataset: oracles}, refs, alpha, use_holm=use_holm)
    tests = significance.ttests(per_query, {dataset: oracles}, alpha)
    sig = "significant_holm" if use_holm else "significant"
    judged = {(j, frozenset((a, b))): bool(s) for j, a, b, s in zip(tests["judge"], tests["system_a"], tests["system_b"], tests[sig])}
    out = []
    for judge, g in pairs.groupby("judge", sort=False):
        cls = g["agreement"].tolist()
        agree_sig = sum(c == "agree" and judged.get((judge, frozenset((a, b))), False)
                        for a, b, c in zip(g["system_a"], g["system_b"], cls))
        missed, reversed_, spurious = cls.count("missed"), cls.count("reversed"), cls.count("spurious")
        out.append({"judge": judge, "human_significant": agree_sig + missed + reversed_, "agree": agree_sig, "missed": missed,
                    "spurious": spurious, "reversed": reversed_})
    return pd.DataFrame(out, columns=["judge", "human_significant", "agree", "missed", "spurious", "reversed"])


def _means(values: np.ndarray, idx: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values[:, idx], axis=2)


def ordering_intervals(per_query: pd.DataFrame, oracles: list[str], judges: list[str], refs: References, n_resamples: int,
                       seed: int, level: float) -> pd.DataFrame:
    """Oracles-only tau-b and tau_AP of each judge against its reference, with percentile intervals over the same
    query resamples for every judge (compare/analyses/bootstrap.py's contract: queries in string order, one rng per dataset)."""
    dataset = per_query["dataset"].iloc[0] if len(per_query) else ""
    queries = sorted(per_query["query_id"].astype(str).unique())
    idx = resample_indices(len(queries), max(n_resamples, 1), seed)
    own = own_rows(per_query)
    of = own.groupby("judge", sort=False).indices
    rows = []
    for judge in judges:
        mine = per_query_matrix(own.iloc[of.get(judge, [])], oracles, queries)
        theirs = per_query_matrix(refs.rows(dataset, judge).pipe(lambda f: f[f["system"].isin(oracles)]), oracles, queries)
        j, h = np.nanmean(mine, axis=1), np.nanmean(theirs, axis=1)
        keep = ~np.isnan(j) & ~np.isnan(h)
        row = {"judge": judge, "tau_oracles": math.nan, "tau_ap_oracles": math.nan}
        for name in ("tau_oracles", "tau_ap_oracles"):
            row[f"{name}_lo"] = row[f"{name}_hi"] = math.nan
        if keep.sum() >= 2 and n_resamples > 0:
            names = [s for s, k in zip(oracles, keep) if k]
            bj, bh = _means(mine[keep], idx), _means(theirs[keep], idx)
            row["tau_oracles"] = float(tau_b(j[keep], h[keep])[0])
            row["tau_oracles_lo"], row["tau_oracles_hi"] = percentile_interval(tau_b(bj, bh), level)
            row["tau_ap_oracles"] = tau_ap(dict(zip(names, j[keep])), dict(zip(names, h[keep])))
            boot = [tau_ap(dict(zip(names, bj[:, b])), dict(zip(names, bh[:, b]))) for b in range(bj.shape[1])]
            row["tau_ap_oracles_lo"], row["tau_ap_oracles_hi"] = percentile_interval(np.array(boot), level)
        rows.append(row)
    return pd.DataFrame(rows)


def correlations(frame: pd.DataFrame, n_resamples: int, seed: int, level: float) -> pd.DataFrame:
    """Spearman's rho of kappa with each statistic across judges; percentile interval from resampling the judges
    with replacement (``np.random.default_rng(seed)``, B = n_resamples; a resample where either side is constant
    has no rho and is left out)."""
    rows = []
    for stat in STATISTICS:
        f = frame[["kappa_graded", stat]].dropna().astype(float)
        k, s = f["kappa_graded"].to_numpy(), f[stat].to_numpy()
        n = len(f)
        modal = float(pd.Series(s).value_counts().iloc[0] / n) if n else math.nan
        rho, lo, hi = math.nan, math.nan, math.nan
        if n >= MIN_JUDGES and np.ptp(k) > 0 and np.ptp(s) > 0:
            rho = float(spearmanr(k, s).statistic)
            idx = np.random.default_rng(seed).integers(0, n, size=(max(n_resamples, 1), n))
            boot = np.array([_rho(k[i], s[i]) for i in idx])
            lo, hi = percentile_interval(boot, level)
        rows.append({"statistic": stat, "rho": rho, "lo": lo, "hi": hi, "judges": n, "modal_share": modal,
                     "unreliable": bool(modal >= TIE_SHARE) if n else True})
    return pd.DataFrame(rows)


def _rho(x: np.ndarray, y: np.ndarray) -> float:
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    return float(spearmanr(x, y).statistic)


def _rho_text(row) -> str:
    if row.rho != row.rho:
        return f"rho(kappa, {STATISTICS[row.statistic]}) undefined (no variation)"
    flag = f", unreliable: {row.modal_share:.0%} of judges tie" if row.unreliable else ""
    return f"rho(kappa, {STATISTICS[row.statistic]}) = {row.rho:+.2f} [{row.lo:+.2f}, {row.hi:+.2f}{flag}]"


def _supports(row) -> bool:
    """A reliable correlation whose interval lies above 0."""
    return row.rho == row.rho and not row.unreliable and row.lo > 0


def answer(dataset: str, corr: pd.DataFrame, judges: int) -> str:
    """One sentence: does label agreement predict discriminative power here?"""
    rows = list(corr.itertuples(index=False))
    support = [r for r in rows if _supports(r)]
    verdict = ("predicts" if len(support) == len(rows) else "partly predicts" if support else "does not reliably predict")
    return (f"On {dataset}, label agreement {verdict} discriminative power across {judges} judges: "
            + "; ".join(_rho_text(r) for r in rows) + ".")
