"""The findings that open every report (compare/base/findings.py), the cells a running sweep still waits for, and the
scatter panels' label placement (compare/renderers/label_layout.py)."""

from __future__ import annotations

import itertools
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from mlflow.tracking import MlflowClient  # noqa: E402

from judgebench.compare import console, sections
from judgebench.compare.analyses import self_preference
from judgebench.compare.base import findings
from judgebench.compare.base.section import Section
from judgebench.compare.renderers import label_layout, markdown
from judgebench.compare.sections import discrimination as discrimination_section
from judgebench.compare.sections import grid_state
from judgebench.compare.store import collect
from judgebench.identity.run_tags import RunTags  # noqa: E402


def _cells(rows):
    return pd.DataFrame(rows, columns=collect.CELL)


def test_a_running_sweep_counts_its_running_cells_as_missing(tmp_path):
    """Three cells: one finished, two RUNNING (one of a system with no finished cell at all). Before, the product of
    the finished cells' names had no room for the unseen system: "No missing grid cells"."""
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    exp = client.create_experiment("e", artifact_location=str(tmp_path / "artifacts"))
    for system, judge, status in (
        ("BM25", "simulated", "FINISHED"),
        ("BM25", "human", "RUNNING"),
        ("SimLLM", "simulated", "RUNNING"),
    ):
        run = client.create_run(
            exp, tags=RunTags(kind="job", dataset="toy", system=system, judge=judge, rewriter="none").to_tags()
        )
        if status == "FINISHED":
            client.set_terminated(run.info.run_id, "FINISHED")
    other = client.create_run(
        exp, tags=RunTags(kind="judge_summary", dataset="toy", system="x", judge="y").to_tags()
    )  # not a job
    assert other.info.status == "RUNNING"
    jobs = _cells([("toy", "BM25", "simulated", "none")])
    running = collect.running_cells(client, "e", jobs)
    assert sorted(running.itertuples(index=False, name=None)) == [
        ("toy", "BM25", "human", "none"),
        ("toy", "SimLLM", "simulated", "none"),
    ]
    missing = collect.missing_cells(jobs, running=running)
    # systems {BM25, SimLLM} x judges {simulated, human}, less the finished one: 3 cells, 2 of them running
    assert sorted(missing.itertuples(index=False, name=None)) == sorted(
        set(itertools.product(["toy"], ["BM25", "SimLLM"], ["simulated", "human"], ["none"]))
        - {("toy", "BM25", "simulated", "none")}
    )
    assert collect.missing_cells(jobs).empty  # what compare said before: nothing missing
    report = SimpleNamespace(missing=missing, running=running, jobs=jobs, rewritten_runs=0)
    (line,) = grid_state.GridState().findings(report)
    assert line.alert and line.text.startswith(
        "3 of 4 grid cells have no finished run yet (2 still running, 1 not started or failed)"
    )


def _report(**kw) -> SimpleNamespace:
    """The parts of a Report the findings read, with one (dataset, judge) row."""
    t2 = pd.DataFrame(
        [
            {
                "dataset": "d",
                "judge": "j",
                "tau_all": 0.5,
                "tau_oracles": 0.8,
                "kappa_graded": 0.45,
                "kappa_ge2": 0.6,
                "labelled_pairs": 1133,
            }
        ]
    )
    bias = pd.DataFrame(
        [
            {
                "dataset": "d",
                "judge": "j",
                "inverted": True,
                "llm_rank_judge": 1.0,
                "oracle_rank_judge": 4.0,
                "llm_rank_human": 7.0,
                "oracle_rank_human": 3.5,
                "llm_wins_judge": 0.9,
                "llm_wins_human": 0.1,
            }
        ]
    )
    ci = pd.DataFrame(
        [
            {
                "dataset": "d",
                "judge": "j",
                "query_tau_oracles": 0.3,
                "query_tau_oracles_lo": -0.1,
                "query_tau_oracles_hi": 0.7,
                "query_tau_oracles_p_holm": 0.4,
                "oracles_verdict": "not distinguishable from chance",
            }
        ]
    )
    sp = pd.DataFrame(
        [
            {
                "dataset": "d",
                "judge": "j",
                "judge_family": "gemma",
                "self_preference": 0.05,
                "lo": 0.01,
                "hi": 0.09,
                "p_value": 0.001,
                "p_holm": 0.002,
                "verdict": "favours",
            }
        ]
    )
    base = dict(
        table2=t2,
        bias=bias,
        ci_tau=ci,
        options=SimpleNamespace(level=0.95, reference="human_judged"),
        self_preference={"self_preference": sp},
        calibration_summary=pd.DataFrame(),
        missing=_cells([]),
        running=_cells([]),
        jobs=_cells([("d", "s", "j", "none")] * 20),
        rewritten_runs=0,
    )
    return SimpleNamespace(**{**base, **kw})


