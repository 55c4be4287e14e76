"""What a compare report found, as sentences: the first thing report.html, report.md and the terminal show.

One list of ``Finding`` records, built once from the Report by the functions in ``PRODUCERS`` (in order), and
rendered by every output: ``console.summary`` (plain lines), the report's header section
(compare/sections/header.py: "## Findings") and
``html`` (the panel above the contents). An analysis that wants its result up front appends one function
``(Report) -> Iterable[Finding]`` to ``PRODUCERS`` (docs/architecture.md, "Add a finding"). A record's text is
plain: names in it are raw and each renderer escapes the whole sentence.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from judgebench.compare.base.report_model import Report

GRID = ""  # dataset and judge of a finding about the whole selection (missing or running cells)


@dataclass(frozen=True)
class Finding:
    """One sentence about one (dataset, judge), or about the whole selection (both ``GRID``).

    ``topic`` names what it is about (inversion, oracle order, label agreement, self-preference, calibration,
    grid); ``alert`` marks what a reader must not miss (an inversion, cells without a finished run); ``brief`` is
    the few words the terminal prints (the text when empty)."""

    topic: str
    text: str
    dataset: str = GRID
    judge: str = GRID
    alert: bool = False
    brief: str = ""

    @property
    def subject(self) -> str:
        return f"{self.dataset} / {self.judge}" if self.judge else (self.dataset or "this selection")


def _ok(*values) -> bool:
    return all(v is not None and not (isinstance(v, float) and math.isnan(v)) for v in values)


def _n(v: float, digits: int = 2) -> str:
    return f"{v:.{digits}f}" if _ok(v) else "missing"


def _pct(v: float) -> str:
    return f"{v:.0%}" if _ok(v) else "missing"


def inversion(r: Report) -> Iterable[Finding]:
    """Does the judge put the LLM rankers above the oracles that humans put above them (Table 5)."""
    for row in r.bias.itertuples(index=False):
        v = row.inverted
        ranks = (f"mean rank of the LLM systems {_n(row.llm_rank_judge, 1)} vs the oracles {_n(row.oracle_rank_judge, 1)} "
                 f"under the judge, {_n(row.llm_rank_human, 1)} vs {_n(row.oracle_rank_human, 1)} under humans; LLM "
                 "systems win "
                 f"{_pct(row.llm_wins_judge)} of (LLM, oracle) pairs under the judge, {_pct(row.llm_wins_human)} under "
                 "humans")
        flips = getattr(row, "flipped_pairs", math.nan)
        if _ok(flips, getattr(row, "oracle_first_pairs", math.nan)) and row.oracle_first_pairs > 0:  # by how much
            margin = f", by {row.flip_margin:.3f} nDCG@10 on average" if _ok(row.flip_margin) else ""
            ranks += (f"; of the {int(row.oracle_first_pairs)} (LLM, oracle) pairs humans order oracle first, the judge puts "
                      f"the LLM system above in {int(flips)}{margin}")
        if not _ok(v):
            yield Finding("inversion", "inversion not measured: it needs both LLM and oracle systems.", row.dataset, row.judge,
                          brief="inversion n/a")
        elif v:
            yield Finding("inversion", f"INVERTS the LLM and oracle rankers ({ranks}).", row.dataset, row.judge, alert=True,
                          brief="INVERTED (LLM above oracles)")
        else:
            yield Finding("inversion", f"does not invert the LLM and oracle rankers ({ranks}).", row.dataset, row.judge,
                          brief="not inverted")


def _query_tau(row) -> str:
    """The per-query tau of the oracles "value [lo, hi]" (compare/analyses/ordering_agreement.py), or why there is
    none."""
    if row is None or not _ok(getattr(row, "query_tau_oracles", math.nan)):
        return "no per-query τ"
    return f"per-query τ = {row.query_tau_oracles:.2f} [{_n(row.query_tau_oracles_lo)}, {_n(row.query_tau_oracles_hi)}]"


def oracle_order(r: Report) -> Iterable[Finding]:
    """Can the judge order the oracle rankers (graded perturbations of the human ranking) as humans do: the section's
    own verdict (Table 6, ``oracles_verdict``: the per-query tau's t test, Holm-adjusted over the report's judges),
    with the per-query tau and its interval, and tau of the means as a point."""
    c = r.ci_tau
    rows = {(x.dataset, x.judge): x for x in c.itertuples(index=False)} if len(c) and "oracles_verdict" in c else {}
    for row in r.table2.itertuples(index=False):
        if "tau_oracles" not in r.table2.columns or not _ok(row.tau_oracles):
            continue
        tau = rows.get((row.dataset, row.judge))
        verdict = getattr(tau, "oracles_verdict", "") if tau is not None else ""
        head = ("orders the oracle rankers better than chance" if verdict == "better than chance" else
                "cannot be told from chance at ordering the oracle rankers" if verdict else "orders the oracle rankers")
        p = f", Holm p = {tau.query_tau_oracles_p_holm:.3g}" if verdict else ""
        text = (f"{head}: {_query_tau(tau)} against {r.options.reference} ({r.options.level:.0%} t interval over "
                f"queries{p}); "
                f"Kendall's τ of the mean orderings = {row.tau_oracles:.2f} over the oracles, {_n(row.tau_all)} over "
                "all systems.")
        brief = f"oracles {verdict or 'n/a'}, tau_oracles {row.tau_oracles:.2f}, tau_all {_n(row.tau_all)}"
        yield Finding("oracle order", text, row.dataset, row.judge, brief=brief)


def system_order(r: Report) -> Iterable[Finding]:
    """Where there are no oracle rankers (a leaderboard, imported results): how the judge orders the systems, in what
    Table 2, Table 6 and Table 4 say and nothing more: tau of the means and among the human top k (points), the
    per-query
    tau with its t interval, and the pairwise significance decisions against the humans'."""
    if "tau_all" not in r.table2.columns:
        return
    c, counts = r.ci_tau, getattr(r, "agreement_counts", None)
    taus = {(x.dataset, x.judge): x for x in c.itertuples(index=False)} if len(c) and "query_tau_all" in c else {}
    decided = ({(x.dataset, x.judge): x for x in counts.itertuples(index=False)}
               if counts is not None and len(counts) and "agree" in counts else {})
    for row in r.table2.itertuples(index=False):
        if _ok(getattr(row, "tau_oracles", math.nan)) or not _ok(row.tau_all):
            continue
        points = ", ".join(f"{name} {value:.2f}" for name, value in (("τ_AP", getattr(row, "tau_ap", math.nan)),
                           ("among the human top 5", getattr(row, "tau_top5", math.nan)),
                           ("top 10", getattr(row, "tau_top10", math.nan))) if _ok(value))
        parts = [f"Kendall's τ of the mean orderings = {row.tau_all:.2f}" + (f" ({points})" if points else "")]
        tau = taus.get((row.dataset, row.judge))
        if tau is not None and _ok(tau.query_tau_all):
            parts.append(f"per-query τ = {tau.query_tau_all:.2f} [{_n(tau.query_tau_all_lo)}, {_n(tau.query_tau_all_hi)}] "
                         f"({r.options.level:.0%} t interval over queries: how often, query by query, it orders two systems as "
                         f"{r.options.reference} does)")
        d = decided.get((row.dataset, row.judge))
        if d is not None:
            total = int(d.agree + d.missed + d.spurious + d.reversed)
            parts.append(f"its significance decisions agree with the humans' on {int(d.agree)} of {total} system pairs "
                         f"({int(d.missed)} missed, {int(d.spurious)} spurious, {int(d.reversed)} reversed)")
        per_query = f", per-query τ {tau.query_tau_all:.2f}" if tau is not None and _ok(tau.query_tau_all) else ""
        yield Finding("system order", "orders the systems: " + "; ".join(parts) + ".", row.dataset, row.judge,
                      brief=f"tau_all {row.tau_all:.2f}{per_query}")


