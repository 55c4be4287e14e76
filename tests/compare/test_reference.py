"""What a per-query row is, the frame's ``role`` column says (compare/base/reference.py): a judge's human_judged rows
are ``judge == J, role == "human_judged"``, found by the column, never by a name like ``human_judged[J]``.

Checked on the session's toy grid (tests/conftest.py: 8 systems x human and two simulated judges), read as compare
reads it, against nDCG@10 recomputed here from the logged run files and labels (tests/helpers/reference_impl.py); and on
a virtual judge built from labels with pairs taken out (failed calls), where its human_judged values differ from
human_labelset's, so a reference read from the wrong rows would show.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from judgebench.compare.analyses import ensembles
from judgebench.compare.base import tables
from judgebench.compare.base.artifacts import Artifacts
from judgebench.compare.base.reference import ROLES, References
from reference_impl import frame_rows, ndcg10_judged

JUDGES = ("simulated", "simulated_unbiased")


@pytest.fixture(scope="module")
def toy(toy_grid_store):
    """The grid's job runs, per-query frame, labels and run files, read by compare's Artifacts (the store only read)."""
    client = MlflowClient(f"sqlite:///{toy_grid_store}/mlruns/mlflow.db")
    exp = client.get_experiment_by_name("grid").experiment_id
    runs = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'job'")
    jobs = pd.DataFrame([{**r.data.tags, "run_id": r.info.run_id} for r in runs])
    art = Artifacts(client)
    out = {"per_query": art.per_query(jobs), "labels": art.labels(jobs), "runs": art.runs(jobs)}
    assert not art.problems, art.problems
    return out


def _by_hand(run: pd.DataFrame, labels: pd.DataFrame, column: str, queries: list[str]) -> dict[str, float]:
    """nDCG@10 of ``run`` on ``queries`` with ``labels[column]`` as the relevance of the pairs in ``labels``."""
    return ndcg10_judged(
        frame_rows(run, "query_id", "doc_id", "rank"), frame_rows(labels, "query_id", "doc_id", column), queries
    )


def _values(rows: pd.DataFrame, system: str) -> dict[str, float]:
    return dict(zip(rows.loc[rows["system"] == system, "query_id"], rows.loc[rows["system"] == system, "value"]))


def test_no_judge_is_named_after_a_reference_the_role_column_says(toy):
    pq = toy["per_query"]
    assert not pq["judge"].str.contains(r"[\[\]]").any()
    assert set(pq["role"]) == set(ROLES) == {"judge", "human_judged", "human_labelset", "human"}
    pairs = set(zip(pq["judge"], pq["role"]))
    assert pairs == {
        ("human", "human"),
        ("human_labelset", "human_labelset"),
        *((j, "judge") for j in JUDGES),
        *((j, "human_judged") for j in JUDGES),
    }
    # one row per (system, judge, role, query): 8 systems x 12 queries for each pair
    assert pq.groupby(["judge", "role"]).size().eq(8 * 12).all()


@pytest.mark.parametrize("judge", JUDGES)
def test_a_judges_reference_rows_are_found_by_the_column_and_are_its_human_labels(toy, judge):
    pq, labels, runs = toy["per_query"], toy["labels"], toy["runs"]
    lab = labels[(labels["judge"] == judge) & (labels["text_view"] == "original")]
    refs = References(pq, "human_judged")
    reference, own = refs.rows("toy", judge), pq[(pq["judge"] == judge) & (pq["role"] == "judge")]
    assert set(reference["role"]) == {"human_judged"} and set(reference["judge"]) == {judge}
    disagree = 0
    for (_, system), run in runs.items():
        queries = sorted(_values(reference, system))
        human, mine = _by_hand(run, lab, "human", queries), _by_hand(run, lab, "relevance", queries)
        assert _values(reference, system) == pytest.approx(human, abs=1e-12), system
        assert _values(own, system) == pytest.approx(mine, abs=1e-12), system
        disagree += any(abs(human[q] - mine[q]) > 1e-9 for q in queries)
    assert disagree  # the judge's labels differ from the humans': own and reference rows cannot be confused unseen
    # Table 1 shows the judge's own means and the shared references, never the per-judge reference rows
    t1 = tables.table1(
        pq,
        tables.system_types(
            pd.DataFrame({"system": [s for _, s in runs], "ranker_type": "llm", "start_time": range(len(runs))})
        ),
        ["human", "human_labelset", *JUDGES],
        ["toy"],
    )["toy"]
    assert list(t1.columns) == ["type", "human", "human_labelset", *JUDGES]
    expected = own.groupby("system")["value"].mean()
    assert np.allclose(t1[judge].to_numpy(), expected.reindex(t1.index).to_numpy(), atol=1e-12)
    assert np.allclose(
        refs.column("toy", judge, t1.index).to_numpy(),
        reference.groupby("system")["value"].mean().reindex(t1.index).to_numpy(),
        atol=1e-12,
    )


def test_a_virtual_judge_gets_its_reference_rows_the_same_way(toy):
    """Both members lose the same pairs (failed calls): the virtual judge labels fewer pairs than the label set, so
    its human_judged values (the human labels of the pairs it labelled) are not human_labelset's."""
    pq, labels, runs = toy["per_query"], toy["labels"], toy["runs"]
    original = labels[labels["text_view"] == "original"]
    failed = original[["query_id", "doc_id"]].drop_duplicates().iloc[::3]
    kept = original.merge(failed.assign(_failed=True), on=["query_id", "doc_id"], how="left")
    kept = kept[kept["_failed"].isna()].drop(columns="_failed")
    virtual = ensembles.VirtualJudge("both", JUDGES, "majority")
    vlabels = ensembles.virtual_labels(kept, virtual)
    queries = {"toy": sorted(pq["query_id"].unique())}
    frame = pd.concat([pq, ensembles.virtual_per_query(runs, vlabels, queries)], ignore_index=True)
    assert set(zip(frame["judge"], frame["role"])) - set(zip(pq["judge"], pq["role"])) == {
        ("both", "judge"),
        ("both", "human_judged"),
    }
    reference = References(frame, "human_judged").rows("toy", "both")
    labelset = References(frame, "human_labelset").rows("toy", "both")
    assert set(labelset["judge"]) == {"human_labelset"}
    differs = 0
    for (_, system), run in runs.items():
        human = _by_hand(run, vlabels, "human", queries["toy"])
        assert _values(reference, system) == pytest.approx(human, abs=1e-12), system
        whole = _values(labelset, system)
        differs += any(abs(human[q] - whole[q]) > 1e-9 for q in queries["toy"])
    assert differs  # the taken-out pairs moved documents up: a human_labelset read would not pass the check above
