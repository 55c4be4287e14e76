"""compare: the full report on a real toy grid (run.py -m), and known answers on hand-made tables."""

from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mlflow.entities import ViewType
from mlflow.tracking import MlflowClient
from scipy import stats
from scipy.stats import kendalltau

import artifact_checks
from cli_runner import run_compare
from judgebench.compare import report, sections
from judgebench.compare.analyses import bias, bootstrap, ensembles, ordering_agreement, significance
from judgebench.compare.base import tables
from judgebench.compare.base.artifacts import REFERENCES, Artifacts
from judgebench.compare.base.reference import References
from judgebench.compare.renderers import figures
from judgebench.compare.sections import table2 as table2_section
from judgebench.compare.store.collect import missing_cells
from judgebench.content_bias import statistics as content_bias
from judgebench.data.datasets import load_toy
from judgebench.metrics import tau_b
from judgebench.tracking import job_run
from reference_impl import frame_rows, ndcg10_judged
from table_refs import refs_of

REPO = Path(__file__).resolve().parents[2]
PERTURBATIONS = ["Perfect", "Swap[3]", "Swap[2]", "Swap[1]", "Swap[2,3]", "Swap[1,2]"]
VIRTUAL = ["majority", "mean_label"]  # the default panel is the majority here: reported once


# --------------------------------------------------------------------------- the toy grid, built once


@pytest.fixture(scope="module")
def grid(toy_grid_store, toy_grid_compare, tmp_path_factory):
    """conftest's toy grid (8 systems x {human, biased simulated, unbiased simulated}) and its one compare
    (conftest's ``toy_grid_compare``, shared with test_report_html: its report folder and what it printed).

    The compare runs of this module go into a copy of the compare's database, this fixture's own, which holds the
    shared compare run: the shared store and database stay as the other modules read them, and a second worker
    running this fixture (plain ``-n 2``) logs into its own copy. The copy reads the shared artifacts (through a link)
    and names the shared sweep folder; compare adds its own runs' artifacts there, under their new run ids."""
    tmp = toy_grid_store
    work = tmp_path_factory.mktemp("compare")
    shutil.copy(toy_grid_compare["db"], work / "mlflow.db")
    (work / "artifacts").symlink_to(tmp / "mlruns" / "artifacts")  # where compare looks beside a moved store
    uri = f"sqlite:///{work}/mlflow.db"
    out = toy_grid_compare["out"]
    return {
        "tmp": tmp,
        "work": work,
        "uri": uri,
        "out": out,
        "printed": toy_grid_compare["printed"],
        "client": MlflowClient(uri),
        "md": (out / "report.md").read_text(encoding="utf-8"),
    }


def csv(grid, name: str, **kw) -> pd.DataFrame:
    return pd.read_csv(grid["out"] / name, **kw)


def test_table1_and_table2_on_the_grid(grid):
    t1 = csv(grid, "table1_toy.csv", index_col="system")
    assert list(t1.columns) == ["type", "human", "human_labelset", "simulated", "simulated_unbiased", *VIRTUAL]
    assert list(t1.index) == [*PERTURBATIONS, "SimLLM", "BM25"]  # grouped by type: oracles, LLM, lexical
    assert list(t1["type"]) == ["oracle"] * 6 + ["llm", "lexical"]
    # real-judge cells are the logged job metrics (per-query means read back from the artifacts)
    runs = grid["client"].search_runs(
        [grid["client"].get_experiment_by_name("grid").experiment_id],
        filter_string="tags.`judgebench.kind` = 'job' and tags.judge = 'simulated'",
    )
    for r in runs:
        assert t1.loc[r.data.tags["system"], "simulated"] == pytest.approx(r.data.metrics["ndcg10_judge"])
        assert t1.loc[r.data.tags["system"], "human"] == pytest.approx(r.data.metrics["ndcg10_human"])
        assert t1.loc[r.data.tags["system"], "human_labelset"] == pytest.approx(r.data.metrics["ndcg10_human_labelset"])
    # every toy qrel is in its pool, so the two human references coincide here (they differ on TREC DL)
    assert np.allclose(t1["human"], t1["human_labelset"])

    t2 = csv(grid, "table2.csv").set_index("judge")
    assert list(t2.index) == ["simulated", "simulated_unbiased", *VIRTUAL]
    assert {
        "kappa_linear",
        "kappa_quadratic",
        "kappa_ge1",
        "kappa_ge3",
        "alpha_ordinal",
        "alpha_interval",
        "kappa_query_median",
        "kappa_query_iqr",
        "judge_share_3",
        "human_share_0",
        "tau_ap",
        "rho_all",
        "tau_top5",
    } <= set(t2.columns)
    biased, unbiased = t2.loc["simulated"], t2.loc["simulated_unbiased"]
    # the biased judge keeps the oracles in order but moves the simulated LLM ranker to the top
    assert biased["tau_oracles"] > 0.9 and biased["tau_all"] < biased["tau_oracles"] - 0.3
    assert unbiased["tau_all"] > 0.9
    assert biased["kappa_graded"] < unbiased["kappa_graded"] and biased["kappa_ge2"] < unbiased["kappa_ge2"]
    # recomputed from the labels, each statistic equals what the judge's summary run logged once for all its systems
    summary = grid["client"].get_run(runs[0].data.tags["judgebench.judge_summary"]).data.metrics
    for name in (
        "kappa_graded",
        "kappa_quadratic",
        "kappa_ge1",
        "kappa_ge3",
        "alpha_ordinal",
        "kappa_query_iqr",
        "judge_share_2",
    ):
        assert biased[name] == pytest.approx(summary[name]), name
    # the human label distribution is the share of each grade in the label set (toy pool ∩ qrels, counted here)
    toy = load_toy()
    pooled = set(zip(toy.pool["query_id"], toy.pool["doc_id"]))
    grades = [
        r for q, d, r in toy.qrels[["query_id", "doc_id", "relevance"]].itertuples(index=False) if (q, d) in pooled
    ]
    for k in range(4):
        assert t2[f"human_share_{k}"].tolist() == pytest.approx([grades.count(k) / len(grades)] * len(t2)), k
    assert t2["labelled_pairs"].eq(241).all() and t2["failed_pairs"].eq(0).all() and summary["label_set_size"] == 241
    assert t2["reference"].eq("human_judged").all()
    assert t2["systems"].eq(8).all()


