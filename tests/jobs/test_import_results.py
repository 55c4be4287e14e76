"""job=import_results: per-query results files into the store as cells compare reads (docs/datasets.md, "Existing
evaluations as input"), and the DL 2023 leaderboard's numbers recomputed here from the shipped files."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

from judgebench.data.imported_results import gaps, read_run_table
from judgebench.data.results_files import read_results
from judgebench.exceptions import DataError
from judgebench.identity.run_tags import RunTags
from judgebench.jobs.import_results import run_import
from shared_data import need_shared

EXPERIMENT = Path(__file__).resolve().parents[2] / "src/judgebench/conf/experiment/dl2023_leaderboard.yaml"


def _config(
    tmp: Path, data_dir: Path, judges: dict, runs: dict | None = None, measure: str = "ndcg_cut_10"
) -> OmegaConf:
    return OmegaConf.create(
        {
            "experiment_name": "imported",
            "tracking_uri": f"sqlite:///{tmp}/mlflow.db",
            "artifact_root": f"{tmp}/artifacts",
            "sweep_id": "test",
            "force": False,
            "results": {
                "dataset": "lb",
                "data_dir": str(data_dir),
                "measure": measure,
                "judges": judges,
                "runs": runs or {},
            },
        }
    )


def _job_runs(tmp: Path) -> list:
    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    exp = client.get_experiment_by_name("imported")
    return client.search_runs([exp.experiment_id], RunTags.where(kind="job", status="FINISHED"), max_results=1000)


# ------------------------------------------------------------------ the reader


def test_trec_eval_q_layout_takes_its_runid_and_the_leaderboard_layout_its_first_field(tmp_path):
    q = tmp_path / "bm25.eval"
    q.write_text(
        "runid\tall\tmy_bm25\nndcg_cut_10\t1\t0.5000\nndcg_cut_10\t2\t0.2500\nP_5\t1\t0.4\n"
        "num_q\tall\t2\nndcg_cut_10\tall\t0.3750\n"
    )
    rows = read_results(q, {"ndcg_cut_10"}).rows
    assert rows["run"].unique().tolist() == ["my_bm25"]
    assert rows.set_index("query_id")["value"].to_dict() == {"1": 0.5, "2": 0.25}
    lb = tmp_path / "all.eval"
    lb.write_text("a ndcg_cut_10 1 0.1\nb ndcg_cut_10 1 0.3\na ndcg_cut_10 all 0.1\n")
    read = read_results(lb)
    assert sorted(read.rows["run"]) == ["a", "b"] and read.checked_means == 1


@pytest.mark.parametrize(
    "text, line, words",
    [
        ("a ndcg_cut_10 1 0.5\na ndcg_cut_10 2 x\n", 2, "is not a number"),
        ("a ndcg_cut_10 1 0.5\na ndcg_cut_10 2\n", 2, "expected 4 fields"),
        ("a ndcg_cut_10 1 0.5\na ndcg_cut_10 1 0.4\n", 2, "given twice"),
        # the all row is a stored mean: verified when read (0.5 and 0.3 have mean 0.4, not 0.45)
        (
            "a ndcg_cut_10 1 0.5\na ndcg_cut_10 2 0.3\na ndcg_cut_10 all 0.45\n",
            3,
            "mean of its 2 per-query values is 0.4",
        ),
    ],
)
def test_bad_input_is_one_line_naming_file_and_line(tmp_path, text, line, words):
    path = tmp_path / "bad.eval"
    path.write_text(text)
    with pytest.raises(DataError) as e:
        read_results(path)
    assert str(e.value).startswith(f"{path}:{line}: ") and words in str(e.value) and "\n" not in str(e.value)


def test_a_run_type_without_a_family_names_the_line_and_the_setting(tmp_path):
    table = tmp_path / "runs.txt"
    table.write_text("run_id\tST\nr1\tGPT\nr2\tBERT\n")
    with pytest.raises(DataError, match=r"runs.txt:3: run type 'BERT' has no family: add it to results.runs.families"):
        read_run_table(table, "run_id", "ST", None, {"GPT": "openai"})


# ------------------------------------------------------------------ the job


def _leaderboard(tmp: Path) -> Path:
    """Three runs, four queries; under j1 run r3 is missing and run r2 lacks query 4."""
    data = tmp / "data"
    data.mkdir()
    rng = np.random.default_rng(1)
    human, j1 = [], []
    for r, q in itertools.product(["r1", "r2", "r3"], ["1", "2", "3", "4"]):
        human.append(f"{r} ndcg_cut_10 {q} {rng.uniform():.4f}")
        if r != "r3" and (r, q) != ("r2", "4"):
            j1.append(f"{r} ndcg_cut_10 {q} {rng.uniform():.4f}")
    (data / "human.eval").write_text("\n".join(human) + "\n")
    (data / "j1.eval").write_text("\n".join(j1) + "\n")
    (data / "runs.txt").write_text("run_id\tST\tisLLM\nr1\tGPT\t1\nr2\tT5\t1\nr3\tOther\t0\n")
    return data


def test_a_rerun_imports_nothing_twice_and_every_gap_is_reported(tmp_path, caplog):
    data = _leaderboard(tmp_path)
    cfg = _config(
        tmp_path,
        data,
        {"human": {"files": "human.eval"}, "j1": {"files": ["j1.eval"], "family": "openai"}},
        {
            "table": "runs.txt",
            "id_column": "run_id",
            "type_column": "ST",
            "llm_column": "isLLM",
            "families": {"GPT": "openai", "T5": "t5", "Other": "other"},
        },
    )
    with caplog.at_level(logging.WARNING, logger="judgebench"):
        first = run_import(cfg)
    assert first.metrics == {"cells_imported": 5, "cells_skipped": 0, "gaps": 2}  # 3 human cells + 2 of j1
    warned = "\n".join(m for m in caplog.messages)
    assert "run r3 has no ndcg_cut_10 values under j1 for every query" in warned
    assert "run r2 has no ndcg_cut_10 values under j1 for queries 4" in warned
    second = run_import(cfg)
    assert second.metrics == {"cells_imported": 0, "cells_skipped": 5, "gaps": 2} and second.status == "skipped-done"
    runs = _job_runs(tmp_path)
    assert len(runs) == 5
    tags = {(t.system, t.judge): t for t in (RunTags.from_tags(r.data.tags) for r in runs)}
    assert (tags[("r1", "j1")].ranker_family, tags[("r1", "j1")].ranker_type, tags[("r1", "j1")].ranker_model) == (
        "openai",
        "llm",
        "GPT",
    )
    assert tags[("r3", "human")].ranker_type == "external" and tags[("r1", "j1")].imported == "ndcg_cut_10"

    # compare reads the imported cells as grid cells: the missing run is a missing cell, the missing query a nan
    from judgebench.compare.base.artifacts import Artifacts
    from judgebench.compare.store.collect import collect_runs, missing_cells

    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    jobs = collect_runs(client, "imported")
    assert missing_cells(jobs)[["system", "judge"]].values.tolist() == [["r3", "j1"]]
    pq = Artifacts(client).per_query(jobs)
    own = pq[(pq["judge"] == "j1") & (pq["role"] == "judge") & (pq["system"] == "r2")].set_index("query_id")["value"]
    assert np.isnan(own["4"]) and own[["1", "2", "3"]].notna().all()
    human = pd.read_csv(data / "human.eval", sep=" ", header=None, names=["run", "m", "q", "v"], dtype={"q": str})
    ref = pq[(pq["judge"] == "human") & (pq["role"] == "human") & (pq["system"] == "r2")].set_index("query_id")["value"]
    assert ref.to_dict() == pytest.approx(human[human["run"] == "r2"].set_index("q")["v"].to_dict())


def test_gaps_of_a_run_missing_everywhere_but_one_judge():
    from judgebench.data.imported_results import Results

    values = pd.DataFrame(
        {"run": ["a", "a", "b"], "judge": ["human", "j", "human"], "query_id": ["1", "1", "1"], "value": 0.5}
    )
    assert gaps(Results("m", values)).values.tolist() == [["b", "j", "run", 1]]


def test_a_results_node_without_the_human_labels_is_refused_with_the_setting(tmp_path):
    from judgebench.exceptions import ConfigError

    data = _leaderboard(tmp_path)
    with pytest.raises(
        ConfigError, match="results.judges: expected the human reference's labels under the name 'human'"
    ):
        run_import(_config(tmp_path, data, {"nist": {"files": "human.eval"}, "j1": {"files": "j1.eval"}}))


# ------------------------------------------------------------------ TREC DL 2023, from the shipped files


def _means(path: Path) -> pd.Series:
    frame = pd.read_csv(path, sep=r"\s+", header=None, names=["run", "measure", "query", "value"], dtype={"query": str})
    frame = frame[(frame["measure"] == "ndcg_cut_10") & (frame["query"] != "all")]
    return frame.groupby("run")["value"].mean()


def _tau_ap_reference(judge: dict, human: dict) -> float:
    """Yilmaz et al.'s tau_AP with the judge's order and the humans' as reference, written from the paper's formula:
    ties in the judge's scores averaged over every order of the tied systems, a pair tied for the humans counting
    1/2."""
    systems = sorted(judge)
    levels = sorted(set(judge.values()), reverse=True)
    groups = [[s for s in systems if judge[s] == v] for v in levels]
    values = []
    for orders in itertools.product(*(itertools.permutations(g) for g in groups)):
        order = [s for g in orders for s in g]
        total = 0.0
        for i in range(1, len(order)):
            c = sum(
                1.0 if human[order[j]] > human[order[i]] else 0.5 if human[order[j]] == human[order[i]] else 0.0
                for j in range(i)
            )
            total += c / i
        values.append(2.0 * total / (len(order) - 1) - 1.0)
    return float(np.mean(values))


@pytest.fixture(scope="module")
def dl2023_report(tmp_path_factory):
    data = need_shared("data/trec-dl-2023-leaderboard", "the TREC DL 2023 leaderboard's per-query results")
    tmp = tmp_path_factory.mktemp("dl2023")
    cfg = OmegaConf.load(EXPERIMENT)
    cfg.results.data_dir = str(data)
    cfg.results.judges.human.qrels = None  # the labels are not needed for the orderings (and take most of the time)
    cfg.results.judges.gpt4.qrels = None
    cfg.merge_with({"tracking_uri": f"sqlite:///{tmp}/mlflow.db", "artifact_root": f"{tmp}/artifacts", "sweep_id": "t"})
    assert run_import(cfg).metrics["cells_imported"] == 70
    from judgebench.compare.base.report_model import Options
    from judgebench.compare.report import build

    return data, build(MlflowClient(f"sqlite:///{tmp}/mlflow.db"), "dl2023_leaderboard", options=Options(bootstrap=300))


def test_dl2023_tau_and_tau_ap_match_the_shipped_files(dl2023_report):
    from scipy.stats import kendalltau

    data, report = dl2023_report
    nist, gpt4 = _means(data / "all.pass.nist.ndcgeval"), _means(data / "all.pass.gpt4.ndcgeval")
    assert len(nist) == len(gpt4) == 35
    row = report.table2.set_index("judge").loc["gpt4"]
    assert row["systems"] == 35
    assert row["tau_all"] == pytest.approx(kendalltau(gpt4[nist.index], nist).statistic, abs=1e-12)
    assert row["tau_ap"] == pytest.approx(_tau_ap_reference(gpt4.to_dict(), nist.to_dict()), abs=1e-12)
    assert 0.85 < row["tau_all"] < 1  # the leaderboard's known agreement: a high tau, not a perfect one


def test_dl2023_run_type_bias_is_the_per_query_contrast_of_the_files(dl2023_report):
    data, report = dl2023_report
    frames = {}
    for name in ("nist", "gpt4"):
        f = pd.read_csv(
            data / f"all.pass.{name}.ndcgeval", sep=r"\s+", header=None, names=["run", "m", "q", "v"], dtype={"q": str}
        )
        frames[name] = f[(f["m"] == "ndcg_cut_10") & (f["q"] != "all")].pivot(index="run", columns="q", values="v")
    gap = frames["gpt4"] - frames["nist"]
    info = pd.read_csv(data / "model_to_info.txt", sep="\t").set_index("run_id")["ST"]
    gpt = [r for r in gap.index if info[r] in ("GPT", "T5+GPT")]
    rest = [r for r in gap.index if info[r] in ("T5", "Other")]
    expected = (gap.loc[gpt].mean(axis=0) - gap.loc[rest].mean(axis=0)).mean()
    row = report.family_bias.set_index("judge").loc["gpt4"]
    assert (row["n_own"], row["n_other"], row["queries"]) == (len(gpt), len(rest), 82) == (14, 21, 82)
    assert row["family_bias"] == pytest.approx(expected, abs=1e-12)
    assert row["lo"] < row["family_bias"] < row["hi"] and 0 <= row["p_value"] <= 1


def test_dl2023_significance_agreement_covers_every_pair(dl2023_report):
    _, report = dl2023_report
    counts = report.agreement_counts.set_index("judge").loc["gpt4"]
    assert counts["family"] == 35 * 34 // 2 and counts["dropped"] == 0
    assert counts[["agree", "missed", "spurious", "reversed"]].sum() == 595