def test_findings_say_inversion_tau_with_interval_kappa_and_self_preference():
    found = sections.findings(_report())
    assert [f.topic for f in found] == ["grid", "inversion", "oracle order", "label agreement", "self-preference"]
    text = {f.topic: f.text for f in found}
    assert text["grid"] == "all 20 grid cells have a finished run."
    assert text["inversion"].startswith(
        "INVERTS the LLM and oracle rankers (mean rank of the LLM systems 1.0 vs the oracles 4.0"
    )
    assert "LLM systems win 90% of (LLM, oracle) pairs under the judge, 10% under humans" in text["inversion"]
    # the section's verdict (Holm p 0.4), whatever the point tau of the means: not distinguishable from chance
    assert text["oracle order"].startswith(
        "cannot be told from chance at ordering the oracle rankers: per-query τ = 0.30 "
        "[-0.10, 0.70] against human_judged (95% t interval over queries, Holm p = 0.4)"
    )
    assert "τ of the mean orderings = 0.80 over the oracles, 0.50 over all systems" in text["oracle order"]
    assert (
        "is moderate: Cohen's κ = 0.45" in text["label agreement"]
        and "over 1,133 labelled pairs" in text["label agreement"]
    )
    assert text["self-preference"].startswith(
        "favours its own family's (gemma) rankers by +0.050 [+0.010, +0.090] nDCG@10, Holm p = 0.002"
    )
    assert [f.alert for f in found] == [False, True, False, False, True]
    calibrated = pd.DataFrame(
        [
            {
                "dataset": "d",
                "judge": "j",
                "k_no_inversion": 10.0,
                "estimators_at_k": "ppi",
                "tau_best_at_k": 0.8,
                "tau_human_only_at_k": 0.6,
                "judge_adds": True,
            }
        ]
    )
    (c,) = [f for f in sections.findings(_report(calibration_summary=calibrated)) if f.topic == "calibration"]
    assert c.text == (
        "calibration: 10 human-labelled queries remove the inversion (ppi); best τ there 0.80 vs 0.60 from the "
        "human labels alone; the judge adds to the human labels there."
    )


def test_self_preference_panel_and_section_agree_when_holm_says_no():
    """The issue's row: the interval's lower end above 0 but the Holm-adjusted p 0.2. The section (its verdict and its
    sentence) says no evidence; the findings panel, built from the section's verdict, says the same."""
    row = {
        "dataset": "d",
        "judge": "j",
        "judge_family": "gemma",
        "self_preference": 0.03,
        "lo": 0.005,
        "hi": 0.055,
        "p_value": 0.1,
        "p_holm": 0.2,
    }
    sp = pd.DataFrame([row])
    sp["verdict"] = [self_preference.verdict(r.lo, r.hi, r.p_holm) for r in sp.itertuples()]  # what analyse() adds
    assert sp.at[0, "verdict"] == "no evidence"
    (section,) = self_preference.findings({"self_preference": sp}, _cells([]))
    assert (
        "no evidence that it favours its own family" in section and "not significant after Holm's adjustment" in section
    )
    (panel,) = [
        f for f in sections.findings(_report(self_preference={"self_preference": sp})) if f.topic == "self-preference"
    ]
    assert (
        panel.text.startswith(
            "no evidence of self-preference for its family gemma (+0.030 [+0.005, +0.055] nDCG@10, Holm p = 0.2)"
        )
        and not panel.alert
    )
    # and where Holm agrees, both claim the direction
    sp2 = sp.assign(
        p_holm=0.01, verdict=lambda f: [self_preference.verdict(lo, hi, p) for lo, hi, p in zip(f.lo, f.hi, f.p_holm)]
    )
    (section,) = self_preference.findings({"self_preference": sp2}, _cells([]))
    (panel,) = [
        f for f in sections.findings(_report(self_preference={"self_preference": sp2})) if f.topic == "self-preference"
    ]
    assert (
        " favours its own family's rankers by " in section
        and panel.text.startswith("favours its own family's")
        and panel.alert
    )