def test_inversion_flagged_for_the_biased_judge_only(grid):
    b = csv(grid, "ranker_bias.csv").set_index("judge")
    assert bool(b.loc["simulated", "inverted"]) is True
    assert b.loc["simulated", "llm_rank_judge"] == 1 and b.loc["simulated", "llm_rank_human"] == 7
    assert b.loc["simulated", "llm_wins_judge"] == 1 and b.loc["simulated", "llm_wins_human"] == 0
    assert b.loc["simulated", "gap_llm"] > 0.2 > b.loc["simulated", "gap_oracle"]
    assert (
        b.loc["simulated", "llm_above_oracles_judge"] == "SimLLM"
        and b.loc["simulated", "llm_above_oracles_human"] == "-"
    )
    # judge weight 0, ranker weight unchanged: same ordering as humans, no inversion
    assert bool(b.loc["simulated_unbiased", "inverted"]) is False
    assert abs(b.loc["simulated_unbiased", "gap_llm"]) < 0.05
    assert "**INVERTED**" in grid["md"]
    printed = grid["printed"]  # the findings: per (dataset, judge) one line of their brief forms
    assert (
        "toy / simulated: INVERTED (LLM above oracles); oracles " in printed
        and ", tau_oracles 0.97, tau_all" in printed
    )
    assert "toy / simulated_unbiased: not inverted; oracles " in printed


def test_significance_agreement_classes_on_the_grid(grid):
    counts = csv(grid, "significance_agreement.csv").set_index("judge")
    assert (counts[["agree", "missed", "spurious", "reversed"]].sum(axis=1) == 28).all()  # C(8, 2) pairs
    s = counts.loc["simulated"]
    assert s["missed"] > 0 and s["spurious"] > 0 and s["reversed"] > 0
    assert counts.loc["simulated_unbiased", "reversed"] == 0
    pairs = csv(grid, "significance_pairs.csv")
    reversed_ = pairs[(pairs["judge"] == "simulated") & (pairs["agreement"] == "reversed")]
    assert len(reversed_) == s["reversed"] and (reversed_["system_b"] == "SimLLM").all()
    # the list printed in the report names the same pairs
    assert "Perfect vs SimLLM" in grid["md"]
    # the oracle matrix: 15 pairs per judge, raw and Holm p, the human decisions of the toy data
    tests = csv(grid, "ttests_oracles.csv")
    assert tests.groupby("judge").size().eq(15).all() and len(tests) == 15 * 6  # 2 references, 2 judges, 2 virtual
    human = tests[tests["judge"] == "human"].set_index(["system_a", "system_b"])
    assert human["significant"].sum() == 14 and not human.loc[("Swap[2]", "Swap[1]"), "significant"]  # a tie on toy
    assert (human["p_holm"] >= human["p"].fillna(1)).all()


def test_bootstrap_intervals_contain_the_point_estimates(grid):
    means = csv(grid, "bootstrap_means.csv")
    assert len(means) == 8 * 6
    assert ((means["lo"] <= means["mean"] + 1e-12) & (means["mean"] <= means["hi"] + 1e-12)).all()
    perfect = means[(means["system"] == "Perfect") & (means["judge"] == "human")].iloc[0]
    assert perfect["lo"] == perfect["hi"] == 1.0  # Perfect scores 1 on every toy query: nothing to resample
    assert (means["hi"] - means["lo"] > 0.01).sum() >= 40
    taus = csv(grid, "ordering_agreement.csv")
    for name in ("query_tau_all", "query_tau_oracles"):
        assert ((taus[f"{name}_lo"] <= taus[name] + 1e-12) & (taus[name] <= taus[f"{name}_hi"] + 1e-12)).all()
    t2 = csv(grid, "table2.csv")
    assert np.allclose(taus["tau_all"], t2["tau_all"]) and np.allclose(taus["tau_oracles"], t2["tau_oracles"])


def test_level_from_the_command_line_sets_every_interval(grid):
    """level=0.8: Table 6's t intervals narrow as t's quantiles say (t(0.9, 11) / t(0.975, 11) = 0.62 on the toy's
    12 queries, 0.65 on 43), and the report names the level it used."""
    out = grid["work"] / "level"
    code, printed, err = run_compare(
        "experiment=grid",
        f"tracking_uri={grid['uri']}",
        f"out={out}",
        "format=csv,md",
        "bootstrap=300",
        "level=0.8",
        "log=false",
    )
    assert code == 0, err
    keys = ["dataset", "system", "judge"]
    narrow = pd.read_csv(out / "bootstrap_means.csv").set_index(keys)
    wide = csv(grid, "bootstrap_means.csv").set_index(keys).loc[narrow.index]
    spread = (wide["hi"] - wide["lo"]) > 0.01
    ratio = ((narrow["hi"] - narrow["lo"])[spread] / (wide["hi"] - wide["lo"])[spread]).median()
    assert 0.55 < ratio < 0.75, ratio
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "80% intervals" in md and "[80% interval]" in md and "95%" not in md


def _runs(client) -> list:
    return client.search_runs(
        [client.get_experiment_by_name("grid").experiment_id], filter_string="tags.`judgebench.kind` = 'job'"
    )


def _jobs(client, judge: str) -> pd.DataFrame:
    exp = client.get_experiment_by_name("grid").experiment_id
    runs = client.search_runs([exp], filter_string=f"tags.`judgebench.kind` = 'job' and tags.judge = '{judge}'")
    return pd.DataFrame([{**r.data.tags, "run_id": r.info.run_id} for r in runs])