# Landis and Koch's words for kappa (1977), the ones the LLM-judge papers use.
KAPPA_WORDS = ((0.8, "almost perfect"), (0.6, "substantial"), (0.4, "moderate"), (0.2, "fair"), (0.0, "slight"))


def kappa_word(kappa: float) -> str:
    return next((w for cut, w in KAPPA_WORDS if kappa > cut), "poor")


def agreement(r: Report) -> Iterable[Finding]:
    """Label agreement with the humans on the label set: graded kappa (and >= 2 binary), pairs labelled."""
    for row in r.table2.itertuples(index=False):
        k = getattr(row, "kappa_graded", math.nan)
        pairs = getattr(row, "labelled_pairs", math.nan)
        on = f" over {int(pairs):,} labelled pairs" if _ok(pairs) else ""
        relevant = getattr(row, "kappa_relevant", math.nan)
        if not _ok(k) and _ok(relevant):  # a judge on a scale that does not reach every human level (binary)
            yield Finding("label agreement", f"label agreement with the humans is {kappa_word(relevant)}: Cohen's κ = "
                          f"{relevant:.2f} on relevant or not{on}; its scale has no 0–3 grades, so no graded κ (no interval "
                          "computed).", row.dataset, row.judge, brief=f"binary kappa {relevant:.2f} ({kappa_word(relevant)})")
            continue
        if not _ok(k):
            continue
        text = (f"label agreement with the humans is {kappa_word(k)}: Cohen's κ = {k:.2f} on the 0–3 scale, "
                f"{_n(getattr(row, 'kappa_ge2', math.nan))} on relevant (≥ 2) or not{on} (no interval computed).")
        yield Finding("label agreement", text, row.dataset, row.judge, brief=f"kappa {k:.2f} ({kappa_word(k)})")