def test_a_section_with_findings_reaches_every_output(monkeypatch):
    """What another analysis does to open the report with its result: its section overrides ``findings`` (the one way
    a finding is made), and the section joins SECTIONS."""

    class Separation(Section):
        name = "separation"

        def findings(self, r):
            yield findings.Finding(
                "discrimination",
                "tells relevant from non-relevant passages: AUC 0.81 [0.78, 0.84].",
                "d",
                "j",
                brief="AUC 0.81",
            )

    monkeypatch.setattr(sections, "SECTIONS", [*sections.SECTIONS, Separation()])
    r = _report()
    found = sections.findings(r)
    assert found[-1].topic == "discrimination" and found[-1].subject == "d / j"
    md = "\n".join(markdown.findings_section(found))
    assert md.index("**d / j**") < md.index("- tells relevant from non-relevant passages: AUC 0.81 \\[0.78, 0.84\\].")
    assert console.findings_lines(r)[-1].endswith("AUC 0.81")


@pytest.mark.parametrize("seed", [0, 1])
def test_point_labels_do_not_overlap(seed):
    """A dense cluster of points (the Swap[..] oracles near the top right): no two label boxes intersect."""
    rng = np.random.default_rng(seed)
    xs, ys = 0.85 + 0.1 * rng.random(9), 0.85 + 0.1 * rng.random(9)
    fig, ax = plt.subplots(figsize=(4, 4))
    ax.scatter(xs, ys)
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    fig.tight_layout()
    anns = label_layout.place(ax, xs, ys, [f"Swap[{i},{i + 1}]" for i in range(9)])
    fig.canvas.draw()
    boxes = [Text.get_window_extent(a) for a in anns]  # the text, not its leader line
    overlaps = [(i, j) for i, j in itertools.combinations(range(len(boxes)), 2) if boxes[i].overlaps(boxes[j])]
    plt.close(fig)
    assert len(anns) == 9 and overlaps == []


def test_the_discrimination_answer_is_a_finding_of_its_dataset():
    """compare/analyses/discrimination.py's per-dataset answer (read by attribute from the report) opens the report
    too."""
    table = pd.DataFrame({"dataset": ["d", "d", "d"], "judge": ["a", "b", "c"], "as_constructed": [9, 9, 4]})
    d = SimpleNamespace(
        answers={"d": "label agreement predicts it: rho 0.8 [0.5, 1.0]"}, table=table, human={"d": (12, 15)}
    )
    (f,) = discrimination_section.Discrimination().findings(SimpleNamespace(discrimination=d))
    assert (f.dataset, f.judge, f.subject) == ("d", "", "d")
    assert f.text == (
        "humans order 12 of 15 oracle pairs as constructed; 2 of 3 judges order 9 (sign test per pair, Holm "
        "over the pairs). label agreement predicts it: rho 0.8 [0.5, 1.0]"
    )
    assert (
        list(discrimination_section.Discrimination().findings(SimpleNamespace())) == []
    )  # a report without that analysis


def _many_judges(n: int = 35) -> SimpleNamespace:
    """A report of n judges (as +experiment=llmjudge_oracles has 33 + human references): tau_oracles falls with the
    judge's number, kappa rises, no judge can be tested for inversion (no LLM systems), two favour their own family."""
    judges = [f"judge{i:02d}" for i in range(n)]
    t2 = pd.DataFrame(
        {
            "dataset": "d",
            "judge": judges,
            "tau_all": 0.5,
            "tau_oracles": np.linspace(0.9, -0.2, n),
            "kappa_graded": np.linspace(0.1, 0.7, n),
            "kappa_ge2": 0.5,
            "labelled_pairs": 400,
        }
    )
    bias = pd.DataFrame(
        {
            "dataset": "d",
            "judge": judges,
            "inverted": np.nan,
            **{
                c: np.nan
                for c in (
                    "llm_rank_judge",
                    "oracle_rank_judge",
                    "llm_rank_human",
                    "oracle_rank_human",
                    "llm_wins_judge",
                    "llm_wins_human",
                )
            },
        }
    )
    sp = pd.DataFrame(
        {
            "dataset": "d",
            "judge": judges,
            "judge_family": "fam",
            "self_preference": 0.0,
            "lo": [0.01, 0.01] + [-0.05] * (n - 2),
            "hi": 0.09,
            "p_holm": [0.01, 0.01] + [0.5] * (n - 2),
            "verdict": ["favours", "favours"] + ["no evidence"] * (n - 2),
        }
    )  # the section's own verdicts
    return _report(table2=t2, bias=bias, ci_tau=pd.DataFrame(), self_preference={"self_preference": sp})