def test_per_judge_figures_are_capped_and_the_report_says_so(grid, tmp_path, monkeypatch):
    """Beyond FIGURE_JUDGES judges only the first ones (report order) get a confusion file and a scatter panel, and
    the Figures section says how many of how many; the grid's 4 judges with the cap set to 2 stand in for a big grid."""
    assert f"first {report.FIGURE_JUDGES} judges in report order" in (REPO / "docs" / "compare.md").read_text(
        encoding="utf-8"
    )
    monkeypatch.setattr(table2_section, "FIGURE_JUDGES", 2)
    rep = report.build(grid["client"], "grid", options=report.Options(bootstrap=0, formats=("md", "png")))
    files = {f.name for f in report.write(rep, tmp_path)}
    judges = [
        c
        for c in csv(grid, "table1_toy.csv", index_col="system").columns
        if c not in ("type", "human", "human_labelset")
    ]
    assert judges == ["simulated", "simulated_unbiased", *VIRTUAL]
    assert {f for f in files if f.startswith("figure_confusion_")} == {
        "figure_confusion_simulated.png",
        "figure_confusion_simulated_unbiased.png",
    }
    # the scatter is 4 inches a panel at 120 dpi, cropped to what is drawn (bbox_inches="tight"): two panels, not four
    width = artifact_checks.png(tmp_path / "figure_scatter.png")[0]
    assert 0.9 * 2 * 4 * 120 <= width <= 1.1 * 2 * 4 * 120, width
    md = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert "drawn for the first 2 of the 4 judges, in report order" in md
    assert "(figure_confusion_simulated_unbiased.png)" in md and "figure_confusion_majority" not in md


def test_virtual_judge_ndcg_is_recomputed_like_the_pipeline(grid):
    """A one-member 'ensemble' of the biased judge must reproduce that judge's logged per-query nDCG
    from the logged run file and labels: the recompute path is the pipeline's."""
    art = Artifacts(grid["client"])
    jobs = _jobs(grid["client"], "simulated")
    labels = art.labels(pd.concat([jobs, _jobs(grid["client"], "simulated_unbiased")], ignore_index=True))
    runs = art.runs(jobs)
    one = ensembles.VirtualJudge("copy", ("simulated",), "majority")
    queries = {"toy": [f"q{i:02d}" for i in range(1, 13)]}
    recomputed = ensembles.virtual_per_query(runs, ensembles.virtual_labels(labels, one), queries)
    everything = art.per_query(jobs)
    for role in ("judge", "human_judged"):  # its reference too
        logged = everything[(everything["judge"] == "simulated") & (everything["role"] == role)]
        mine = recomputed[(recomputed["judge"] == "copy") & (recomputed["role"] == role)]
        merged = logged.merge(mine, on=["dataset", "system", "query_id"], suffixes=("_logged", "_recomputed"))
        assert len(merged) == len(logged) == 8 * 12 and not art.problems
        assert np.allclose(merged["value_logged"], merged["value_recomputed"])
    # the mean-label ensemble of the two judges, rebuilt here by hand for one system
    b, u = (
        labels[labels["judge"] == j].set_index(["query_id", "doc_id"])["relevance"]
        for j in ("simulated", "simulated_unbiased")
    )
    qrels = np.floor((b + u) / 2 + 0.5).astype(int).rename("relevance").reset_index()
    t1 = csv(grid, "table1_toy.csv", index_col="system")
    expected = ndcg10_judged(
        frame_rows(runs[("toy", "SimLLM")], "query_id", "doc_id", "rank"),
        frame_rows(qrels, "query_id", "doc_id", "relevance"),
        queries["toy"],
    )
    assert t1.loc["SimLLM", "mean_label"] == pytest.approx(sum(expected.values()) / 12, abs=1e-12)


