"""dataset=llmjudge and job=labels_only: label agreement without rankers, from run.py to compare."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient
from sklearn.metrics import cohen_kappa_score

from cli_runner import REPO, file_mode, run, run_compare, warm_store, write_dataset
from judgebench.data.corpus import available
from judgebench.data.datasets import load_toy
from judgebench.data.llmjudge import load_llmjudge

LLMJUDGE = Path(__file__).resolve().parents[3] / "shared" / "data" / "llmjudge"
PICK = ["willia-umbrela1", "RMITIR-llama70B"]  # the second has two labels of 5


@pytest.fixture(scope="module")
def store(tmp_path_factory, llmjudge_dir):
    assert llmjudge_dir == LLMJUDGE
    return warm_store(tmp_path_factory)


def _args(store: Path, *extra: str) -> list[str]:
    return [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        *extra,
    ]


def _read(path: Path) -> pd.DataFrame:
    return pd.read_csv(
        path, sep=" ", names=["query_id", "it", "doc_id", "label"], dtype={"query_id": str, "doc_id": str}
    )


def test_the_dataset_is_every_human_labelled_pair(llmjudge_dir):
    ds = load_llmjudge(data_dir=str(LLMJUDGE))
    raw = _read(LLMJUDGE / "llmjudge_test_qrel_idx.txt")
    assert ds.has_pool and not available(ds.corpus)  # a pool of judged passages, no texts
    pairs = pd.read_csv(
        LLMJUDGE / "llm4eval_test_qrel_2024.txt", sep=" ", names=["query_id", "it", "doc_id"], dtype=str
    )
    assert ds.pool[["query_id", "doc_id"]].values.tolist() == pairs[["query_id", "doc_id"]].values.tolist()
    assert ds.pool["rank"].tolist() == (pairs.groupby("query_id", sort=False).cumcount() + 1).tolist()
    assert len(ds.label_set()) == len(raw) == 4423 and len(ds.queries) == raw["query_id"].nunique() == 25
    assert ds.label_set()["relevance"].value_counts().sort_index().tolist() == [2005, 1233, 808, 377]
    assert ds.queries["q49"] == "how does a bounty hunter make money"
    assert ds.id_aliases["query"]["2040064"] == "q0" and len(ds.id_aliases["doc"]) > 4423
    dev = load_llmjudge(data_dir=str(LLMJUDGE), split="dev")
    assert len(dev.label_set()) == 7263 and not set(dev.queries) & set(ds.queries)
    assert load_toy().has_pool  # the datasets with passages are unchanged


def test_experiment_config_lists_the_33_submissions_with_the_clip_policy(llmjudge_dir):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose(
            "config", overrides=["+experiment=llmjudge", f"dataset.data_dir={LLMJUDGE}"], return_hydra_config=True
        )
    paths = [p.strip() for p in cfg.hydra.sweeper.params["judge.path"].split(",")]
    assert (
        sorted(Path(cfg.judge.root, p) for p in paths) == sorted(LLMJUDGE.glob("submissions/*.txt"))
        and len(paths) == 33
    )
    assert cfg.job == "labels_only" and cfg.judge.out_of_range == "clip" and cfg.experiment_name == "llmjudge"
    assert cfg.dataset._target_.endswith("load_llmjudge")


def test_labels_only_sweep_then_compare(store, tmp_path):
    paths = ",".join(f"submissions/{p}.txt" for p in PICK)
    common = [
        "job=labels_only",
        "dataset=llmjudge",
        f"dataset.data_dir={LLMJUDGE}",
        "judge=qrels",
        f"judge.root={LLMJUDGE}",
    ]
    # without the clip policy the RMITIR file stops at its first 5, naming file and line, in the sweep's one
    # preflight (cli/sweep_preflight.py): no cell is started
    res = run(["-m", *_args(store, "experiment_name=lj", *common, f"judge.path={paths}")], cwd=tmp_path)
    assert (
        res.rc == 2
        and f"{LLMJUDGE}/submissions/RMITIR-llama70B.txt:2449: query q0 doc p3021: label 5 is outside 0..3" in res.err
    ), res
    assert "no cell was started" in res.err, res
    res = run(
        ["-m", *_args(store, "experiment_name=lj", *common, f"judge.path=submissions/{PICK[0]}.txt")], cwd=tmp_path
    )
    assert res.rc == 0, res  # its labels are all 0-3: the error policy runs it
    res = run(
        ["-m", *_args(store, "experiment_name=lj", *common, f"judge.path={paths}", "judge.out_of_range=clip")],
        cwd=tmp_path,
    )
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    exp = client.get_experiment_by_name("lj").experiment_id
    runs = client.search_runs(
        [exp], filter_string="tags.`judgebench.kind` = 'labels' and attributes.status = 'FINISHED'"
    )
    # willia-umbrela1 ran under both policies: another policy is another config, so another run
    assert sorted(r.data.tags["judge"] for r in runs) == sorted([*PICK, "willia-umbrela1"])
    error_policy = next(r for r in runs if r.data.params["judge.out_of_range"] == "error")
    runs = [r for r in runs if r.data.params["judge.out_of_range"] == "clip"]
    assert sorted(r.data.tags["judge"] for r in runs) == sorted(PICK)
    human = _read(LLMJUDGE / "llmjudge_test_qrel_idx.txt")
    for r in runs:
        # a second computation: plain pandas join of the two files, clamped as the organisers did, sklearn's kappa
        both = human.merge(_read(LLMJUDGE / "submissions" / f"{r.data.tags['judge']}.txt"), on=["query_id", "doc_id"])
        j, h = both["label_y"].clip(0, 3), both["label_x"]
        m = r.data.metrics
        assert m["kappa_graded"] == pytest.approx(cohen_kappa_score(h, j))
        assert m["kappa_ge1"] == pytest.approx(cohen_kappa_score(h >= 1, j >= 1))
        assert m["kappa_ge3"] == pytest.approx(cohen_kappa_score(h >= 3, j >= 3))
        assert m["kappa_quadratic"] == pytest.approx(cohen_kappa_score(h, j, weights="quadratic"))
        assert m["judge_share_0"] == pytest.approx((j == 0).mean()) and m["human_share_3"] == pytest.approx(377 / 4423)
        assert m["label_set_size"] == 4423 == m["labelled_pairs"] and m["calls_failed"] == 0
        names = {a.path for a in client.list_artifacts(r.info.run_id)}
        assert {
            "judge_labels.csv",
            "judge_qrels.txt",
            "judge_failures.csv",
            "config.yaml",
        } <= names and "run.trec" not in names
        assert "ranker.name" not in r.data.params
    # the same cells again: found in MLflow, skipped
    res = run(
        ["-m", *_args(store, "experiment_name=lj", *common, f"judge.path={paths}", "judge.out_of_range=clip")],
        cwd=tmp_path,
    )
    assert res.rc == 0 and res.out.count("skipped-done") == 2, res

    out = tmp_path / "out"
    res = run(
        ["experiment=lj", f"tracking_uri=sqlite:///{store}/mlflow.db", f"out={out}"],
        cwd=tmp_path,
        module="judgebench.compare",
    )
    assert res.rc == 0, res
    t2 = pd.read_csv(out / "table2.csv").set_index("judge")
    # one row per judge configuration, in run order, named as the grid names columns: willia-umbrela1 under both
    # policies is two configurations of one name (name#<judge hash>), RMITIR-llama70B only ran with clip
    name = {
        r.info.run_id: f"{r.data.tags['judge']}#{r.data.tags['judgebench.judge_hash'][:6]}"
        if r.data.tags["judge"] == PICK[0]
        else r.data.tags["judge"]
        for r in [error_policy, *runs]
    }
    clip = {r.data.tags["judge"]: r for r in runs}
    assert list(t2.index) == [name[error_policy.info.run_id], name[clip[PICK[0]].info.run_id], PICK[1]]
    for judge in PICK:
        row = t2.loc[name[clip[judge].info.run_id]]
        for c in (
            "kappa_graded",
            "kappa_linear",
            "kappa_ge2",
            "alpha_ordinal",
            "alpha_interval",
            "kappa_query_median",
            "judge_share_2",
        ):
            assert row[c] == pytest.approx(clip[judge].data.metrics[c]), c  # recomputed from the labels artifact
    assert "tau_all" not in t2.columns and "ndcg10_judge" not in t2.columns
    md = (out / "report.md").read_text(encoding="utf-8")
    assert (
        "nDCG@10 (Table 1), the system-ordering statistics (tau, tau_AP, rho, tau_top5) and Tables 3-6 need systems"
        in md
    )
    assert "| llmjudge  | willia-umbrela1" in md and "llmjudge   willia-umbrela1" in res.out  # the printed summary too
    assert "nDCG, tau and Tables 3-6 need systems" in res.out and f"full report: {out / 'report.html'}" in res.out
    # every line fits 120 columns, except the one that prints the report's path (as long as the temp dir makes it)
    assert max(len(line) for line in res.out.splitlines() if str(out) not in line) <= 120
    for name in (
        "report.md",
        "report.html",
        "table2.tex",
        "table2_labels.tex",
        "figure_agreement.png",
        "figure_label_distribution.png",
        "figure_confusion.png",
    ):
        assert (out / name).stat().st_size > 0, name


def test_llmjudge_refuses_what_needs_passages(store, tmp_path):
    base = _args(store, "experiment_name=refuse", "dataset=llmjudge", f"dataset.data_dir={LLMJUDGE}")
    res = run([*base, "ranker=bm25", "judge=human"], cwd=tmp_path)  # a grid cell whose ranker reads passages
    assert (
        res.rc == 2
        and len(res.error_lines) == 1
        and "the LLMJudge passages (MS MARCO v2, non-commercial terms) are not distributed" in res.err
    ), res
    res = run([*base, "job=labels_only", "judge=gpt_4o_mini"], cwd=tmp_path)  # an LLM judge needs the passages
    assert res.rc == 2 and "has no passage texts, and judge gpt_4o_mini reads passages" in res.err, res


def test_llmjudge_needs_its_directory(store, tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k != "JUDGEBENCH_LLMJUDGE_DIR"}
    res = run(
        _args(store, "experiment_name=nodir", "job=labels_only", "dataset=llmjudge", "judge=human"),
        cwd=tmp_path,
        env=env,
    )
    assert (
        res.rc == 2
        and len(res.error_lines) == 1
        and "set dataset.data_dir=DIR or JUDGEBENCH_LLMJUDGE_DIR=DIR" in res.err
    ), res


def test_labels_only_on_a_dataset_with_passages_and_unknown_jobs(store, tmp_path):
    # labels-only needs no pool, but runs on one too: toy's label set under the simulated judge
    res = run(_args(store, "experiment_name=toylab", "job=labels_only", "judge=simulated"), cwd=tmp_path)
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    (r,) = client.search_runs([client.get_experiment_by_name("toylab").experiment_id])
    assert r.data.tags["judgebench.kind"] == "labels" and r.data.metrics["label_set_size"] == len(
        load_toy().label_set()
    )
    # beside a grid cell of the same judge: compare writes both reports, with the same label statistics
    res = run(_args(store, "experiment_name=toylab", "ranker=oracle", "judge=simulated"), cwd=tmp_path)
    assert res.rc == 0, res
    out = tmp_path / "out"
    res = run(
        ["experiment=toylab", f"tracking_uri=sqlite:///{store}/mlflow.db", f"out={out}", "bootstrap=0", "log=false"],
        cwd=tmp_path,
        module="judgebench.compare",
    )
    assert res.rc == 0, res
    grid, labels = (
        pd.read_csv(out / "table2.csv").set_index("judge"),
        pd.read_csv(out / "labels" / "table2.csv").set_index("judge"),
    )
    assert (out / "table1_toy.csv").exists() and list(labels.index) == ["simulated"]
    for c in ("kappa_graded", "kappa_ge3", "alpha_interval", "kappa_query_iqr", "judge_share_1"):
        assert labels.loc["simulated", c] == grid.loc["simulated", c], c
    res = run(_args(store, "experiment_name=toylab", "job=labels"), cwd=tmp_path)
    assert res.rc == 2 and "job=labels: expected one of grid_cell, rank, content_bias, labels_only" in res.err, res
    res = run(_args(store, "experiment_name=toylab", "job=labels_only", "rewriter=smollm2"), cwd=tmp_path)
    assert res.rc == 2 and "rewriter=smollm2 is not used" in res.err, res


# -------------------------------------------------------------------- judges and datasets named as the grid names them


@pytest.fixture(scope="module")
def toy_store(tmp_path_factory):
    return warm_store(tmp_path_factory)


def _label_file(path: Path, shift: int) -> Path:
    """The toy label set as a qrels file, each human label moved by ``shift`` (clipped to 0..3): a file judge."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pairs = load_toy().label_set()
    path.write_text(
        "".join(f"{q} 0 {d} {min(3, max(0, h + shift))}\n" for q, d, h in pairs.itertuples(index=False)),
        encoding="utf-8",
    )
    return path