def _panel_lines(md_lines: list[str]) -> int:
    return len("\n".join(md_lines).strip().splitlines())


def test_at_35_judges_the_panel_groups_findings_by_kind_and_stays_a_screen():
    r = _many_judges()
    found = sections.findings(r)
    assert sum(f.judge != findings.GRID for f in found) == 35 * 4  # inversion, oracle order, agreement, self-preference
    md = markdown.findings_section(found, r.table2)
    text = "\n".join(md)
    # one sentence for what every judge shares, said once
    (common,) = [x for x in md if x.startswith("- all 35 judges: ")]
    assert (
        common == "- all 35 judges: inversion not measured: it needs both LLM and oracle systems."
        and text.count("not measured") == 1
    )
    # a kind of two verdicts: one line per verdict, the few named, alerts first
    verdict = [x for x in md if "self-preference" in x and x.startswith("- ")]
    assert verdict[0].startswith(
        "- **self-preference +0.000 \\[+0.010, +0.090\\] nDCG@10**: 2 judges (d / judge00, d / judge01)"
    ), verdict
    # the ranked kinds: 6 rows, the top 3 and the bottom 3 by the Table 2 column, best first
    for topic, column in (("oracle order", "tau_oracles"), ("label agreement", "kappa_graded")):
        start = md.index(f"\n**{topic}**\n")
        rows = [x for x in md[start:] if x.startswith("| d / ")][:6]
        shown = [x.split(" | ")[0].removeprefix("| d / ") for x in rows]
        ranked = r.table2.sort_values(column, ascending=False)["judge"].tolist()
        assert shown == ranked[:3] + ranked[-3:], (topic, shown)
        assert (
            f"the top 3 and the bottom 3 of 35 judges, ranked by {column}, best first:" in md[start : start + 3][1]
        ), md[start : start + 3]
    assert md[-1] == f"\n{markdown.PANEL_END} [Findings per judge](#findings-per-judge).\n"
    assert _panel_lines(md) <= 50, text  # was 35 x 5 bullets and 35 headings
    # every finding in full stays in the report, lower down
    detail = "\n".join(markdown.findings_detail(found, r.table2))
    assert detail.startswith("\n## Findings per judge\n") and all(f"**d / judge{i:02d}**" in detail for i in range(35))
    assert detail.count("inversion not measured") == 35


def test_at_35_judges_the_terminal_findings_are_a_few_lines():
    lines = console.findings_lines(_many_judges())
    assert len(lines) <= 8 and all(len(x) <= console.WIDTH for x in lines), "\n".join(lines)
    assert lines[0].startswith("  grid: all 20 grid cells have a finished run")
    assert any(x.startswith("  inversion: all 35 judges: inversion n/a") for x in lines), lines
    assert any(
        "best and worst by tau_oracles (33 more in the report) d / judge00 oracles n/a, tau_oracles 0.90" in x
        for x in lines
    ), lines


def test_the_html_panel_holds_the_kinds_and_ends_at_its_link(tmp_path):
    from judgebench.compare.renderers import html as report_html

    r = _many_judges()
    md = "\n".join(
        [
            "# t",
            *markdown.findings_section(sections.findings(r), r.table2),
            "",
            "12 job runs; selection prose.",
            "",
            "## Table 1",
            "",
            *markdown.findings_detail(sections.findings(r), r.table2),
        ]
    )
    page = report_html.render(md, tmp_path, {}, "t")
    panel = page[page.index('<section class="findings">') : page.index("</section>")]
    assert panel.count("<table>") == 2 and "Findings per judge</a>" in panel and "selection prose" not in panel
    assert 'id="findings-per-judge"' in page and "selection prose" in page