def test_files_figures_and_compare_run(grid):
    out = grid["out"]
    for name in (
        "report.md",
        "table1_toy.tex",
        "table2.tex",
        "ttests_oracles_toy.tex",
        "ranker_bias.tex",
        "confidence_toy.tex",
        "tau_intervals.tex",
        "significance_agreement.tex",
        "missing_cells.csv",
    ):
        assert (out / name).stat().st_size > 0, name
    tex = (out / "table1_toy.tex").read_text()
    assert r"\textbf{1.0000}" in tex and r"simulated\_unbiased" in tex and r"\begin{tabular}" in tex
    # Table 1's .tex has the csv's rows, each with the csv's numbers to 4 decimals
    t1 = csv(grid, "table1_toy.csv", index_col="system")
    rows = artifact_checks.tex_rows(out / "table1_toy.tex")
    assert len(rows) == len(t1), (rows, list(t1.index))
    for row in rows:
        system = row[0].replace("{[}", "[").replace("{]}", "]").replace("\\_", "_")
        assert system in t1.index, row
        expected = [round(float(v), 4) for v in t1.loc[system] if isinstance(v, (int, float)) and v == v]
        assert artifact_checks.numbers(row[1:]) == pytest.approx(expected, abs=5e-5), (row, expected)
    for name in (
        "table2.tex",
        "table2_orderings.tex",
        "table2_labels.tex",
        "ranker_bias.tex",
        "tau_intervals.tex",
        "significance_agreement.tex",
    ):
        assert artifact_checks.tex_rows(out / name), name
    for judge in ("simulated", "simulated_unbiased", *VIRTUAL):
        artifact_checks.png(out / f"figure_confusion_{judge}.png")
    for name in ("figure_scatter.png", "figure_ndcg_bars.png", "figure_kappa_tau.png"):
        artifact_checks.png(out / name)
    assert not (out / "figure_content_bias.png").exists()
    assert "None found: no judge runs with a rewritten text view" in grid["md"]
    # families: every cell is tagged with its ranker's; the simulated judges share SimLLM's family, but no other LLM
    # family is there to compare it with, so the self-preference section says there is nothing to measure
    tagged = {r.data.tags["ranker"]: r.data.tags.get("ranker_family") for r in _runs(grid["client"])}
    assert tagged == {"Oracle": "oracle", "BM25": "lexical", "SimLLM": "simulated-2024"}
    assert (
        "- No judge shares a family with a ranker here (judges: simulated (simulated-2024), simulated_unbiased "
        in grid["md"]
    )
    assert "No PRP ranking in this selection logged its order statistics" in grid["md"]
    gaps = csv(grid, "family_gaps.csv").set_index(["judge_family", "ranker_family"])["mean_gap"]
    t1 = csv(grid, "table1_toy.csv", index_col="system")
    assert gaps[
        ("simulated-2024", "simulated-2024")
    ] == pytest.approx(  # both simulated judges, SimLLM: by hand from Table 1
        (
            (t1.loc["SimLLM", "simulated"] - t1.loc["SimLLM", "human"])
            + (t1.loc["SimLLM", "simulated_unbiased"] - t1.loc["SimLLM", "human"])
        )
        / 2
    )
    assert artifact_checks.png(out / "figure_family_gaps.png") and "(figure_family_gaps.png)" in grid["md"]
    assert (
        "No missing grid cells: all 24 cells have a finished run." in grid["md"]
        and "panel = majority here" in grid["md"]
    )
    assert "![nDCG@10 per system" in grid["md"] and "(figure_scatter.png)" in grid["md"]  # report.md links its figures
    # the console: a short summary and where the full report is, no line over 120 characters
    assert max(len(line) for line in grid["printed"].splitlines()) <= 120 and len(grid["printed"]) < 4000
    assert f"full report: {out / 'report.html'}" in grid["printed"] and "Table 1 (toy)" in grid["printed"]
    client = grid["client"]
    exp = client.get_experiment_by_name("grid").experiment_id
    (run,) = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'compare'")
    assert run.data.params["alpha"] == "0.05" and run.data.params["bootstrap"] == "1000"
    assert run.data.metrics["tau_oracles.toy.simulated"] > 0.9
    t2 = csv(grid, "table2.csv").set_index("judge")
    for name in ("kappa_ge3", "alpha_interval", "tau_ap", "rho_all", "tau_top5", "judge_share_1"):
        assert run.data.metrics[f"{name}.toy.simulated"] == pytest.approx(t2.loc["simulated", name]), name
    logged = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {
        "report.md",
        "report.html",
        "inputs.json",
        "table2.csv",
        "figure_scatter.png",
        "figure_confusion_majority.png",
        "table1_toy.tex",
    } <= logged and "figure_confusion_panel.png" not in logged
    # it names what it read: every job run of the grid, the judge summaries, the sweep
    inputs = json.loads(Path(client.download_artifacts(run.info.run_id, "inputs.json", str(grid["work"]))).read_text())
    jobs = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'job'")
    assert sorted(inputs["job_runs"]) == sorted(r.info.run_id for r in jobs) and len(jobs) == 24
    assert len(inputs["judge_summary_runs"]) == 3 and inputs["sweeps"] == [str(grid["tmp"] / "multirun")]
    assert run.data.tags["judgebench.inputs"] == "24 job_runs, 3 judge_summary_runs, 1 sweeps"
    # the same selection again supersedes it (one compare run stays); other options make another run
    again = (
        "experiment=grid",
        f"tracking_uri={grid['uri']}",
        f"out={grid['work'] / 'again'}",
        "format=csv",
        "bootstrap=0",
    )
    code, printed, err = run_compare(*again)
    assert code == 0 and "replaces" not in printed, err
    code, printed, err = run_compare(*again)
    assert code == 0 and "replaces 1 earlier compare run" in printed, err
    live = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'compare'")
    assert len(live) == 2 and run.info.run_id in {r.info.run_id for r in live}
    deleted = client.search_runs(
        [exp], filter_string="tags.`judgebench.kind` = 'compare'", run_view_type=ViewType.DELETED_ONLY
    )
    assert len(deleted) == 1 and deleted[0].data.tags["judgebench.superseded_by"] in {r.info.run_id for r in live}


def test_filters_missing_cells_and_options(grid):
    out = grid["work"] / "filtered"
    code, printed, err = run_compare(
        "experiment=grid",
        f"tracking_uri={grid['uri']}",
        f"out={out}",
        "judges=simulated,gpt_4o",
        "datasets=toy,dl19",
        "format=csv",
        "bootstrap=0",
        "correction=holm",
        "alpha=0.01",
        "log=false",
    )
    assert code == 0, err
    t1 = pd.read_csv(out / "table1_toy.csv", index_col="system")
    assert list(t1.columns) == [
        "type",
        "human",
        "human_labelset",
        "simulated",
        "gpt_4o",
    ]  # one judge with runs: no ensembles
    assert t1["gpt_4o"].isna().all() and t1["human"].notna().all()
    assert pd.read_csv(out / "table1_dl19.csv", index_col="system")[["human", "simulated"]].isna().all().all()
    missing = pd.read_csv(out / "missing_cells.csv")
    assert len(missing[missing["dataset"] == "toy"]) == 8 and set(missing[missing["dataset"] == "toy"]["judge"]) == {
        "gpt_4o"
    }
    assert len(missing[missing["dataset"] == "dl19"]) == 16
    assert "missing grid cells: 24 (e.g. toy / BM25 / judge=gpt_4o; toy / Perfect / judge=gpt_4o; all in" in printed
    assert "  missing" in printed and max(len(line) for line in printed.splitlines()) <= 120
    assert "No ensembles or panel" in printed and "bootstrap=0" in printed
    assert not (out / "report.md").exists() and not (out / "figure_scatter.png").exists()
    # Holm at alpha 0.01: the decisions are those of the Holm column of the same tests
    tests = pd.read_csv(out / "ttests_all.csv")
    counts = pd.read_csv(out / "significance_agreement.csv").set_index("judge")
    j, h = (tests[tests["judge"] == n].set_index(["system_a", "system_b"]) for n in ("simulated", "human"))
    assert counts.loc["simulated", "missed"] == int((h["significant_holm"] & ~j["significant_holm"]).sum())


