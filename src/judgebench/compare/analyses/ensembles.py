"""Virtual judges: ensembles and panels built from existing judges' labels, with no new calls.

A panel of judges from different families is the usual proposed remedy for a judge's
self-preference; building it from labels already paid for lets a user see, in the same
tables, whether it removes the inversion. A virtual judge's nDCG is recomputed from each
system's logged run file against the virtual qrels (judged only, as in the pipeline).

Rules, per (query, doc) over the members that labelled it (a member's failed call is left out):
- majority: the most frequent label; a tie goes to the lowest tied label (conservative);
- mean: the mean label rounded half up (floor(mean + 0.5)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judgebench import label_scale
from judgebench.compare.base.artifacts import HUMAN, LABELS, PER_QUERY, REFERENCES
from judgebench.compare.base.reference import HUMAN_JUDGED, OWN, ROLE
from judgebench.compare.base.report_model import VirtualJudge  # a report's record of one, kept in the base
from judgebench.evaluation import evaluate
from judgebench.exceptions import CompareError
from judgebench.identity.text_view import ORIGINAL
from judgebench.metrics.agreement import LEVELS

NOT_PANEL_FAMILIES = (HUMAN, "simulated")


def majority(labels: np.ndarray) -> np.ndarray:
    """Row-wise most frequent label of a (pairs x members) array with nan for no label; ties -> lowest."""
    counts = np.stack([(labels == level).sum(axis=1) for level in LEVELS], axis=1)
    out = np.asarray(LEVELS, dtype=float)[counts.argmax(axis=1)]  # argmax takes the first (lowest) maximum
    out[counts.sum(axis=1) == 0] = np.nan
    return out


def mean_rounded(labels: np.ndarray) -> np.ndarray:
    """Row-wise mean label, rounded half up (np.rint would round 1.5 and 2.5 in opposite directions)."""
    valid = ~np.isnan(labels)
    n = valid.sum(axis=1)
    mean = np.where(n > 0, np.where(valid, labels, 0).sum(axis=1) / np.maximum(n, 1), np.nan)
    return np.floor(mean + 0.5)


RULES = {"majority": majority, "mean": mean_rounded}


def default_panel(judges: list[str], families: dict[str, str]) -> list[str]:
    """One judge per family among non-human, non-simulated families if >= 2 exist, else all non-human judges."""
    first: dict[str, str] = {}
    for j in judges:
        fam = families.get(j, j)
        simulated = str(fam).startswith(
            "simulated-"
        )  # a simulated family (judgebench.judges.simulation) is no real model family
        if j not in REFERENCES and fam not in NOT_PANEL_FAMILIES and not simulated:
            first.setdefault(fam, j)
    if len(first) >= 2:
        return list(first.values())
    return [j for j in judges if j not in REFERENCES]


def plan(judges: list[str], families: dict[str, str], panel: list[str] | None = None) -> list[VirtualJudge]:
    """The virtual judges for these real judges: none with fewer than 2 non-human judges."""
    real = [j for j in judges if j not in REFERENCES]
    if panel:
        unknown = [p for p in panel if p not in real]
        if unknown:
            raise CompareError(f"panel names judges without runs here: {unknown}; judges: {real}")
        if len(set(panel)) < 2:
            raise CompareError(f"a panel needs at least 2 distinct judges, got {panel}")
    if len(real) < 2:
        return []
    out = [
        VirtualJudge("majority", tuple(real), "majority"),
        VirtualJudge("mean_label", tuple(real), "mean"),
        VirtualJudge("panel", tuple(dict.fromkeys(panel or default_panel(real, families))), "majority"),
    ]
    clash = [v.name for v in out if v.name in judges]
    if clash:
        raise CompareError(f"real judges named like virtual ones: {clash}; rename them in the judge config")
    return out


def distinct(virtual: list[VirtualJudge]) -> tuple[list[VirtualJudge], dict[str, str]]:
    """(the virtual judges with distinct labels, {dropped name: the identical kept one}): a panel with the
    members and rule of the majority (the default panel when the judges span fewer than 2 families) is the
    same judge, reported once ("panel = majority here") rather than as a duplicate column everywhere."""
    kept: list[VirtualJudge] = []
    aliases: dict[str, str] = {}
    for v in virtual:
        same = next((k for k in kept if set(k.members) == set(v.members) and k.rule == v.rule), None)
        if same is None:
            kept.append(v)
        else:
            aliases[v.name] = same.name
    return kept, aliases


def virtual_labels(labels: pd.DataFrame, vj: VirtualJudge, problems: list[str] | None = None) -> pd.DataFrame:
    """The virtual judge's labels (LABELS columns) per dataset, original text view; a dataset where a
    member has no labels is skipped and listed in ``problems``."""
    frames = []
    orig = labels[(labels["text_view"] == ORIGINAL) & labels["judge"].isin(vj.members)]
    for dataset in labels["dataset"].unique():
        d = orig[orig["dataset"] == dataset]
        present = set(d["judge"])  # once: per member it was a pass over every judge's labels (seconds at 100 judges)
        absent = [m for m in vj.members if m not in present]
        if absent:
            if problems is not None:
                problems.append(f"{dataset}: virtual judge {vj.name} not built, no labels from {absent}")
            continue
        wide = d.pivot_table(index=["query_id", "doc_id"], columns="judge", values="relevance", aggfunc="first")
        wide = wide.reindex(columns=list(vj.members))
        human = d.groupby(["query_id", "doc_id"])["human"].first().reindex(wide.index)
        value = RULES[vj.rule](wide.to_numpy(dtype=float))
        out = wide.index.to_frame(index=False).assign(relevance=value, human=human.to_numpy())
        out = out.dropna(subset=["relevance"]).astype({"relevance": int, "human": int})
        # its labels are human levels; its scale the levels its members' scales reach (binary members: 0 and 2 only,
        # so its graded statistics are not comparable, as theirs are not)
        reach = sorted(
            {
                level
                for t in (d["scale"].dropna().unique() if "scale" in d else ())
                for level in label_scale.from_tag(t).to_human
            }
            or label_scale.HUMAN_LEVELS
        )
        scale = label_scale.parse({"labels": reach, "to_human": reach, "name": "members' levels"})
        frames.append(
            out.assign(dataset=dataset, judge=vj.name, text_view=ORIGINAL, label=out["relevance"], scale=scale.tag())[
                LABELS
            ]
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=LABELS)


def virtual_per_query(
    runs: dict[tuple[str, str], pd.DataFrame], vlabels: pd.DataFrame, queries: dict[str, list[str]]
) -> pd.DataFrame:
    """Per-query nDCG@10 of every logged run against each virtual judge's qrels, over the dataset's
    evaluated ``queries`` (the same protocol and query set as the pipeline's judges), and against the human
    labels of the pairs it labelled (its human_judged reference: rows of role "human_judged", as a real judge's)."""
    frames = []
    for (dataset, judge), lab in vlabels.groupby(["dataset", "judge"], sort=False):
        qrels = {
            "value": lab[["query_id", "doc_id", "relevance"]],
            "human": lab[["query_id", "doc_id", "human"]].rename(columns={"human": "relevance"}),
        }
        for (d, system), run in runs.items():
            if d == dataset:
                pq = evaluate(run, qrels, queries[dataset])
                frames.append(pq.assign(dataset=dataset, system=system, judge=judge, **{ROLE: OWN})[PER_QUERY])
                frames.append(
                    pq.drop(columns="value")
                    .rename(columns={"human": "value"})
                    .assign(dataset=dataset, system=system, judge=judge, **{ROLE: HUMAN_JUDGED})[PER_QUERY]
                )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=PER_QUERY)
