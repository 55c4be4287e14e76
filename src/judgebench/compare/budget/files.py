"""The planner's files and the read-back: the plan (every query, its stratum, inclusion probability and whether
it is to be labelled), a TREC qrels template of the selected queries' pairs per (dataset, judge), and the
human labels that come back, turned into corrected estimates with the plan's probabilities.

The read-back scores each system's run with the returned labels (the evaluation core, the judged-only
protocol: the returned labels are the human labels of the judge's pairs of those queries, i.e. its
``human_judged`` reference there) and estimates with the plan's design from those labels alone; queries of
the plan that come back without labels count as not sampled (fine for a random subset; a subset chosen by
what the labels say would bias it).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from judgebench.compare.base import names
from judgebench.compare.budget import labelling_sheet
from judgebench.compare.budget.experiment import LEVELS, Cell
from judgebench.compare.budget.plan import Plan, estimate
from judgebench.data import trec
from judgebench.evaluation import evaluate
from judgebench.exceptions import CompareError, DataError
from judgebench.metrics import designs

PLAN_FILE = "human_budget_plan.tsv"
PLAN_COLUMNS = ["dataset", "judge", "strategy", "budget", "query_id", "stratum", "inclusion_probability", "selected"]
ESTIMATES = [
    "dataset",
    "judge",
    "strategy",
    "target",
    "system",
    "other",
    "estimate",
    "low",
    "high",
    "rank",
    "labelled_queries",
    "unlabelled_outliers",
]  # unlabelled queries where the row's system (or either of the pair) has an outlying judge value


def template_name(dataset: str, judge: str) -> str:
    return f"human_budget_qrels_{names.file_part(dataset)}_{names.file_part(judge)}.txt"


def write(plans: list[Plan], labels: pd.DataFrame, out: Path) -> list[Path]:
    """human_budget_plan.tsv and one qrels template per plan: ``query_id 0 doc_id <empty label>`` per pair the
    judge labelled on a selected query (the pairs its human reference is made of)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / PLAN_FILE
    pd.concat([p.rows() for p in plans], ignore_index=True).to_csv(path, sep="\t", index=False, float_format="%.17g")
    files = [path]
    for p in plans:
        lab = _template_pairs(labels, p.dataset, p.judge, {q for q, s in zip(p.queries, p.selected) if s})
        t = out / template_name(p.dataset, p.judge)
        t.write_text("".join(f"{q}\t0\t{d}\t\n" for q, d in zip(lab["query_id"], lab["doc_id"])), encoding="utf-8")
        files.append(t)
    return files


def _template_pairs(labels: pd.DataFrame, dataset: str, judge: str, chosen: set[str]) -> pd.DataFrame:
    """The pairs a plan's template asks for: those the judge labelled on the selected queries, in file order."""
    lab = labels[(labels["dataset"] == dataset) & (labels["judge"] == judge)]
    lab = lab[lab["query_id"].astype(str).isin(chosen)].drop_duplicates(["query_id", "doc_id"])
    return lab.sort_values(["query_id", "doc_id"], key=lambda c: c.astype(str))


def templates(plan: pd.DataFrame, labels: pd.DataFrame) -> dict[str, dict[str, set[str]]]:
    """Per selected query, the documents each template holding it asks for ({query: {template name: docs}}),
    rebuilt from the plan and the judges' labels exactly as :func:`write` wrote them."""
    out: dict[str, dict[str, set[str]]] = {}
    for (dataset, judge), rows in plan.groupby(["dataset", "judge"], sort=False):
        chosen = set(rows.loc[rows["selected"] == 1, "query_id"].astype(str))
        lab = _template_pairs(labels, dataset, judge, chosen)
        for q, d in zip(lab["query_id"].astype(str), lab["doc_id"].astype(str)):
            out.setdefault(q, {}).setdefault(template_name(dataset, judge), set()).add(d)
    return out