@pytest.mark.parametrize(
    "args, message",
    [
        (["experiment=nope"], "no MLflow experiment named 'nope'"),
        (["experiment=grid", "alpha=2"], "alpha='2'"),
        (["experiment=grid", "correction=bonf"], "correction='bonf'"),
        (["experiment=grid", "level=1"], "level='1': expected a number between 0 and 1"),
        (["experiment=grid", "format=pdf"], "format: unknown ['pdf']"),
        (["experiment=grid", "panel=simulated"], "at least 2 distinct judges"),
        (["experiment=grid", "panel=simulated,gpt_4o"], "panel names judges without runs"),
        (["experiment=grid", "datasets=dl19"], "no finished job runs for datasets=dl19"),
        (["experiment=grid", "colour=blue"], "unexpected argument 'colour=blue'"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(grid, args, message):
    code, printed, err = run_compare(*args, f"tracking_uri={grid['uri']}", "log=false", f"out={grid['work']}/err")
    assert code == 2 and message in err and printed == ""


def test_empty_experiment_exits_2(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    client.create_experiment("empty")
    code, _, err = run_compare("experiment=empty", f"tracking_uri=sqlite:///{tmp_path}/mlflow.db")
    assert code == 2 and err.strip() == "judgebench-compare: error: experiment 'empty' has no finished job runs"


def test_explicit_panel(grid):
    rep = report.build(
        grid["client"], "grid", options=report.Options(panel=["simulated_unbiased", "simulated"], bootstrap=0)
    )
    # the panel has the majority's two members and rule: the same judge, reported once under its first name
    assert not [v for v in rep.virtual if v.name == "panel"] and rep.aliases == {"panel": "majority"}
    t = rep.table1["toy"]
    assert "panel" not in t.columns and "panel" not in set(rep.table2["judge"])
    # the majority of two judges, ties to the lower label, is the pairwise minimum of their labels: each system's
    # nDCG@10 recomputed here from the logged runs and labels (reference implementation)
    art = Artifacts(grid["client"])
    jobs = _jobs(grid["client"], "simulated")
    labels = art.labels(pd.concat([jobs, _jobs(grid["client"], "simulated_unbiased")], ignore_index=True))
    b, u = (
        labels[labels["judge"] == j].set_index(["query_id", "doc_id"])["relevance"]
        for j in ("simulated", "simulated_unbiased")
    )
    qrels = frame_rows(
        np.minimum(b, u.reindex(b.index)).rename("relevance").reset_index(), "query_id", "doc_id", "relevance"
    )
    queries = [f"q{i:02d}" for i in range(1, 13)]
    for (_, system), run in art.runs(jobs).items():
        expected = ndcg10_judged(frame_rows(run, "query_id", "doc_id", "rank"), qrels, queries)
        assert t.loc[system, "majority"] == pytest.approx(sum(expected.values()) / 12, abs=1e-12), system
    assert "panel = majority here" in sections.markdown(rep)


# --------------------------------------------------------------------------- known answers, hand-made tables


def _t1(human, judge, types) -> dict[str, pd.DataFrame]:
    """``human`` is the label-set reference (the default); the all-qrels column is its reverse, so a
    statistic that read the wrong reference would give another answer."""
    systems = [f"s{i}" for i in range(len(human))]
    return {
        "d": pd.DataFrame(
            {"type": types, "human": human[::-1], "human_labelset": human, "j": judge},
            index=pd.Index(systems, name="system"),
        )
    }


def test_tau_known_answers():
    t1 = _t1([0.9, 0.8, 0.7, 0.6], [0.9, 0.7, 0.8, 0.6], ["oracle", "oracle", "oracle", "llm"])
    t2 = tables.table2(
        t1,
        pd.DataFrame(columns=["dataset", "judge", "query_id", "doc_id", "relevance", "human"]),
        pd.DataFrame(),
        refs_of(t1),
    )
    row = t2.iloc[0]
    assert row["tau_all"] == pytest.approx((5 - 1) / 6)  # one discordant pair out of 6
    assert row["tau_oracles"] == pytest.approx((2 - 1) / 3)
    assert row["reference"] == "human_labelset"  # refs_of(t1) reads the label-set column
    # against the (here reversed) all-qrels column: 5 discordant pairs, 1 concordant
    paper = tables.table2(
        t1,
        pd.DataFrame(columns=["dataset", "judge", "query_id", "doc_id", "relevance", "human"]),
        pd.DataFrame(),
        refs_of(t1, "human"),
    )
    assert paper.iloc[0]["tau_all"] == pytest.approx((1 - 5) / 6) and paper.iloc[0]["reference"] == "human"
    assert row["systems"] == 4 and np.isnan(row["kappa_graded"])
    # tau_AP, judge order s0 s2 s1 s3 against human s0 s1 s2 s3: C(2)/1 = 1 (s0 above s2), C(3)/2 = 1/2 (s0 yes,
    # s2 no), C(4)/3 = 1 -> 2/3 * 2.5 - 1 = 2/3; Spearman: rank differences 0 1 -1 0 -> 1 - 6*2/(4*15) = 0.8
    assert row["tau_ap"] == pytest.approx(2 / 3) and row["rho_all"] == pytest.approx(0.8)
    assert np.isnan(row["tau_top5"])  # 4 systems: no top 5
    # a missing cell leaves the system out of tau (and the count), never in as 0
    t1["d"].loc["s1", "j"] = np.nan
    row = tables.table2(t1, pd.DataFrame(columns=t2.columns), pd.DataFrame(), refs_of(t1)).iloc[0]
    assert row["tau_all"] == pytest.approx(1.0) and row["systems"] == 3 and row["tau_oracles"] == pytest.approx(1.0)


def test_kappa_columns_known_answers():
    human = [0, 0, 1, 1, 2, 2, 3, 3]
    judge = [0, 2, 1, 1, 2, 3, 3, 3]
    labels = pd.DataFrame(
        {
            "dataset": "d",
            "judge": "j",
            "text_view": "original",
            "query_id": "q",
            "doc_id": [f"d{i}" for i in range(8)],
            "relevance": judge,
            "human": human,
        }
    )
    t1 = _t1([0.9, 0.8], [0.8, 0.9], ["oracle", "llm"])
    usage = pd.DataFrame({"dataset": ["d"], "judge": ["j"], "labelled_pairs": [8], "failed_pairs": [2]})
    row = tables.table2(t1, labels, usage, refs_of(t1)).iloc[0]
    # graded: p_o = 6/8, p_e = sum over levels of (2/8) * (judge share) = 1/4 -> (3/4 - 1/4) / (3/4)
    assert row["kappa_graded"] == pytest.approx(2 / 3)
    # binary: human 0000 1111, judge 0100 1111: p_o = 7/8, p_e = 1/2 * 3/8 + 1/2 * 5/8 = 1/2
    assert row["kappa_ge2"] == pytest.approx(0.75) and "kappa_binary" not in row
    # >=1: human 00111111, judge 01111111: p_o = 7/8, p_e = (2*1 + 6*7)/64 = 44/64 -> (12/64) / (20/64) = 0.6
    assert row["kappa_ge1"] == pytest.approx(0.6)
    # >=3: human 00000011, judge 00000111: p_o = 7/8, p_e = (6*5 + 2*3)/64 = 36/64 -> (20/64) / (28/64) = 5/7
    assert row["kappa_ge3"] == pytest.approx(5 / 7)
    assert [row[f"judge_share_{k}"] for k in range(4)] == pytest.approx([1 / 8, 2 / 8, 2 / 8, 3 / 8])
    assert [row[f"human_share_{k}"] for k in range(4)] == pytest.approx([1 / 4] * 4)
    assert row["tau_all"] == pytest.approx(-1.0) and np.isnan(row["tau_oracles"])
    assert row["labelled_pairs"] == 8 and row["failed_pairs"] == 2


def _pq(values: dict[str, dict[str, np.ndarray]]) -> pd.DataFrame:
    rows = []
    for judge, systems in values.items():
        for system, v in systems.items():
            role = judge if judge in REFERENCES else "judge"  # a human reference's rows carry its name as their role
            rows += [
                {"dataset": "d", "system": system, "judge": judge, "role": role, "query_id": f"q{i:02d}", "value": x}
                for i, x in enumerate(v)
            ]
    return pd.DataFrame(rows)


def test_significance_classes_known_answer():
    rng = np.random.default_rng(5)
    noise = lambda: rng.normal(0, 0.02, 10)  # noqa: E731
    human = {"A": 0.9 + noise(), "B": 0.5 + noise(), "C": 0.5 + noise(), "D": 0.2 + noise()}
    judge = {"A": 0.5 + noise(), "B": 0.9 + noise(), "C": 0.5 + noise(), "D": 0.2 + noise()}
    pq = _pq({"human_labelset": human, "j": judge})
    tests = significance.ttests(pq, {"d": ["A", "B", "C", "D"]})
    h = tests[tests["judge"] == "human_labelset"].set_index(["system_a", "system_b"])["significant"]
    assert not h[("B", "C")] and h.drop(("B", "C")).all()  # the construction holds
    counts, pairs = significance.decision_agreement(pq, {"d": ["A", "B", "C", "D"]}, References(pq, "human_labelset"))
    assert counts.iloc[0][["agree", "missed", "spurious", "reversed"]].tolist() == [3, 1, 1, 1]
    cls = pairs.set_index(["system_a", "system_b"])["agreement"]
    assert cls[("A", "B")] == "reversed" and cls[("A", "C")] == "missed" and cls[("B", "C")] == "spurious"
    assert cls[("A", "D")] == cls[("B", "D")] == cls[("C", "D")] == "agree"
    lists = significance.pair_lists(pairs).set_index("class")
    assert lists.loc["reversed", "pairs"] == "A vs B" and lists.loc["missed", "n"] == 1


def test_mean_intervals_known_answers():
    values = np.array([0.1, 0.4, 0.5, 0.9, 0.2])
    t1 = {
        "d": pd.DataFrame(
            {"type": ["oracle", "oracle"], "human": [values.mean(), 0.5]}, index=pd.Index(["A", "B"], name="system")
        )
    }
    pq = _pq({"human": {"A": values, "B": np.full(5, 0.5)}})
    means = bootstrap.mean_intervals(pq, t1)
    # independent recomputation: Student's t interval by scipy
    lo, hi = stats.t.interval(0.95, 4, loc=values.mean(), scale=stats.sem(values))
    a = means.set_index("system").loc["A"]
    assert a["lo"] == pytest.approx(lo) and a["hi"] == pytest.approx(hi) and a["mean"] == pytest.approx(0.42)
    b = means.set_index("system").loc["B"]
    assert b["lo"] == b["hi"] == b["mean"] == 0.5  # identical per-query values: zero width


def test_bootstrap_tau_matches_scipy_and_resamples():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, (6, 50)).astype(float), rng.integers(0, 4, (6, 50)).astype(float)  # many ties
    expected = [kendalltau(x[:, b], y[:, b])[0] for b in range(50)]
    assert np.allclose(tau_b(x, y), expected, equal_nan=True)  # the one tau-b of Table 2, bootstrap and calibration
    # per-query tau interval of a judge that orders three oracles like humans on every query: [1, 1], p 0
    base = {"A": np.linspace(0.8, 0.9, 6), "B": np.linspace(0.5, 0.6, 6), "C": np.linspace(0.2, 0.3, 6)}
    pq = _pq({"human_labelset": base, "j": {k: v - 0.1 for k, v in base.items()}})
    t1 = tables.table1(
        pq, pd.Series(["oracle"] * 3, index=pd.Index(list("ABC"), name="system")), ["human_labelset", "j"], ["d"]
    )
    taus = ordering_agreement.ordering_agreement(pq, t1, References(pq, "human_labelset"))
    assert (
        taus.iloc[0][
            ["tau_oracles", "query_tau_oracles", "query_tau_oracles_lo", "query_tau_oracles_hi", "tau_all"]
        ].tolist()
        == [1.0] * 5
    )
    assert taus.at[0, "query_tau_oracles_p"] == 0.0 and taus.at[0, "oracles_verdict"] == "better than chance"


def test_ensemble_rules_known_answers():
    nan = np.nan
    labels = np.array([[0, 1, 1], [3, 2, nan], [0, 3, nan], [nan, nan, nan], [1, 2, 2], [1, 2, 3]])
    assert np.array_equal(ensembles.majority(labels), [1, 2, 0, nan, 2, 1], equal_nan=True)  # ties -> lower
    assert np.array_equal(ensembles.mean_rounded(labels), [1, 3, 2, nan, 2, 2], equal_nan=True)  # 2.5 -> 3, 1.5 -> 2
    fam = {"g1": "gemini", "g2": "gemini", "o1": "openai", "s": "simulated"}
    assert ensembles.default_panel(["human", "g1", "g2", "s", "o1"], fam) == ["g1", "o1"]
    assert ensembles.default_panel(["human", "g1", "g2", "s"], fam) == ["g1", "g2", "s"]
    assert ensembles.plan(["human", "g1"], fam) == []


def test_virtual_labels_from_members():
    lab = pd.DataFrame(
        {
            "dataset": "d",
            "text_view": "original",
            "query_id": "q",
            "doc_id": ["a", "b", "a", "b", "a"],
            "judge": ["j1", "j1", "j2", "j2", "j3"],
            "relevance": [3, 0, 1, 1, 1],
            "human": [2, 0, 2, 0, 2],
        }
    )
    vl = ensembles.virtual_labels(lab, ensembles.VirtualJudge("m", ("j1", "j2", "j3"), "majority"))
    assert vl.set_index("doc_id")["relevance"].to_dict() == {"a": 1, "b": 0}  # b: j3 has no label, tie 0/1 -> 0
    problems: list[str] = []
    assert ensembles.virtual_labels(lab, ensembles.VirtualJudge("m", ("j1", "j9"), "mean"), problems).empty
    assert problems == ["d: virtual judge m not built, no labels from ['j9']"]


def test_ranker_bias_known_answer():
    t1 = {
        "d": pd.DataFrame(
            {
                "type": ["oracle", "oracle", "llm", "lexical"],
                "human_labelset": [0.9, 0.8, 0.7, 0.5],
                "human": [0.1, 0.2, 0.3, 0.4],
                "j": [0.7, 0.6, 0.8, 0.55],
            },
            index=pd.Index(["O1", "O2", "L", "B"], name="system"),
        )
    }
    row = bias.ranker_bias(t1, refs_of(t1)).iloc[0]
    assert row["llm_rank_human"] == 3 and row["oracle_rank_human"] == 1.5
    assert row["llm_rank_judge"] == 1 and row["oracle_rank_judge"] == 2.5 and row["inverted"]
    assert row["llm_wins_judge"] == 1 and row["llm_wins_human"] == 0
    assert row["llm_above_oracles_judge"] == "L" and row["llm_above_oracles_human"] == "-"
    assert (
        row["gap_oracle"] == pytest.approx(-0.2)
        and row["gap_llm"] == pytest.approx(0.1)
        and row["gap_lexical"] == pytest.approx(0.05)
    )
    no_llm = {"d": t1["d"].drop(index="L")}
    assert bias.ranker_bias(no_llm, refs_of(no_llm)).iloc[0]["inverted"] is None


def test_missing_cells_product():
    jobs = pd.DataFrame(
        {"dataset": ["a", "a", "b"], "system": ["S1", "S2", "S1"], "judge": ["h", "j", "h"], "rewriter": "none"}
    )
    got = set(missing_cells(jobs, datasets=["a", "b", "c"]).itertuples(index=False, name=None))
    everything = set(itertools.product("abc", ["S1", "S2"], ["h", "j"], ["none"]))
    assert got == everything - set(jobs.itertuples(index=False, name=None))


# --------------------------------------------------------------------------- content bias


def _content_labels() -> pd.DataFrame:
    orig = pd.DataFrame(
        {"query_id": "q", "doc_id": ["a", "b", "c", "d"], "human": [0, 0, 3, 3], "relevance": [0, 0, 3, 2]}
    )
    rew = orig.assign(relevance=[1, 0, 3, 3])
    return pd.concat([orig.assign(text_view="original"), rew.assign(text_view="rewritten:r1")]).assign(
        dataset="d", judge="j"
    )


def test_content_bias_known_answers(tmp_path):
    lab = _content_labels()
    s = content_bias.summary(lab).set_index("human")
    assert s.loc[0, "pairs"] == 2 and s.loc[0, "mean_original"] == 0 and s.loc[0, "mean_rewritten"] == 0.5
    assert s.loc[0, "share_up"] == 0.5 and s.loc[3, "share_up"] == 0.5 and s.loc[3, "share_down"] == 0
    d = content_bias.distribution(lab).set_index(["human", "label"])
    assert d.loc[(0, 0), "original"] == 1 and d.loc[(0, 0), "rewritten"] == 0.5 and d.loc[(0, 1), "rewritten"] == 0.5
    assert d.groupby("human")[["original", "rewritten"]].sum().eq(1).all().all()
    assert figures.content_bias(content_bias.distribution(lab), tmp_path / "f.png").stat().st_size > 10_000


def _log_job(client, exp, tags: dict, metrics: dict, files: dict) -> None:
    run = job_run.JobRun(client, exp, "hand", {"judgebench.kind": "job", "judgebench.sweep_id": "s", **tags})
    run.log_metrics(metrics)
    run.log_files(files)
    run.finish()


def test_rewritten_runs_feed_the_content_bias_section(tmp_path):
    """Hand-logged runs: a judge on the original and on a rewritten view; the main tables use the original view."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("hand", artifact_location=str(tmp_path / "art"))
    run = "q 0 a 1 4 S\nq 0 b 2 3 S\nq 0 c 3 2 S\nq 0 d 4 1 S\n".replace(" 0 ", " Q0 ")
    lab = _content_labels()
    for view, rewriter in (("original", "none"), ("rewritten:r1", "r1")):
        labels = lab[lab["text_view"] == view][["query_id", "doc_id", "relevance", "human"]].assign(raw="x")
        judge_value = "0.6" if view == "original" else "0.9"
        per_query = f"query_id,ndcg10_human,ndcg10_human_labelset,ndcg10_judge\nq,0.5,0.5,{judge_value}\n"
        _log_job(
            client,
            exp,
            {
                "dataset": "d",
                "system": "S",
                "ranker_type": "oracle",
                "judge": "j",
                "judge_family": "f",
                "rewriter": rewriter,
                "text_view": view,
            },
            {"labelled_pairs": 4, "calls_failed": 0},
            {"per_query.csv": per_query, "run.trec": run, "judge_labels.tsv": labels.to_csv(sep="\t", index=False)},
        )
    # a finished run whose per-query artifact is absent: its cells say missing and the report says why
    _log_job(
        client,
        exp,
        {
            "dataset": "d",
            "system": "S2",
            "ranker_type": "llm",
            "judge": "human",
            "judge_family": "human",
            "rewriter": "none",
            "text_view": "original",
        },
        {"labelled_pairs": 0},
        {"run.trec": run},
    )
    code, printed, err = run_compare(
        "experiment=hand", f"tracking_uri={uri}", f"out={tmp_path / 'out'}", "bootstrap=10", "log=false"
    )
    assert code == 0, err
    t1 = pd.read_csv(tmp_path / "out" / "table1_d.csv", index_col="system")
    assert t1.loc["S", "j"] == pytest.approx(0.6)  # the original view, not the rewritten 0.9
    assert t1.loc["S2", ["human", "j"]].isna().all() and "cannot read per_query.csv" in printed
    assert "1 run(s) on rewritten text views: used in the content-bias section only" in printed
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "1 run(s) on rewritten text views: used in this section only" in md
    summary = pd.read_csv(tmp_path / "out" / "content_bias_summary.csv")
    assert summary["view"].eq("rewritten:r1").all() and summary["share_up"].tolist() == [0.5, 0.5]
    assert (tmp_path / "out" / "figure_content_bias.png").exists() and "None found" not in md
    assert "| rewritten:r1" in md  # (its labels are the old TSV artifact: read as before)


def test_no_readable_per_query_artifact_is_an_error_not_an_empty_report(tmp_path):
    """Runs whose per_query.csv all fail to read (artifacts moved or deleted): one line naming the first problem and
    the count of the others, exit 2, no report written; one readable run is enough for a report (the test above)."""
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    client = MlflowClient(uri)
    exp = client.create_experiment("gone", artifact_location=str(tmp_path / "art"))
    run = "q Q0 a 1 4 S\nq Q0 b 2 3 S\n"
    for system in ("S1", "S2", "S3"):
        _log_job(
            client,
            exp,
            {
                "dataset": "d",
                "system": system,
                "ranker_type": "llm",
                "judge": "human",
                "judge_family": "human",
                "rewriter": "none",
                "text_view": "original",
            },
            {"labelled_pairs": 0},
            {"run.trec": run},
        )
    code, printed, err = run_compare(
        "experiment=gone", f"tracking_uri={uri}", f"out={tmp_path / 'out'}", "bootstrap=0", "log=false"
    )
    lines = [line for line in err.splitlines() if line.startswith("judgebench-compare:")]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert "none of its 3 job runs has a readable per_query.csv" in lines[0], lines[0]
    assert "cannot read per_query.csv" in lines[0] and "(and 2 more like it)" in lines[0], lines[0]
    assert not (tmp_path / "out" / "report.md").exists() and "Table 1" not in printed


def test_artifact_problems_are_listed_in_run_order_whatever_thread_finishes_first(tmp_path, monkeypatch):
    """The files of many runs are read in threads; a run that cannot be read is listed where it comes in the runs,
    not when its thread ends: here the first runs' reads are made the slowest, so they finish last."""
    import time

    from judgebench.compare.base import artifacts

    ids = [f"run{i}" for i in range(8)]
    art = Artifacts(
        MlflowClient(f"sqlite:///{tmp_path}/mlflow.db"), uris={r: str(tmp_path / "absent" / r) for r in ids}
    )
    fetch = artifacts.Artifacts._fetch

    def slow_first(self, run_id, name, reader):
        time.sleep(0.05 * (len(ids) - ids.index(run_id)))
        return fetch(self, run_id, name, reader)

    monkeypatch.setattr(artifacts.Artifacts, "_fetch", slow_first)
    jobs = pd.DataFrame({"run_id": ids, "dataset": "d", "system": [f"S{i}" for i in range(8)], "judge": "j"})
    assert art.per_query(jobs).empty
    assert [p.split(":")[0] for p in art.problems] == [f"run {r}" for r in ids]
    assert all("cannot read per_query.csv" in p for p in art.problems)
