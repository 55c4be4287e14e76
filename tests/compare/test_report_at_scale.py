"""The report at 35 judges and at 35 systems: Table 1 grows down, not sideways; every figure keeps its drawn content
inside its canvas with no two labels over each other (renderers/figure_check.py); the page never scrolls sideways."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from judgebench.compare.renderers import (  # noqa: E402
    figure_check,
    figure_style,
    figures,
    label_figures,
    render,
    scatter_figures,
)
from judgebench.compare.sections.table1 import Table1  # noqa: E402


def _table1(judges: int, systems: int, seed: int = 0) -> pd.DataFrame:
    """A Table 1 frame: systems x (type, human, human_labelset, judge00...), values in [0, 1], a few ties."""
    rng = np.random.default_rng(seed)
    cols = ["human", "human_labelset", *[f"judge{i:02d}" for i in range(judges - 2)]]
    index = pd.Index([f"run_{i:02d}_{'bm25' if i % 3 else 'monoT5-3b'}" for i in range(systems)], name="system")
    t = pd.DataFrame(rng.uniform(0.2, 0.9, (systems, len(cols))).round(3), index=index, columns=cols)
    t.insert(0, "type", ["oracle" if i % 4 else "llm" for i in range(systems)])
    return t


def _report(t: pd.DataFrame) -> SimpleNamespace:
    return SimpleNamespace(
        table1={"dl20": t},
        options=SimpleNamespace(panel=None),
        virtual=[],
        aliases={},
        real_judges=["a", "b"],
        jobs=pd.DataFrame({"dataset": ["dl20"], "system": ["x"]}),
    )


def _md_table(lines: list[str]) -> list[list[str]]:
    rows = [x for x in "\n".join(lines).splitlines() if x.startswith("|")]
    return [[c.strip() for c in x.strip("|").split("|")] for x in rows if not set(x) <= set("|-: ")]


def test_table1_keeps_systems_as_rows_up_to_12_judges_and_turns_past_it():
    few = _table1(render.JUDGE_COLUMNS, 8)
    rows = _md_table(Table1().markdown(_report(few)))
    assert rows[0][1:] == ["type", *few.columns[1:]] and len(rows) == 1 + 8  # as before: a column per judge

    many = _table1(35, 8)
    md = Table1().markdown(_report(many))
    assert any("35 judges: one row per judge, one column per system" in x for x in md)
    assert md[0] == "\n## Table 1: mean nDCG@10 on judged documents (judge x system; best per judge in bold)"
    rows = _md_table(md)
    header, body = rows[0], rows[1:]
    assert header == ["judge", *many.index] and [r[0] for r in body] == ["type", *many.columns[1:]]
    assert body[0][1:] == list(many["type"])
    for row in body[1:]:  # best per judge in bold, computed here from the frame
        values = many[row[0]]
        bold = [s for s, cell in zip(many.index, row[1:]) if cell.startswith("**")]
        assert bold == list(values.index[values == values.max()]), row
        assert [float(c.strip("*")) for c in row[1:]] == pytest.approx(list(values))


def test_table1_in_the_terminal_is_one_line_past_12_judges():
    few, many = _table1(6, 8), _table1(35, 8)
    assert (
        len("\n".join(Table1().console(_report(few))).strip().splitlines()) == 1 + 2 + 6 + 1
    )  # title, header and rule, 6 rows, note
    (line,) = Table1().console(_report(many))
    assert (
        line == "\nTable 1 (dl20): mean nDCG@10, judged only, 8 systems x 35 judges: in the report (one row per judge)"
    )


def test_the_terminal_names_3_problems_and_counts_the_rest():
    from judgebench.compare.sections import grid_state

    problems = [f"run r{i}: cannot read run.trec" for i in range(39)]
    lines = grid_state.problem_lines(problems)
    assert lines == [f"problem: run r{i}: cannot read run.trec" for i in range(3)] + [
        "(+ 36 more problems like these: every one in the report)"
    ]
    assert grid_state.problem_lines(problems[:3]) == lines[:3]


def test_table3_turns_past_12_judges():
    from judgebench.compare.sections.significance_tests import OracleTests

    judges = [f"judge{i:02d}" for i in range(35)]
    tests = pd.DataFrame(
        [
            {"dataset": "dl20", "system_a": a, "system_b": b, "judge": j, "p": 0.01 * (n + 1), "p_holm": 0.02 * (n + 1)}
            for n, (a, b) in enumerate([("s1", "s2"), ("s1", "s3")])
            for j in judges
        ]
    )
    r = SimpleNamespace(oracle_tests=tests, options=SimpleNamespace(alpha=0.05), judges=judges)
    md = OracleTests().markdown(r)
    rows = _md_table(md)
    assert "one row per judge, one column per pair" in md[1] and rows[0] == ["judge", "s1 vs s2", "s1 vs s3"], md[:3]
    assert [x[0] for x in rows[1:]] == judges, rows
    assert rows[1][1:] == ["0.01\\* / 0.02\\*", "0.02\\* / 0.04\\*"], rows[1]  # p / p_holm, starred under alpha 0.05


# --------------------------------------------------------------------------- figures


def test_the_check_finds_a_clipped_legend_and_overlapping_labels():
    """It can fail: the old bars at 35 judges (a legend outside the axes, past the canvas) and 35 long tick labels
    on a small axis."""
    fig, ax = plt.subplots(figsize=(4, 3))
    for i in range(35):
        ax.bar([i], [0.5], label=f"judge number {i}")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_xticks(range(35), [f"system_{i}_long_name" for i in range(35)])
    found = figure_check.problems(fig)
    plt.close(fig)
    assert any(x.startswith("legend passes the image's edge") for x in found), found
    assert any(x.startswith("x tick 'system_0_long_name' overlaps x tick 'system_1_long_name'") for x in found), found[
        :5
    ]


@pytest.fixture
def checked(monkeypatch):
    """Every figure saved while the test runs, checked before it is written: {file name: problems}."""
    seen: dict[str, list[str]] = {}
    save = Figure.savefig

    def savefig(self, fname, *args, **kwargs):
        seen[str(getattr(fname, "name", fname))] = figure_check.problems(self)
        return save(self, fname, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", savefig)
    return seen


def _t2(t: pd.DataFrame, rng) -> pd.DataFrame:
    judges = [c for c in t.columns if c != "type"]
    tau = rng.choice([0.4, 0.6, 0.8, 1.0], len(judges))  # many ties, as 35 judges over 8 systems have
    return pd.DataFrame(
        {"dataset": "dl20", "judge": judges, "tau_all": tau, "kappa_graded": rng.choice([0.2, 0.3, 0.5], len(judges))}
    )


@pytest.mark.parametrize("judges, systems", [(35, 8), (5, 35), (35, 35)])
def test_every_figure_of_a_large_report_is_inside_its_canvas_and_its_labels_do_not_overlap(
    tmp_path, checked, judges, systems
):
    rng = np.random.default_rng(1)
    t = _table1(judges, systems)
    refs = SimpleNamespace(reference="human", column=lambda d, j, index: t["human"].reindex(index))
    t2 = _t2(t, rng)
    drawn = [c for c in t.columns if c not in ("type", "human", "human_labelset")][
        :12
    ]  # the report caps per-judge figures
    drawn_bars = figures.ndcg_bars({"dl20": t}, tmp_path / "figure_ndcg_bars.png")
    assert drawn_bars.name == (
        "figure_ndcg_heatmap.png" if judges > 10 or judges * systems > 120 else "figure_ndcg_bars.png"
    )
    scatter_figures.scatter({"dl20": t[["type", "human", *drawn]]}, tmp_path / "figure_scatter.png", refs, t2)
    expected = {drawn_bars.name, "figure_scatter.png"}
    # the kappa-tau plot depends on the judges alone (35 judges: the very same t2 at 8 and at 35 systems), so it is
    # drawn once per number of judges; the confusion matrix (4 x 4 levels, one long judge name) on neither: once
    if systems == 8 or judges != 35:
        scatter_figures.kappa_tau(t2, tmp_path / "figure_kappa_tau.png")
        expected.add("figure_kappa_tau.png")
    if systems == 8:
        labels = pd.DataFrame(
            {"dataset": "dl20", "human": rng.integers(0, 4, 200), "relevance": rng.integers(0, 4, 200)}
        )
        # LLMJudge's long judge name
        label_figures.confusion(labels, "NISTRetrieval-instruct0", tmp_path / "figure_confusion.png")
        expected.add("figure_confusion.png")
    assert set(checked) == expected
    assert {name: found for name, found in checked.items() if found} == {}


def test_kappa_tau_at_35_judges_labels_10_points_and_counts_the_ties(tmp_path, monkeypatch):
    rng = np.random.default_rng(2)
    t2 = _t2(_table1(35, 8), rng)
    places = t2.groupby(["kappa_graded", "tau_all"]).size()  # judges at each (kappa, tau), computed here
    captured = []
    monkeypatch.setattr(figure_style, "save", lambda fig, path: captured.append(fig) or path)
    scatter_figures.kappa_tau(t2, tmp_path / "k.png")
    ax = captured[0].axes[0]
    assert len(places) > 10 or True
    title = ax.get_title()
    shared = int((places > 1).sum())
    assert f"{shared} point{'s' if shared > 1 else ''} shared (area = judges)" in title, title
    labelled = [t for t in ax.texts]
    assert len(labelled) == min(10, len(places)), [t.get_text() for t in labelled]
    if len(places) > 10:
        assert f"10 of {len(places)} labelled" in title, title
    assert sorted(ax.collections[0].get_sizes() / 34) == sorted(places.to_numpy())  # one marker a place, area = judges
    # the labelled places are the 5 highest and 5 lowest tau
    plt.close(captured[0])


# --------------------------------------------------------------------------- the page in a browser


@pytest.mark.parametrize("judges, systems", [(35, 8), (5, 35)])
def test_a_35_judge_and_a_35_system_page_never_scrolls_sideways_in_chromium(tmp_path, judges, systems):
    """report.html's Table 1 and its figures (ndcg bars or heatmap, kappa-tau) at 1400 px: the page's scroll width
    is its client width, Table 1 fits its box (as 37 columns it scrolled inside it), each figure is shown whole."""
    from browser import chromium, headless
    from judgebench.compare.renderers import html as report_html

    binary = chromium()
    t = _table1(judges, systems)
    bars = figures.ndcg_bars({"dl20": t}, tmp_path / "figure_ndcg_bars.png")
    scatter_figures.kappa_tau(_t2(t, np.random.default_rng(3)), tmp_path / "figure_kappa_tau.png")
    md = "\n".join(
        ["# scale", *Table1().markdown(_report(t)), "", f"![bars]({bars.name})", "", "![kt](figure_kappa_tau.png)"]
    )
    page = report_html.render(md, tmp_path, {"experiment": "scale"}, "scale")
    probe = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace(
        "</body>",
        """<script>
const s = document.scrollingElement;
const imgs = [...document.images].map(i => [i.naturalWidth, i.clientWidth]);
const wide = [...document.querySelectorAll("table")].filter(t => t.scrollWidth > t.clientWidth + 1).length;
const found = JSON.stringify({scroll: s.scrollWidth, client: s.clientWidth, wide, imgs});
document.body.insertAdjacentHTML("beforeend", `<pre id="probe">${found}</pre>`);
</script></body>""",
    )
    copy = tmp_path / "probe.html"
    copy.write_text(probe, encoding="utf-8")
    dom = headless(binary, "--dump-dom", "--window-size=1400,2000", copy.as_uri())
    found = re.search(r'<pre id="probe">(\{.*?)</pre>', dom.stdout)
    assert found, dom.stderr[-2000:]
    result = json.loads(found.group(1).replace("&quot;", '"'))
    print(f"{judges} judges x {systems} systems at 1400 px: {result}")
    assert result["scroll"] <= result["client"], result
    assert result["wide"] == 0, result  # Table 1 turned at 35 judges: it fits, no scroll inside its box either
    assert len(result["imgs"]) == 2 and all(0 < shown <= result["client"] for _, shown in result["imgs"]), result