def test_two_file_judges_of_one_name_are_two_rows_named_as_the_grid_names_them(toy_store, tmp_path):
    a, b = (
        _label_file(tmp_path / "a" / "run.txt", 0),
        _label_file(tmp_path / "b" / "run.txt", 1),
    )  # both judges are called "run"
    judges = ["judge=qrels", f"judge.path={a},{b}"]
    for job in (["job=labels_only"], ["ranker=oracle"]):  # labels-only runs, and grid cells of the same two judges
        res = run(["-m", *_args(toy_store, "experiment_name=twofiles", *job, *judges)], cwd=tmp_path)
        assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{toy_store}/mlflow.db")
    runs = client.search_runs(
        [client.get_experiment_by_name("twofiles").experiment_id], "attributes.status = 'FINISHED'"
    )
    hashes = {
        kind: {
            r.data.params["judge.path"]: r.data.tags["judgebench.judge_hash"]
            for r in runs
            if r.data.tags.get("judgebench.kind") == kind
        }
        for kind in ("labels", "job")
    }
    assert (
        hashes["labels"] == hashes["job"] and len(set(hashes["labels"].values())) == 2
    )  # the grid cells' identity tags
    out = tmp_path / "out"
    code, printed, err = run_compare(
        "experiment=twofiles",
        f"tracking_uri=sqlite:///{toy_store}/mlflow.db",
        f"out={out}",
        "bootstrap=0",
        "log=false",
        "format=csv,md",
    )
    assert code == 0, err
    rows = pd.read_csv(out / "labels" / "table2.csv").set_index("judge")
    names = {p: f"run#{h[:6]}" for p, h in hashes["labels"].items()}
    assert sorted(rows.index) == sorted(names.values())
    # a returns the human labels: kappa 1; b every label one up: sklearn's kappa on the same pairs
    human = load_toy().label_set()["relevance"]
    assert rows.loc[names[str(a)], "kappa_graded"] == pytest.approx(1.0)
    assert rows.loc[names[str(b)], "kappa_graded"] == pytest.approx(cohen_kappa_score(human, (human + 1).clip(0, 3)))
    grid = pd.read_csv(out / "table2.csv")
    assert set(names.values()) <= set(grid["judge"])  # the grid report names the same two judges the same way


