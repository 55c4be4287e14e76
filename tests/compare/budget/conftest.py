"""The budget planner's tests share one toy cell: four simulated rankers of rising bias, a simulated judge, the
toy's human qrels, built in-process once per session (tests must not change it)."""

from __future__ import annotations

import pandas as pd
import pytest

from judgebench.compare.base import tables
from judgebench.compare.base.reference import References
from judgebench.compare.budget import experiment as budget
from judgebench.data.datasets import load_toy
from judgebench.evaluation import HUMAN_JUDGED, HUMAN_LABELSET, evaluate, restrict
from judgebench.judges.simulated import SimulatedJudge
from judgebench.rankers.simulated import SimulatedLLMRanker


@pytest.fixture(scope="session")
def toy_cell():
    ds = load_toy()
    label_set = ds.label_set()
    queries = [str(q) for q in ds.judged_queries()]
    human = restrict(ds.qrels, label_set)
    judge = SimulatedJudge(name="sim", family="simulated-7", weight=1.0, noise=0.3, seed=3)
    jq = judge.judge(label_set[["query_id", "doc_id"]], ds, ds.corpus).qrels
    rows, jobs, runs = [], [], {}
    for i, w in enumerate((0.0, 1.0, 2.5, 4.0)):
        r = SimulatedLLMRanker(name=f"R{i}", family="simulated-7", weight=w, noise=0.3, seed=10 + i)
        run = r.rank(ds, ds.corpus)
        runs[("toy", r.name)] = run
        v = evaluate(run, {HUMAN_LABELSET: human, "sim": jq}, queries)
        for name, role, col in (
            (HUMAN_LABELSET, HUMAN_LABELSET, HUMAN_LABELSET),
            ("sim", "judge", "sim"),
            ("sim", HUMAN_JUDGED, HUMAN_LABELSET),
        ):
            rows += [("toy", r.name, name, role, q, x) for q, x in zip(v["query_id"], v[col])]
        jobs.append(
            {
                "dataset": "toy",
                "system": r.name,
                "ranker_type": "llm" if w else "oracle",
                "judge": "sim",
                "start_time": i,
            }
        )
    pq = pd.DataFrame(rows, columns=["dataset", "system", "judge", "role", "query_id", "value"])
    t1 = tables.table1(pq, tables.system_types(pd.DataFrame(jobs)), [HUMAN_LABELSET, "sim"], ["toy"])
    lab = jq.merge(human.rename(columns={"relevance": "human"}), on=["query_id", "doc_id"]).assign(
        dataset="toy", judge="sim"
    )
    (cell,) = budget.cells(pq, t1, lab, References(pq, HUMAN_JUDGED), None, [])
    return {"cell": cell, "labels": lab, "runs": runs, "human": ds.qrels, "pq": pq}
