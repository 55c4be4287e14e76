"""The report as a list of sections (compare/sections): its text outputs are pinned to a committed golden copy, and
the per-judge label-entropy section (the demonstration analysis) is checked against entropies computed by hand.

The golden copy (tests/data/report_golden/) is report.md, every CSV and every .tex of the toy grid's report
(bootstrap 200, seed 0); the judgebench version in the text is replaced by ``VERSION``. It was first written by the
code before the sections existed, so it also shows that moving the tables onto sections changed no byte. After a
deliberate change to the report, rewrite it with
``JUDGEBENCH_WRITE_GOLDEN=1 pytest tests/compare/test_report_sections.py`` and review the diff.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from judgebench import __version__
from judgebench.compare import report, sections
from judgebench.compare.base.section import Section
from judgebench.compare.sections import label_entropy

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "report_golden"
OPTIONS = {"bootstrap": 200, "seed": 0, "formats": ("md", "csv", "tex")}


def render_text_outputs(store: Path, out: Path) -> dict[str, str]:
    """{file name: text} of the toy grid's report written into ``out`` (what the golden copy holds)."""
    client = MlflowClient(f"sqlite:///{store}/mlruns/mlflow.db")
    rep = report.build(client, "grid", options=report.Options(**OPTIONS))
    files = report.write(rep, out)
    return {f.name: f.read_text(encoding="utf-8").replace(__version__, "VERSION") for f in files}