def read_plan(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise CompareError(
            f"calibration.human_labels: no plan at {path}; write one first with plan=budget budget=K (same out=)"
        )
    plan = pd.read_csv(path, sep="\t", dtype={"dataset": str, "judge": str, "query_id": str, "strategy": str})
    missing = [c for c in PLAN_COLUMNS if c not in plan.columns]
    if missing:
        raise CompareError(f"{path}: not a plan file, columns {missing} missing (expected {', '.join(PLAN_COLUMNS)})")
    return plan


def read_labels(path: Path, plan: pd.DataFrame, template: dict[str, dict[str, set[str]]] | None = None) -> pd.DataFrame:
    """TREC qrels ``query_id iteration doc_id label`` (label one ASCII digit 0..3), read by the package's one
    qrels reader (``data/trec.qrels_fields``: strict UTF-8, a spreadsheet's byte-order mark skipped). Every query
    must be one the plan selected; with ``template`` (:func:`templates`), every pair one the template asked for,
    and a query either labelled whole or left out (its lines all deleted): a partial query would be scored as if
    complete. Anything else is an error naming the file, the line and what was expected."""
    if not path.is_file():
        raise CompareError(f"calibration.human_labels={path}: no such file")
    chosen = set(plan.loc[plan["selected"] == 1, "query_id"].astype(str))
    labels = tuple(str(v) for v in range(LEVELS))
    rows = []
    try:
        for no, parts in trec.qrels_fields(path):
            if parts[0].startswith("#"):
                continue
            if len(parts) != 4:
                raise CompareError(
                    f"{path}, line {no}: {' '.join(parts)!r}: expected 4 columns 'query_id 0 doc_id label'"
                    + (" (the label is empty: fill in 0-3)" if len(parts) == 3 else "")
                )
            q, _, d, label = parts
            if label not in labels:  # ASCII only: str.isdigit() and int() also take '²' and '٣'
                raise CompareError(f"{path}, line {no}: label {label!r}: expected a whole number 0 to {LEVELS - 1}")
            if q not in chosen:
                raise CompareError(
                    f"{path}, line {no}: query {q!r} is not one the plan selected ({PLAN_FILE}); "
                    "label only the plan's queries"
                )
            rows.append((q, d, int(label), no))
    except DataError as e:  # unreadable: not UTF-8, not a file
        raise CompareError(f"calibration.human_labels: {e}") from None
    if not rows:
        raise CompareError(f"{path}: no labels in it (expected lines 'query_id 0 doc_id label')")
    out = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "line"])
    dup = out[out.duplicated(["query_id", "doc_id"], keep="first")]
    if len(dup):
        r = dup.iloc[0]
        raise CompareError(f"{path}, line {r['line']}: pair ({r['query_id']}, {r['doc_id']}) labelled twice")
    if template is not None:
        check_template(path, out, template)
    return out.drop(columns="line")


def check_template(path: Path, out: pd.DataFrame, template: dict[str, dict[str, set[str]]]) -> None:
    """Labels read back (with their ``line``) hold only pairs a template asked for, and each labelled query whole:
    another document would enter the ideal DCG, and a partial query would be scored as if complete."""
    for q, d, no in zip(out["query_id"], out["doc_id"], out["line"]):
        if not any(d in docs for docs in template.get(q, {}).values()):
            raise CompareError(
                f"{path}, line {no}: pair ({q}, {d}) is not one the template asked for "
                f"({', '.join(sorted(template.get(q, {}))) or 'no template holds query ' + q}); "
                "label only the template's pairs (another document would enter the ideal DCG)"
            )
    _whole_queries(path, out, template)


def _whole_queries(path: Path, out: pd.DataFrame, template: dict[str, dict[str, set[str]]]) -> None:
    """Each labelled query holds every pair of (at least) one template that asks for it."""
    for q, got in out.groupby("query_id", sort=False):
        done = set(got["doc_id"])
        name, docs = min(template[q].items(), key=lambda kv: (len(kv[1] - done), kv[0]))
        missing = sorted(docs - done)
        if missing:
            raise CompareError(
                f"{path}, line {int(got['line'].min())}: query {q!r} has {len(docs) - len(missing)} of the "
                f"{len(docs)} pairs "
                f"of {name} labelled ({missing[0]} and {len(missing) - 1} more missing): expected every pair of "
                "the query "
                "labelled, or all its lines deleted to leave it out (a partial query would be scored as if complete)"
            )


def design_of(rows: pd.DataFrame):
    """The plan's design rebuilt from its rows (one dataset and judge, in query order)."""
    strategy = rows["strategy"].iloc[0]
    pi = rows["inclusion_probability"].to_numpy(float)
    if strategy == "uniform":
        return designs.Uniform(int(rows["budget"].iloc[0]), len(rows))
    if strategy == "stratified":
        strata = rows["stratum"].to_numpy(int)
        sizes = np.bincount(strata)
        return designs.Stratified(
            strata, np.rint(np.array([pi[strata == h][0] for h in range(len(sizes))]) * sizes).astype(int)
        )
    if strategy == "active":
        return designs.Active(pi)
    raise CompareError(f"{PLAN_FILE}: strategy {strategy!r}: expected one of {', '.join(designs.STRATEGIES)}")


def human_values(
    cell: Cell, qrels: pd.DataFrame, runs: dict[tuple[str, str], pd.DataFrame]
) -> tuple[np.ndarray, np.ndarray]:
    """(S, n) each system's nDCG@10 under the returned labels on the labelled queries (0 elsewhere, never read)
    and the (n,) mask of labelled queries."""
    labelled = sorted(set(qrels["query_id"]) & set(cell.queries))
    mask = np.isin(cell.queries, labelled)
    y = np.zeros((len(cell.systems), len(cell.queries)))
    for s, system in enumerate(cell.systems):
        run = runs.get((cell.dataset, system))
        if run is None:
            raise CompareError(
                f"calibration.human_labels: no run file of {system} on {cell.dataset} to score the labels with"
            )
        v = evaluate(run, {"h": qrels}, labelled).set_index("query_id")["h"]
        y[s, mask] = v.reindex([q for q, k in zip(cell.queries, mask) if k]).fillna(0.0).to_numpy()
    return y, mask