def test_labels_only_refuses_two_identities_of_one_dataset_name(toy_store, tmp_path):
    small, big = (
        write_dataset(tmp_path / "small", ["q01", "q02", "q03"]),
        write_dataset(tmp_path / "big", ["q01", "q02", "q03", "q04"]),
    )
    for files in (small, big):  # both are called dl19
        res = run(
            _args(toy_store, "experiment_name=twoids", "job=labels_only", "judge=simulated", *file_mode(files)),
            cwd=tmp_path,
        )
        assert res.rc == 0, res
    uri = f"sqlite:///{toy_store}/mlflow.db"
    code, printed, err = run_compare("experiment=twoids", f"tracking_uri={uri}", f"out={tmp_path / 'out'}", "log=false")
    assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1, err
    assert (
        err.startswith("judgebench-compare: error: dataset dl19 has 2 identities in experiment 'twoids'")
        and "datasets=dl19@" in err
    )
    client = MlflowClient(uri)
    runs = client.search_runs(
        [client.get_experiment_by_name("twoids").experiment_id], "tags.`judgebench.kind` = 'labels'"
    )
    (picked,), (other,) = ([r for r in runs if (r.data.metrics["n_queries"] == 3) == small] for small in (True, False))
    small_hash = picked.data.tags["judgebench.dataset_hash"]
    out = tmp_path / "picked"
    code, printed, err = run_compare(
        "experiment=twoids",
        f"tracking_uri={uri}",
        f"out={out}",
        f"datasets=dl19@{small_hash[:8]}",
        "log=false",
        "format=csv",
    )
    assert code == 0, err
    # the label set of the small files, counted from them: their qrels pairs that are in their pool
    qrels, pool = (pd.read_csv(small[k], sep=r"\s+", header=None, dtype=str) for k in ("qrels", "pool"))
    pairs = set(zip(qrels[0], qrels[2])) & set(zip(pool[0], pool[2]))
    (row,) = pd.read_csv(out / "table2.csv").itertuples(index=False)
    assert row.dataset == "dl19" and row.labelled_pairs == len(pairs)
    assert row.kappa_graded == pytest.approx(picked.data.metrics["kappa_graded"]) != other.data.metrics["kappa_graded"]
