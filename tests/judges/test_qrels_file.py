"""judge=qrels: a qrels file as a judge. Every bad input names file, line and value; policies are opt-in;
missing pairs are failures; a judge re-read from its own exported qrels reproduces the live judge exactly."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from cli_runner import ERROR_PREFIX, run, warm_store
from judgebench.data.datasets import load_toy
from judgebench.data.llmjudge import load_llmjudge
from judgebench.exceptions import DataError
from judgebench.judges.qrels_file import QrelsFileJudge

LLMJUDGE = Path(__file__).resolve().parents[3] / "shared" / "data" / "llmjudge"  # read through the llmjudge_dir fixture
SUBMISSIONS = LLMJUDGE / "submissions"


@pytest.fixture(scope="module")
def toy():
    return load_toy()


@pytest.fixture(scope="module")
def llmjudge(llmjudge_dir):
    return load_llmjudge(data_dir=str(llmjudge_dir))


def _write(tmp_path: Path, text: str, name: str = "labels.txt") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _judge(path: Path, dataset, **kw):
    pairs = dataset.label_set()[["query_id", "doc_id"]]
    return QrelsFileJudge(path=str(path), **kw).judge(pairs, dataset, {})


def _pairs(toy, n: int) -> list[tuple[str, str, int]]:
    """The first n label-set pairs of the toy dataset with their human labels."""
    return [tuple(r) for r in toy.label_set().head(n).itertuples(index=False)]


# --------------------------------------------------------------------------- bad input: file, line, value


@pytest.mark.parametrize(
    "label, value", [("4", "label 4"), ("-1", "label -1"), ("2.5", "'2.5'"), ("two", "'two'"), ("1_0", "'1_0'")]
)
def test_bad_labels_name_file_line_and_value(tmp_path, toy, label, value):
    (q1, d1, _), (q2, d2, _) = _pairs(toy, 2)
    path = _write(tmp_path, f"{q1} 0 {d1} 1\n\n{q2} 0 {d2} {label}\n")  # the blank line still counts: line 3
    with pytest.raises(DataError) as e:
        _judge(path, toy)
    assert str(e.value).startswith(f"{path}:3: ") and value in str(e.value) and d2 in str(e.value)


def test_out_of_range_clip_policy_clamps(tmp_path, toy):
    (q1, d1, _), (q2, d2, _), (q3, d3, h3) = _pairs(toy, 3)
    path = _write(tmp_path, f"{q1} 0 {d1} 7\n{q2} 0 {d2} -2\n{q3} 0 {d3} {h3}\n")
    result = _judge(path, toy, out_of_range="clip")
    got = result.labels.set_index("doc_id")
    assert got.loc[d1, "relevance"] == 3 and got.loc[d2, "relevance"] == 0 and got.loc[d3, "relevance"] == h3
    assert got.loc[d1, "raw"] == "labels.txt:1 (clipped from 7)" and got.loc[d3, "raw"] == "labels.txt:3"
    assert result.usage.errors["clipped"] == 2


def test_duplicates(tmp_path, toy):
    (q1, d1, _), (q2, d2, _) = _pairs(toy, 2)
    same = _write(tmp_path, f"{q1} 0 {d1} 2\n{q2} 0 {d2} 1\n{q1} 0 {d1} 2\n", "same.txt")
    assert _judge(same, toy).labels.set_index("doc_id").loc[d1, "relevance"] == 2  # identical repeats are fine
    conflict = _write(tmp_path, f"{q1} 0 {d1} 2\n{q2} 0 {d2} 1\n{q1} 0 {d1} 0\n", "conflict.txt")
    with pytest.raises(DataError) as e:
        _judge(conflict, toy)
    assert str(e.value).startswith(f"{conflict}:3: ") and "label 0 here and label 2 on line 1" in str(e.value)
    last = _judge(conflict, toy, duplicates="last").labels.set_index("doc_id")
    assert last.loc[d1, "relevance"] == 0 and last.loc[d1, "raw"] == "conflict.txt:3"


def test_unknown_query_and_malformed_lines(tmp_path, toy):
    ((q1, d1, _),) = _pairs(toy, 1)
    path = _write(tmp_path, f"{q1} 0 {d1} 1\nq999 0 {d1} 2\n")
    with pytest.raises(DataError) as e:
        _judge(path, toy)
    assert str(e.value).startswith(f"{path}:2: ") and "query q999" in str(e.value) and "dataset toy" in str(e.value)
    path = _write(tmp_path, f"{q1} 0 {d1}\n", "short.txt")
    with pytest.raises(DataError, match=r"short.txt:1: expected 4 fields"):
        _judge(path, toy)
    with pytest.raises(DataError, match=r"out_of_range='round': expected one of error, clip"):
        _judge(path, toy, out_of_range="round")
    with pytest.raises(DataError, match="file not found"):
        _judge(tmp_path / "nope.txt", toy)


def test_missing_pairs_are_failures_not_zeros(tmp_path, toy):
    labelled = _pairs(toy, 10)
    path = _write(tmp_path, "".join(f"{q} 0 {d} {h}\n" for q, d, h in labelled) + "q01 0 not-in-label-set 3\n")
    result = _judge(path, toy)
    n = len(toy.label_set())
    assert len(result.labels) == 10 and result.usage.calls_failed == n - 10 == len(result.failed)
    assert result.usage.errors["missing"] == n - 10 and result.usage.calls_made == 0
    assert set(result.failed["doc_id"]).isdisjoint({d for _, d, _ in labelled})
    assert (result.failed["error"] == f"not labelled in {path}").all()
    assert result.labels["relevance"].tolist() == [h for _, _, h in labelled]


def test_name_is_the_file_stem_unless_given(tmp_path):
    assert QrelsFileJudge(path="runs/my_llm_qrels.txt").name == "my_llm_qrels"
    assert QrelsFileJudge(path="runs/my_llm_qrels.txt", name="gpt4o", family="openai", model="gpt-4o").name == "gpt4o"


# --------------------------------------------------------------------------- the real LLMJudge submissions


@pytest.mark.parametrize(
    "name, line, doc, value", [("RMITIR-llama70B", 2449, "p3021", 5), ("h2oloo-zeroshot2", 3187, "p8028", 10)]
)
def test_real_out_of_range_labels_fail_by_default_and_pass_with_clip(llmjudge, name, line, doc, value):
    path = SUBMISSIONS / f"{name}.txt"
    with pytest.raises(DataError) as e:
        _judge(path, llmjudge)
    assert str(e.value).startswith(f"{path}:{line}: ") and f"doc {doc}: label {value} is outside 0..3" in str(e.value)
    result = _judge(path, llmjudge, out_of_range="clip")
    assert len(result.labels) == 4423 and result.usage.calls_failed == 0
    assert result.labels.set_index("doc_id").loc[doc, "relevance"] == 3
    # every other label is the file's own: compare with a plain read of the file
    plain = pd.read_csv(
        path, sep=" ", names=["query_id", "it", "doc_id", "label"], dtype={"query_id": str, "doc_id": str}
    )
    merged = plain.merge(result.labels, on=["query_id", "doc_id"])
    assert len(merged) == 4423 and (merged["label"].clip(0, 3) == merged["relevance"]).all()
    assert result.usage.errors["clipped"] == int((plain["label"] > 3).sum()) == (2 if name.startswith("RMITIR") else 1)


def test_original_trec_ids_are_mapped_to_the_collection_ids(tmp_path, llmjudge):
    qmap = dict(line.split() for line in (LLMJUDGE / "qid_to_qidx.txt").read_text().splitlines())
    dmap = dict(line.split() for line in (LLMJUDGE / "docid_to_docidx.txt").read_text().splitlines())
    back_q, back_d = {v: k for k, v in qmap.items()}, {v: k for k, v in dmap.items()}
    rows = llmjudge.label_set().head(5)
    path = _write(tmp_path, "".join(f"{back_q[q]} 0 {back_d[d]} {h}\n" for q, d, h in rows.itertuples(index=False)))
    result = _judge(path, llmjudge)
    assert result.labels[["query_id", "doc_id", "relevance"]].values.tolist() == rows.values.tolist()


# --------------------------------------------------------------------------- through run.py


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return warm_store(tmp_path_factory)


def _args(store: Path, *extra: str) -> list[str]:
    return [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        *extra,
    ]


def _runs(store: Path, experiment: str, judge: str | None = None):
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    filt = "attributes.status = 'FINISHED' and tags.`judgebench.kind` = 'job'" + (
        f" and tags.judge = '{judge}'" if judge else ""
    )
    return client, client.search_runs([exp.experiment_id], filter_string=filt)


def _metrics(client, run) -> dict:
    """A cell's metrics with those of its judge summary (agreement statistics, labelled pairs), logged once per
    judge."""
    return {**client.get_run(run.data.tags["judgebench.judge_summary"]).data.metrics, **run.data.metrics}


def test_run_py_bad_file_is_one_error_line(store, tmp_path, toy):
    ((q1, d1, _),) = _pairs(toy, 1)
    path = _write(tmp_path, f"{q1} 0 {d1} 9\n")
    res = run(_args(store, "experiment_name=bad", "ranker=oracle", "judge=qrels", f"judge.path={path}"), cwd=tmp_path)
    assert res.rc == 2, res
    assert res.error_lines == [
        f"{ERROR_PREFIX} {path}:1: query {q1} doc {d1}: label 9 is outside 0..3, expected 0..3 "
        "(a judge on another scale declares it: judge.scale=binary, or "
        "judge.scale={labels:[0,1,2,3,4,5],to_human:[0,0,1,1,2,3]} (labels and their human levels); "
        "judge.out_of_range=clip clamps such labels into range)"
    ], res


def test_run_py_missing_share_applies(store, tmp_path, toy):
    pairs = toy.label_set()
    keep = len(pairs) - 5  # 5 of 241 missing: 2.1 %, under the default 5 %
    path = _write(
        tmp_path, "".join(f"{q} 0 {d} {h}\n" for q, d, h in pairs.head(keep).itertuples(index=False)), "most.txt"
    )
    res = run(_args(store, "experiment_name=share", "ranker=oracle", "judge=qrels", f"judge.path={path}"), cwd=tmp_path)
    assert res.rc == 0, res
    client, (r,) = _runs(store, "share", "most")
    m = _metrics(client, r)
    assert m["calls_failed"] == 5 and m["labelled_pairs"] == keep and m["errors_missing"] == 5
    res = run(
        _args(
            store,
            "experiment_name=share",
            "ranker=oracle",
            "judge=qrels",
            f"judge.path={path}",
            "max_failed_share=0.01",
        ),
        cwd=tmp_path,
    )
    assert res.rc == 2 and "5 of 241 pairs (2.1%) have no label, above max_failed_share=1.0%" in res.err, res


def test_sweep_over_files_and_reproducing_the_live_judge(store, tmp_path):
    # the live simulated judge, then its exported judge_qrels.txt read back as two file judges in one sweep
    cells = ["ranker=oracle,simulated_llm", "perturbation=perfect"]
    res = run(["-m", *_args(store, "experiment_name=replay", *cells, "judge=simulated")], cwd=tmp_path)
    assert res.rc == 0, res
    client, live = _runs(store, "replay", "simulated")
    exported = Path(client.download_artifacts(live[0].info.run_id, "judge_qrels.txt", str(tmp_path)))
    a, b = tmp_path / "sim_a.txt", tmp_path / "sim_b.txt"
    a.write_bytes(exported.read_bytes())
    b.write_bytes(exported.read_bytes())
    res = run(
        ["-m", *_args(store, "experiment_name=replay", *cells, "judge=qrels", f"judge.path={a},{b}")], cwd=tmp_path
    )
    assert res.rc == 0, res
    for name in ("sim_a", "sim_b"):  # one judge per file, named after it
        client, replayed = _runs(store, "replay", name)
        assert len(replayed) == 2
        for r in replayed:
            (twin,) = [x for x in live if x.data.tags["system"] == r.data.tags["system"]]
            assert r.data.tags["judge_family"] == "file" and r.data.metrics["calls_made"] == 0
            for metric in (
                "ndcg10_judge",
                "ndcg10_human",
                "kappa_graded",
                "kappa_quadratic",
                "kappa_ge1",
                "kappa_ge3",
                "alpha_ordinal",
                "kappa_query_iqr",
                "judge_share_3",
                "labelled_pairs",
                "calls_failed",
            ):
                assert _metrics(client, r)[metric] == _metrics(client, twin)[metric], (
                    metric
                )  # exactly, not approximately
    # compare: the file judges' Table 2 rows are the live judge's
    out = tmp_path / "out"
    res = run(
        ["experiment=replay", f"tracking_uri=sqlite:///{store}/mlflow.db", f"out={out}", "bootstrap=0", "log=false"],
        cwd=tmp_path,
        module="judgebench.compare",
    )
    assert res.rc == 0, res
    t2 = pd.read_csv(out / "table2.csv").set_index("judge")
    stats = [c for c in t2.columns if c not in ("dataset", "reference", "labelled_pairs", "failed_pairs")]
    for name in ("sim_a", "sim_b"):
        for c in stats:
            x, y = t2.loc[name, c], t2.loc["simulated", c]
            assert (math.isnan(x) and math.isnan(y)) or x == y, (name, c)


def test_dl19_cell_with_the_human_qrels_file_as_judge(store, tmp_path, trec_dl_files):
    # the NIST qrels file read as a judge file labels more pairs than the label set (ignored) and all of it,
    # so it is the human judge (the qrels restricted to the label set, read by another code path): kappa 1
    # and the same judge-side nDCG@10, with no calls
    base = _args(store, "experiment_name=dl19file", "dataset=dl19", "ranker=oracle")
    res = run([*base, "judge=qrels", f"judge.path={trec_dl_files / 'qrels.dl19-passage.txt'}"], cwd=tmp_path)
    assert res.rc == 0, res
    res = run([*base, "judge=human"], cwd=tmp_path)
    assert res.rc == 0, res
    client, (f,) = _runs(store, "dl19file", "qrels.dl19-passage")
    _, (h,) = _runs(store, "dl19file", "human")
    m, hm = _metrics(client, f), _metrics(client, h)
    assert m["kappa_graded"] == 1.0 and m["alpha_ordinal"] == 1.0 and m["kappa_ge3"] == 1.0
    assert m["ndcg10_judge"] == h.data.metrics["ndcg10_judge"] and m["ndcg10_human"] == h.data.metrics["ndcg10_human"]
    assert m["labelled_pairs"] == m["label_set_size"] == hm["labelled_pairs"] > 2000
    assert m["calls_failed"] == 0 and m["calls_made"] == 0