def readback(cells: list[Cell], plan: pd.DataFrame, qrels: pd.DataFrame, runs, level: float = 0.95) -> pd.DataFrame:
    """Corrected estimates, intervals and ranks of every system (and every pair's difference) of each planned
    (dataset, judge) that got labels, from the returned labels alone."""
    out = []
    for cell in cells:
        rows = plan[(plan["dataset"] == cell.dataset) & (plan["judge"] == cell.judge)]
        if rows.empty:
            continue
        rows = rows.set_index("query_id")
        if sorted(rows.index) != sorted(cell.queries):
            raise CompareError(
                f"{PLAN_FILE}: the plan of {cell.dataset}/{cell.judge} has other queries than the runs "
                f"({len(rows)} vs {len(cell.queries)}); write the plan again"
            )
        rows = rows.loc[cell.queries].reset_index()
        chosen = set(
            rows.loc[rows["selected"] == 1, "query_id"]
        )  # another plan's queries in the same file are not this one's
        y, mask = human_values(cell, qrels[qrels["query_id"].isin(chosen)], runs)
        if mask.sum() < 2:
            continue
        d = design_of(rows)
        i, j = np.triu_indices(len(cell.systems), k=1)
        yy, ff = np.vstack([y, y[i] - y[j]]), np.vstack([cell.f, cell.f[i] - cell.f[j]])
        e, half = estimate(d, yy, ff, mask[None, :], level)
        point, half = e.point[0], half[0]
        far = designs.outlying(cell.f) & ~mask[None, :]  # (S, n): a system's judge value outlying, unlabelled
        far = np.vstack([far, far[i] | far[j]])  # a difference's: either system's
        outliers = [",".join(str(q) for q, x in zip(cell.queries, row) if x) for row in far]
        m = len(cell.systems)
        rank = pd.Series(-point[:m]).rank(method="min").astype(int).to_numpy()
        base = {
            "dataset": cell.dataset,
            "judge": cell.judge,
            "strategy": rows["strategy"].iloc[0],
            "labelled_queries": int(mask.sum()),
        }
        out += [
            {
                **base,
                "target": "mean",
                "system": s,
                "other": "",
                "estimate": point[a],
                "low": point[a] - half[a],
                "high": point[a] + half[a],
                "rank": int(rank[a]),
                "unlabelled_outliers": outliers[a],
            }
            for a, s in enumerate(cell.systems)
        ]
        out += [
            {
                **base,
                "target": "difference",
                "system": cell.systems[a],
                "other": cell.systems[b],
                "estimate": point[m + p],
                "low": point[m + p] - half[m + p],
                "high": point[m + p] + half[m + p],
                "rank": "",
                "unlabelled_outliers": outliers[m + p],
            }
            for p, (a, b) in enumerate(zip(i, j))
        ]
    if not out:
        raise CompareError("calibration.human_labels: no planned (dataset, judge) got labels on 2 or more queries")
    return pd.DataFrame(out, columns=ESTIMATES)


def build(cells: list[Cell], labels: pd.DataFrame, runs, opt) -> dict:
    """What the report holds for plan=budget (plans, their rows, predictions, measured widths) or for
    calibration.human_labels= (the plan read and the read-back's estimates)."""
    from judgebench.compare.budget import plan as budget_plan
    from judgebench.compare.budget import signals as budget_signals

    if opt.human_labels:
        if opt.plan_dir is None:
            raise CompareError("calibration.human_labels: no folder to read the plan from (Options.plan_dir)")
        plan = read_plan(Path(opt.plan_dir) / PLAN_FILE)
        path, template = Path(opt.human_labels), templates(plan, labels)
        if labelling_sheet.is_sheet(path):  # a filled assessor's sheet (labelling_sheet.py): the same template rules
            rows = labelling_sheet.read(path, plan, LEVELS, lines=True)
            check_template(path, rows, template)
            qrels = rows.drop(columns="line")
        else:  # a TREC qrels file
            qrels = read_labels(path, plan, template)
        return {"readback": readback(cells, plan, qrels, runs, opt.level)}
    plans, preds, meas = [], [], []
    for cell in cells:
        pairs = budget_plan.pairs_of(cell, opt.pairs)
        u = budget_signals.signal(opt.signal, cell, cells, labels)
        p = budget_plan.make(cell, opt.strategy, opt.budget, opt.seed, u, opt.signal, opt.allocation)
        plans.append(p)
        preds.append(budget_plan.predictions(cell, p, pairs, opt.alpha, opt.level))
        meas.append(
            budget_plan.measured(
                cell,
                pairs,
                sorted({*budget_plan.FIGURE_K, p.budget}),
                opt.resamples,
                opt.seed,
                opt.level,
                u,
                opt.allocation,
            )
        )
    if not plans:
        raise CompareError(
            "plan=budget: no (dataset, judge) with 2 or more systems and queries under the judge and its reference"
        )
    return {
        "plans": plans,
        "plan": pd.concat([p.rows() for p in plans], ignore_index=True),
        "predictions": pd.concat(preds, ignore_index=True),
        "measured": pd.concat(meas, ignore_index=True),
    }