def test_the_human_vs_judge_scatter_wraps_at_35_judges_and_keeps_everything_in_the_image(tmp_path, recwarn):
    """35 judges were one row of 35 panels (a 5760 x 480 strip): now rows of scatter_figures.SCATTER_COLUMNS, a picture
    about as wide as it is high, written with every label inside it and no "Tight layout not applied" warning."""
    from PIL import Image

    from judgebench.compare.renderers import scatter_figures

    rng = np.random.default_rng(0)
    judges, systems = [f"judge{i:02d}" for i in range(35)], [f"Swap[{i}]" for i in range(8)]
    table = pd.DataFrame(rng.random((8, 35)), index=systems, columns=judges).assign(type="oracle")
    refs = SimpleNamespace(
        reference="human_judged", column=lambda d, j, index: pd.Series(rng.random(len(index)), index=index)
    )
    path = scatter_figures.scatter({"d": table}, tmp_path / "scatter.png", refs)
    width, height = Image.open(path).size
    cols, rows = scatter_figures.SCATTER_COLUMNS, -(-35 // scatter_figures.SCATTER_COLUMNS)
    assert 0.8 < width / height < 1.4 and width <= cols * 4.0 * 120 + 120, (width, height)
    assert height >= rows * 4.0 * 120 * 0.9, (width, height)
    assert not [w for w in recwarn if "Tight layout" in str(w.message)]


def _panel_height(tmp_path, md: str, name: str) -> int:
    """Pixel rows of report.html's findings panel (its #fffbea background) in Chromium at 1400 px wide."""
    from PIL import Image

    from browser import chromium, headless
    from judgebench.compare.renderers import html as report_html

    binary = chromium()
    page = tmp_path / f"{name}.html"
    page.write_text(report_html.render(md, tmp_path, {"experiment": "many"}, "many"), encoding="utf-8")
    shot = tmp_path / f"{name}.png"
    done = headless(binary, f"--screenshot={shot}", "--window-size=1400,8000", "--hide-scrollbars", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    rgb = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    panel = (np.abs(rgb - np.array([255, 251, 234])).sum(axis=2) <= 3).sum(axis=1) > 200
    return int(panel.sum())


def test_at_35_judges_the_findings_panel_fits_about_one_screen_in_a_browser(tmp_path):
    """The panel as Chromium draws it at 1400 px: about one screen (<= 1000 px) at 35 judges; the same findings one
    bullet per judge (the layout before) are several screens, so the measure tells the two apart."""
    r = _many_judges()
    found = sections.findings(r)
    tail = ["", "12 job runs.", "", "## Table 1", "", *markdown.findings_detail(found, r.table2)]
    by_kind = _panel_height(
        tmp_path, "\n".join(["# many", *markdown.findings_section(found, r.table2), *tail]), "by_kind"
    )
    by_judge = _panel_height(
        tmp_path, "\n".join(["# many", "\n## Findings\n", *markdown.findings_by_subject(found), *tail]), "by_judge"
    )
    print(f"findings panel at 35 judges, 1400 px wide: {by_kind} px by kind, {by_judge} px one bullet per judge")
    assert 200 < by_kind <= 1000, by_kind
    assert by_judge > 3 * 1000, by_judge


def test_without_oracle_rankers_the_panel_says_how_the_judge_orders_the_systems():
    """A leaderboard (imported results, no oracle rankers): tau of the means with tau_AP and the top-k taus, the
    per-query
    tau with its interval and the significance decisions, each as its table gives it; nothing for oracles."""
    t2 = pd.DataFrame(
        [
            {
                "dataset": "d",
                "judge": "j",
                "tau_all": 0.942,
                "tau_oracles": np.nan,
                "tau_ap": 0.895,
                "tau_top5": 0.527,
                "tau_top10": np.nan,
                "kappa_graded": 0.26,
                "kappa_ge2": 0.43,
                "labelled_pairs": 22327,
            }
        ]
    )
    ci = pd.DataFrame(
        [{"dataset": "d", "judge": "j", "query_tau_all": 0.555, "query_tau_all_lo": 0.496, "query_tau_all_hi": 0.614}]
    )
    counts = pd.DataFrame([{"dataset": "d", "judge": "j", "agree": 573, "missed": 5, "spurious": 17, "reversed": 0}])
    found = sections.findings(_report(table2=t2, ci_tau=ci, agreement_counts=counts))
    (said,) = [f for f in found if f.topic == "system order"]
    assert said.text == (
        "orders the systems: Kendall's τ of the mean orderings = 0.94 (τ_AP 0.90, among the human top 5 0.53); "
        "per-query τ = 0.56 [0.50, 0.61] (95% t interval over queries: how often, query by query, it orders two "
        "systems as human_judged does); its significance decisions agree with the humans' on 573 of 595 system "
        "pairs (5 missed, 17 spurious, 0 reversed)."
    )
    assert not any(f.topic == "oracle order" for f in found)
    # with oracle rankers the oracle-order finding speaks, not this one
    assert not any(f.topic == "system order" for f in sections.findings(_report()))