def self_preference(r: Report) -> Iterable[Finding]:
    """Where a judge shares a family with rankers: the section's own verdict (the ``verdict`` column of
    compare/analyses/self_preference.py: a direction only with the interval off 0 and the Holm-adjusted p below alpha),
    with its interval and Holm p; nothing is decided here."""
    for row in r.self_preference["self_preference"].itertuples(index=False):
        value, lo, hi = row.self_preference, row.lo, row.hi
        interval = f"{value:+.3f} [{lo:+.3f}, {hi:+.3f}] nDCG@10" if _ok(lo, hi) else f"{value:+.3f} nDCG@10 (no interval)"
        p_holm = getattr(row, "p_holm", math.nan)
        p = f", Holm p = {p_holm:.3g}" if _ok(p_holm) else ""
        said = getattr(row, "verdict", "")
        if said == "favours":
            text, alert = f"favours its own family's ({row.judge_family}) rankers by {interval}{p}.", True
        elif said == "disfavours":
            text, alert = (f"rates its own family's ({row.judge_family}) rankers below the other LLM rankers, by {interval}{p}.",
                           False)
        else:
            text, alert = f"no evidence of self-preference for its family {row.judge_family} ({interval}{p}).", False
        yield Finding("self-preference", text, row.dataset, row.judge, alert, brief=f"self-preference {interval}")


def calibration(r: Report) -> Iterable[Finding]:
    """Where calibration= was asked: how many human-labelled queries remove the inversion, and whether the judge adds
    anything over those human labels alone."""
    for row in r.calibration_summary.itertuples(index=False) if len(r.calibration_summary) else ():
        k = row.k_no_inversion
        if not _ok(k):
            text = "calibration: none of the human budgets tried removes the inversion."
        else:
            adds = {True: "the judge adds to the human labels there", False: "the judge adds nothing over those human labels alone",
                    None: ""}.get(row.judge_adds if isinstance(row.judge_adds, bool) else None, "")
            text = (f"calibration: {int(k)} human-labelled queries remove the inversion ({row.estimators_at_k}); best "
                    "τ there "
                    f"{_n(row.tau_best_at_k)} vs {_n(row.tau_human_only_at_k)} from the human labels alone"
                    + (f"; {adds}." if adds else "."))
        yield Finding("calibration", text, row.dataset, row.judge,
                      brief=f"calibration: no inversion from k = {int(k)}" if _ok(k) else "calibration: inversion at every k")


def grid(r: Report) -> Iterable[Finding]:
    """Whether the selection is complete: cells without a finished run, those still running counted."""
    missing, running = len(r.missing), len(r.running)
    total = len(r.jobs) + r.rewritten_runs + missing
    if missing:
        still = f"{running} still running, " if running else ""
        yield Finding("grid", f"{missing} of {total} grid cells have no finished run yet ({still}{missing - running} not started "
                              "or failed): the numbers below are of the finished cells only.", alert=True)
    else:
        yield Finding("grid", f"all {total} grid cells have a finished run.")


def discrimination(r: Report) -> Iterable[Finding]:
    """Per dataset, how the judges order the oracle rankers against their construction order and whether label
    agreement predicts it, where the report holds that analysis (``r.discrimination``:
    compare/analyses/discrimination.py's
    answers, table and human pair counts; read by attribute, so this module needs no import of it)."""
    d = getattr(r, "discrimination", None)
    if not d:
        return
    for dataset, sentence in d.answers.items():
        t = d.table[d.table["dataset"] == dataset]
        sig, total = d.human.get(dataset, (0, 0))
        best = int(t["as_constructed"].max()) if len(t) else 0
        head = (f"humans order {sig} of {total} oracle pairs as constructed; {int((t['as_constructed'] == best).sum())} of "
                f"{len(t)} judges order {best} (sign test per pair, Holm over the pairs). ")
        yield Finding("discrimination", head + sentence, dataset, brief=head + sentence.partition(": ")[0])


# The analyses whose results open the report, in the order they are shown. Append one to add a finding.
PRODUCERS: list[Callable[[Report], Iterable[Finding]]] = [grid, inversion, oracle_order, system_order, agreement,
                                                        self_preference, calibration, discrimination]


def findings(r: Report) -> list[Finding]:
    """Every producer's findings, the selection-wide ones first, then per (dataset, judge) in report order."""
    found = [f for produce in PRODUCERS for f in produce(r)]
    order = {(d, j): n for n, (d, j) in enumerate(dict.fromkeys(zip(r.table2.get("dataset", []), r.table2.get("judge", []))))}
    return sorted(found, key=lambda f: (f.judge != GRID, order.get((f.dataset, f.judge), len(order))))


def grouped(found: list[Finding]) -> dict[str, list[Finding]]:
    """{subject: its findings} in order: what each renderer shows under one heading per (dataset, judge)."""
    out: dict[str, list[Finding]] = {}
    for f in found:
        out.setdefault(f.subject, []).append(f)
    return out