@pytest.fixture(scope="module")
def rendered(toy_grid_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("sections")
    return render_text_outputs(toy_grid_store, out)


def test_the_report_matches_its_golden_copy(rendered):
    if os.environ.get("JUDGEBENCH_WRITE_GOLDEN"):
        for old in GOLDEN.glob("*"):
            old.unlink()
        for name, text in rendered.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    golden = {p.name: p.read_text(encoding="utf-8") for p in GOLDEN.iterdir()}
    assert sorted(rendered) == sorted(golden)
    for name, text in golden.items():
        assert rendered[name] == text, f"{name} differs from tests/data/report_golden/{name}"


def test_label_entropy_known_answers():
    """Judge grades 0,0,1,1 (two equally likely: 1 bit) against human grades 0,1,2,3 (four: 2 bits); a judge that
    gives one grade has 0 bits; the rewritten view is left out."""
    labels = pd.DataFrame(
        {
            "dataset": ["d"] * 9,
            "judge": ["a"] * 4 + ["b"] * 4 + ["a"],
            "relevance": [0, 0, 1, 1, 2, 2, 2, 2, 3],
            "human": [0, 1, 2, 3, 0, 0, 1, 1, 3],
            "text_view": ["original"] * 8 + ["rewritten:x"],
            "query_id": list("qqqqqqqqq"),
            "doc_id": list("123412345"),
        }
    )
    table = label_entropy.label_entropy(labels).set_index("judge")
    assert table.loc["a", "pairs"] == 4 and table.loc["b", "pairs"] == 4
    assert table.loc["a", "judge_bits"] == pytest.approx(1.0) and table.loc["a", "human_bits"] == pytest.approx(2.0)
    assert table.loc["b", "judge_bits"] == pytest.approx(0.0) and table.loc["b", "human_bits"] == pytest.approx(1.0)
    assert table.loc["a", "difference"] == pytest.approx(-1.0)
    p = [3 / 8, 1 / 8, 4 / 8]  # an uneven distribution, by the formula
    assert label_entropy.bits(pd.Series([0, 0, 0, 1, 2, 2, 2, 2])) == pytest.approx(-sum(x * math.log2(x) for x in p))


def test_label_entropy_is_one_section_in_the_list(rendered):
    assert [s.name for s in sections.SECTIONS].index("label_entropy") == [s.name for s in sections.SECTIONS].index(
        "table2"
    ) + 1
    assert "## Label entropy per judge" in rendered["report.md"] and "label_entropy.csv" in rendered


def test_label_entropy_finding_for_a_collapsed_judge_only():
    """Judge b (0 bits against the humans' 1) has less than COLLAPSED of their entropy: one finding; judge a (1 bit
    against 2: exactly half) has none. Its findings join the report's, after those of FINDINGS_FIRST's sections."""
    table = pd.DataFrame(
        [["d", "a", "graded 0-3", 4, 1.0, 2.0, -1.0], ["d", "b", "graded 0-3", 4, 0.0, 1.0, -1.0]],
        columns=label_entropy.COLUMNS,
    )
    section = next(s for s in sections.SECTIONS if s.name == "label_entropy")
    found = list(section.findings(SimpleNamespace(results={"label_entropy": table})))
    assert [(f.dataset, f.judge, f.topic) for f in found] == [("d", "b", "label entropy")]
    assert "0.00 bits against the humans' 1.00" in found[0].text
    assert section.name not in sections.FINDINGS_FIRST and type(section).findings is not Section.findings
    assert set(sections.FINDINGS_FIRST) <= {s.name for s in sections.SECTIONS}  # the order names sections that exist


ANALYSES = {
    "oracle_tests",
    "query_gaps",
    "all_tests",
    "agreement_counts",
    "agreement_pairs",
    "discrimination",
    "bias",
    "self_preference",
    "order_bias",
    "ci_means",
    "ci_tau",
    "calibration",
    "calibration_summary",
    "budget_plan",
    "content_distribution",
    "content_summary",
    "label_entropy",
    "family_bias",
}


@pytest.fixture(scope="module")
def built(toy_grid_store):
    client = MlflowClient(f"sqlite:///{toy_grid_store}/mlruns/mlflow.db")
    return report.build(client, "grid", options=report.Options(**OPTIONS))


def test_every_analysis_is_computed_by_its_section_not_by_build(built):
    """report.build gathers the shared inputs only: every analysis result is in ``results`` (put there by its section's
    compute), read as an attribute of the Report, and none of them is a field of the Report."""
    from dataclasses import fields

    from scipy.stats import ttest_rel

    assert set(built.results) == ANALYSES
    assert all(getattr(built, name) is built.results[name] for name in ANALYSES)
    assert not ANALYSES & {f.name for f in fields(report.Report)}
    # and the numbers are the analyses' own: Table 3's first test, recomputed by hand from the shared per-query frame
    row = built.oracle_tests.iloc[0]
    pq = built.per_query[(built.per_query["dataset"] == row.dataset) & (built.per_query["judge"] == row.judge)]
    pq = pq[pq["role"] == "judge"] if "role" in pq else pq  # the judge's own values, not its human reference's
    wide = pq.pivot(index="query_id", columns="system", values="value")[[row.system_a, row.system_b]].dropna()
    t, p = ttest_rel(wide[row.system_a], wide[row.system_b])
    assert (row.t, row.p) == pytest.approx((t, p), rel=1e-12)
    assert list(built.ci_tau["judge"]) == list(
        built.table2["judge"]
    )  # the bootstrap ran (bootstrap=200): one row a judge


class _Answer(sections.Section):
    name = "answer"

    def compute(self, r):
        return {"answer": len(r.jobs) * 2}


def test_the_compare_run_metrics_are_the_sections_own(built):
    """report.log_compare_run logs what each section declares (Section.compare_run_metrics): Table 2's statistics per
    (dataset, judge), recomputed here from the table, and self-preference's, from its frame; nothing else."""
    from judgebench.compare.base import columns, names

    metrics = sections.compare_run_metrics(built)
    table2 = {
        f"{c}.{names.file_part(row['dataset'])}.{names.file_part(row['judge'])}": row[c]
        for _, row in built.table2.iterrows()
        for c in columns.STATISTICS
        if row[c] == row[c]
    }
    sp = built.self_preference["self_preference"]
    own = {
        f"self_preference.{names.file_part(d)}.{names.file_part(j)}": v
        for d, j, v in zip(sp["dataset"], sp["judge"], sp["self_preference"])
    }
    assert table2 and {k: metrics[k] for k in table2} == table2
    assert {k: metrics[k] for k in own} == own
    rest = {k.split(".")[0] for k in metrics.keys() - table2.keys() - own.keys()}
    assert rest <= {
        "self_preference_lo",
        "self_preference_hi",
        "self_preference_p",
        "family_interaction",
        "family_interaction_lo",
        "family_interaction_hi",
        "family_interaction_p",
        "prp_order_consistency",
    }
    owners = [
        s.name for s in sections.SECTIONS if type(s).compare_run_metrics is not sections.Section.compare_run_metrics
    ]
    assert owners == ["table2", "self_preference"]


def test_a_section_in_the_list_computes_a_result_the_report_reads_by_name():
    """What adding an analysis needs: a section whose compute gives a named result; the Report reads it as an
    attribute with no field for it. Two sections giving one name is refused; an unknown name says what there is."""
    r = report.Report("e", None, report.Options(), pd.DataFrame({"x": [1, 2, 3]}), {}, pd.DataFrame(), pd.DataFrame())
    sections.compute(r, [_Answer()])
    assert r.answer == 6 and r.results == {"answer": 6} and _Answer().result(r) == 6
    with pytest.raises(ValueError, match="section 'answer' gives the result 'answer' that another section gave"):
        sections.compute(r, [_Answer()])
    with pytest.raises(AttributeError, match="no field or section result 'bias' \\(results: answer\\)"):
        r.bias
    assert (
        getattr(r, "discrimination", None) is None
    )  # what the Discrimination section's findings rely on for a report without it


def test_table1_marks_a_run_file_that_kept_documents_outside_the_pool():
    """A run file ranked with ranker.outside_pool=keep logs how many documents it kept outside the pool (its ranking's
    statistics, as columns of compare's job rows); Table 1 notes that system under its dataset's table, in the
    terminal and as an alert finding; a system that kept none, or another dataset, gets nothing."""
    from judgebench.compare.base.report_model import Options
    from judgebench.compare.sections.table1 import Table1

    jobs = pd.DataFrame(
        {
            "dataset": ["dl19", "dl19", "dl19", "dl20"],
            "system": ["mine", "mine", "bm25", "mine"],
            "judge": ["human", "j", "human", "human"],
            "outside_pool_kept": [2.0, 2.0, None, 0.0],
            "outside_pool_of": [12.0, 12.0, None, 10.0],
        }
    )
    table = pd.DataFrame({"type": ["run", "run"], "human": [0.5, 0.4], "j": [0.3, 0.35]}, index=["mine", "bm25"])
    r = SimpleNamespace(
        jobs=jobs,
        table1={"dl19": table, "dl20": table},
        options=Options(),
        virtual=[],
        judges=["j"],
        real_judges=["j"],
        aliases={},
    )
    md = "\n".join(Table1().markdown(r))
    assert md.count("outside the judged pool") == 1 and "mine keeps 2 of 12 documents outside the judged pool" in md
    assert sum("outside the judged pool" in line for line in Table1().console(r)) == 1
    (f,) = Table1().findings(r)
    assert f.alert and f.dataset == "dl19" and f.text.startswith("mine keeps 2 of 12 documents")
    assert list(Table1().findings(SimpleNamespace(jobs=jobs.drop(columns=["outside_pool_kept"])))) == []


def test_the_labels_only_report_is_written_from_its_sections(tmp_path, monkeypatch):
    """compare/labels_report.py has no path of its own: report.md, the CSV files and the compare run's metrics are its
    sections' (compare/sections/labels_only.py), so a section added to that list reaches them; the metrics are every
    Table 2 statistic of the table that has a value, recomputed here."""
    from judgebench.compare import labels_report
    from judgebench.compare.base import columns
    from judgebench.compare.base.names import file_part
    from judgebench.compare.sections import labels_only

    table = pd.DataFrame(
        [
            {
                "dataset": "d",
                "judge": "j",
                **{c: 0.5 for c in columns.AGREEMENT},
                "labelled_pairs": 10,
                "failed_pairs": 0,
                **{c: 0.25 for c in columns.SHARES},
            }
        ]
    )[labels_report.TABLE]
    table.loc[0, columns.AGREEMENT[0]] = float("nan")  # a statistic without a value is no metric

    class Extra(Section):
        name = "extra"

        def markdown(self, r):
            return ["\n## An extra section"]

        def csv(self, r):
            return [("extra", pd.DataFrame({"x": [1]}), False)]

    monkeypatch.setattr(labels_only, "SECTIONS", [*labels_only.SECTIONS, Extra()])
    r = labels_report.LabelsReport(
        "e",
        None,
        ("md", "csv"),
        pd.DataFrame({"run_id": ["r"], "dataset": ["d"], "judge": ["j"]}),
        table,
        pd.DataFrame(),
        pd.DataFrame(columns=["dataset", "judge"]),
    )
    files = {f.name for f in labels_report.write(r, tmp_path)}
    assert files == {"report.md", "table2.csv", "extra.csv"}
    text = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert (
        text.index("## Table 2: agreement with the human labels per judge")
        < text.index(labels_only.NEEDS_SYSTEMS)
        < text.index("## An extra section")
    )
    want = {f"{c}.d.{file_part('j')}": table.loc[0, c] for c in [*columns.AGREEMENT, *columns.SHARES]}
    del want[f"{columns.AGREEMENT[0]}.d.j"]
    assert sections.compare_run_metrics(r, labels_only.SECTIONS) == want
