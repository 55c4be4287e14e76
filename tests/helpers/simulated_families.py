"""A toy grid of simulated families built in-process: the frames compare's self-preference analysis reads.

Rankers of two simulated families (A, B) and simulated judges; each judge's prior is the family it is *built*
with, while the family it is *reported* under (its ``judge_family`` in the jobs frame) may differ: a judge built
on family C but reported as A is unrelated to A's rankers (no planted effect). nDCG@10 is the pipeline's
(``evaluation.evaluate``) or, for the many-seed runs, the plain-Python reference implementation (the same
numbers, checked in the tests; ~10x faster on frames this small).
"""

from __future__ import annotations

import zlib
from functools import lru_cache

import pandas as pd

from judgebench.compare.base import tables
from judgebench.compare.base.reference import OWN, References
from judgebench.data.datasets import load_toy
from judgebench.evaluation import HUMAN_JUDGED, HUMAN_LABELSET, evaluate, restrict
from judgebench.judges.simulated import SimulatedJudge
from judgebench.rankers.simulated import SimulatedLLMRanker
from reference_impl import frame_rows, ndcg10_judged


@lru_cache(maxsize=1)
def toy():
    return load_toy()


def _seed(*parts: object) -> int:
    return zlib.crc32("/".join(map(str, parts)).encode()) % 10_000  # stable across processes, unlike hash()


def _per_query(run: pd.DataFrame, qrels: dict[str, pd.DataFrame], queries: list[str], pipeline: bool) -> pd.DataFrame:
    if pipeline:
        return evaluate(run, qrels, queries)
    rows = frame_rows(run, "query_id", "doc_id", "rank")
    out = pd.DataFrame({"query_id": [str(q) for q in queries]})
    for name, q in qrels.items():
        values = ndcg10_judged(rows, frame_rows(q, "query_id", "doc_id", "relevance"), queries)
        out[name] = out["query_id"].map(values)
    return out


def grid(
    tag: str,
    judge_priors: dict[str, str],
    reported: dict[str, str] | None = None,
    rankers_per_family: int = 2,
    ranker_weight: float = 2.5,
    judge_weight: float = 1.0,
    pipeline: bool = False,
):
    """(per_query, t1, jobs, refs) of rankers of families simulated-A<tag>, simulated-B<tag> x the judges
    ``judge_priors`` {judge name: the family letter its prior comes from}, reported under ``reported``
    {name: letter} (default: the prior's family)."""
    ds = toy()
    reported = reported or judge_priors
    fam = lambda letter: f"simulated-{letter}{tag}"  # noqa: E731
    label_set = ds.label_set()
    queries = ds.judged_queries()
    human = restrict(ds.qrels, label_set)  # = human_judged of every judge: a simulated judge labels every pair
    qrels = {HUMAN_LABELSET: human}
    for name, letter in judge_priors.items():
        judge = SimulatedJudge(name=name, family=fam(letter), weight=judge_weight, noise=0.3, seed=_seed(tag, name))
        qrels[name] = judge.judge(label_set[["query_id", "doc_id"]], ds, ds.corpus).qrels
    rows, jobs = [], []
    for letter in ("A", "B"):
        for k in range(rankers_per_family):
            ranker = SimulatedLLMRanker(
                name=f"Sim{letter}{k}", family=fam(letter), weight=ranker_weight, noise=0.3, seed=_seed(tag, letter, k)
            )
            scores = _per_query(ranker.rank(ds, ds.corpus), qrels, queries, pipeline)
            rows.append(
                scores[["query_id", HUMAN_LABELSET]]
                .rename(columns={HUMAN_LABELSET: "value"})
                .assign(judge=HUMAN_LABELSET, role=HUMAN_LABELSET)
            )
            for name in judge_priors:
                rows.append(scores[["query_id", name]].rename(columns={name: "value"}).assign(judge=name, role=OWN))
                rows.append(
                    scores[["query_id", HUMAN_LABELSET]]
                    .rename(columns={HUMAN_LABELSET: "value"})
                    .assign(judge=name, role=HUMAN_JUDGED)
                )
                jobs.append(
                    {
                        "dataset": "toy",
                        "system": ranker.name,
                        "ranker_type": "llm",
                        "ranker_family": fam(letter),
                        "judge": name,
                        "judge_family": fam(reported[name]),
                        "start_time": len(jobs),
                    }
                )
            rows[-1 - 2 * len(judge_priors) :] = [
                r.assign(dataset="toy", system=ranker.name) for r in rows[-1 - 2 * len(judge_priors) :]
            ]
    per_query = pd.concat(rows, ignore_index=True)[["dataset", "system", "judge", "role", "query_id", "value"]]
    jobs = pd.DataFrame(jobs)
    t1 = tables.table1(per_query, tables.system_types(jobs), [HUMAN_LABELSET, *judge_priors], ["toy"])
    return per_query, t1, jobs, References(per_query, HUMAN_JUDGED)
