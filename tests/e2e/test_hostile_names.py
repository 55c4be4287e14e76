"""Hostile names (judge, system, dataset, experiment) through run.py and compare: every output escapes them,
report.html loads nothing in a real browser, and no name crashes a figure or a file name.

The known answers are independent of names.py: markdown-it (the renderer report.html uses) must render an
escaped name back to the name itself, a trap HTTP server on 127.0.0.1 must see no request from the page
(while a control page with one <img> does reach it), and the CSVs must read back to the exact names.
"""

from __future__ import annotations

import html
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest
from markdown_it import MarkdownIt
from mlflow.tracking import MlflowClient

import cli_runner
from browser import Elements, chromium, headless
from cli_runner import run_compare
from judgebench.compare.base import names
from judgebench.compare.command import schema, validate
from judgebench.compare.renderers import figures, label_figures, render
from judgebench.compare.renderers import html as report_html
from judgebench.exceptions import CompareError

LONG = "long " + "x" * 6100  # longer than MLflow keeps of a param (6000): compare's own run must still log


class Trap:
    """An HTTP server on 127.0.0.1 that records every path asked for (and answers 404)."""

    def __init__(self) -> None:
        hits = self.hits = []

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                hits.append(self.path)
                self.send_response(404)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def hostile(port: int) -> dict[str, str]:
    """The names of the grid, by what they attack."""
    url = f"http://127.0.0.1:{port}"
    return {
        "mathtext": "cost $\\frac$ x",
        "image": f"![px]({url}/px.png)",
        "markup": f"line1\nline2 <script>alert(1)</script> & <img src={url}/raw.png> "
        f"a|b `code` _u_ *s* 100% #1 back\\slash {{x}} ~t~ ^",
        "long": LONG,
        "unicode": "Ünïcødé, 日本 → ✓",
    }


def override(value: str) -> str:
    """A Hydra override value: single-quoted (Hydra keeps a backslash as it is unless a quote follows it)."""
    assert "'" not in value and not value.endswith("\\") and "${" not in value
    return f"'{value}'"


def shown(name: str) -> str:
    """How a name reads on one line (written here, not by names.py): a newline as the two characters \\n."""
    return name.replace("\n", "\\n")


@pytest.fixture(scope="module")
def grid(tmp_path_factory):
    """5 hostile judges x {hostile BM25, hostile Perfect} on a hostile toy dataset name, in a hostile experiment;
    compare
    in-process from the grid's directory (default out: compare-out/<experiment>), with a compare run logged."""
    cli_runner.warm()
    trap = Trap()
    tmp = tmp_path_factory.mktemp("hostile")
    judges = hostile(trap.port)
    setting = {
        "experiment": f"exp <b>x</b> $e$ ../up ![e](http://127.0.0.1:{trap.port}/e.png)",
        "dataset": "toy <i>&</i> | $d$ % _x_",
        "bm25": f"BM25 ![r](http://127.0.0.1:{trap.port}/r.png)",
        "perfect": "[1] Perfect *p* \\ #",
    }
    res = cli_runner.run(
        [
            "-m",
            "+system=bm25,oracle_perfect",
            "judge=simulated",
            "judge.name=" + ",".join(map(override, judges.values())),
            f"dataset.name={override(setting['dataset'])}",
            f"ranker.name={override(setting['bm25'])}",
            f"perturbation.name={override(setting['perfect'])}",
            f"experiment_name={override(setting['experiment'])}",
            "progress=false",
            f"hydra.sweep.dir={tmp}/multirun",
            f"cache_dir={tmp}/cache",
        ],
        cwd=tmp,
    )
    assert res.rc == 0, str(res)
    uri = f"sqlite:///{tmp}/mlruns/mlflow.db"
    here = os.getcwd()
    os.chdir(tmp)
    try:
        code, printed, err = run_compare(f"experiment={setting['experiment']}", f"tracking_uri={uri}", "bootstrap=50")
    finally:
        os.chdir(here)
    assert code == 0, err
    (out,) = (tmp / "compare-out").iterdir()  # one folder, inside compare-out: the experiment's ../ went nowhere
    return {"tmp": tmp, "uri": uri, "out": out, "printed": printed, "trap": trap, "judges": judges, **setting}


@pytest.mark.slow  # ~70 s: 10 cells through run.py, a compare with every figure, two Chromium loads
def test_hostile_names_render_everywhere_and_the_page_loads_nothing(grid):
    out, judges, trap = grid["out"], grid["judges"], grid["trap"]
    # no crash: every file written, every figure a real image; one confusion figure per judge, none overwritten
    for name in (
        "report.md",
        "report.html",
        "table2.csv",
        "table2.tex",
        "figure_ndcg_bars.png",
        "figure_scatter.png",
        "figure_kappa_tau.png",
    ):
        assert (out / name).stat().st_size > 0, name
    confusions = sorted(out.glob("figure_confusion_*.png"))
    assert len(confusions) == len(judges) + 2  # and the majority and mean-label judges
    assert all(p.stat().st_size > 10_000 for p in out.glob("*.png"))
    assert [p.name for p in out.glob("table1_*.csv")] and all("/" not in p.name for p in out.iterdir())

    # the CSVs hold the exact names (pandas quotes them)
    t2 = pd.read_csv(out / "table2.csv", keep_default_na=False)
    assert set(judges.values()) <= set(t2["judge"]) and set(t2["dataset"]) == {grid["dataset"]}
    (t1_csv,) = out.glob("table1_*.csv")
    t1 = pd.read_csv(t1_csv, index_col="system")
    assert set(judges.values()) <= set(t1.columns) and set(t1.index) == {grid["bm25"], grid["perfect"]}

    # report.md: every row of every table has as many cells as its header (a newline or | in a name would not)
    md = (out / "report.md").read_text(encoding="utf-8")
    cells = lambda line: len(re.findall(r"(?<!\\)\|", line.replace("\\\\", "")))  # noqa: E731
    for block in re.findall(r"(?:^\|.*\|$\n?)+", md, flags=re.M):
        rows = block.strip("\n").split("\n")
        assert len({cells(r) for r in rows}) == 1, rows[0][:200]

    # LaTeX: every row of Table 1 has the same number of column separators, and the specials are escaped
    tex = next(out.glob("table1_*.tex")).read_text(encoding="utf-8")
    rows = [line for line in tex.splitlines() if line.endswith("\\\\")]
    assert len(rows) == 3 and len({len(re.findall(r"(?<!\\)&", r)) for r in rows}) == 1
    for escaped in (
        r"cost \$\textbackslash{}frac\$ x",
        r"100\% \#1",
        r"\{x\}",
        r"{[}1{]} Perfect {*}p{*}",
        r"\textbackslash{}slash",
    ):
        assert escaped in tex, escaped

    # the browser: a control page with one <img> does reach the trap, report.html does not
    binary = chromium()
    control = grid["tmp"] / "control.html"
    control.write_text(f'<!DOCTYPE html><img src="http://127.0.0.1:{trap.port}/control.png">', encoding="utf-8")
    assert headless(binary, "--dump-dom", control.as_uri()).returncode == 0
    assert trap.hits == ["/control.png"], trap.hits
    page = out / "report.html"
    dom = headless(binary, "--dump-dom", page.as_uri())
    assert dom.returncode == 0 and "<table" in dom.stdout, dom.stderr[-2000:]
    assert trap.hits == ["/control.png"], trap.hits  # nothing from the report
    parsed = Elements()
    parsed.feed(dom.stdout)
    assert not [t for t, _ in parsed.tags if t in ("script", "link", "iframe", "object", "embed")]
    images = [a["src"] for t, a in parsed.tags if t == "img"]
    assert len(images) == len(list(out.glob("*.png"))) and all(s.startswith("data:image/png;base64,") for s in images)
    policy = [
        a.get("content", "") for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert policy and "default-src 'none'" in policy[0]
    # every name is readable in the page's text, as itself (a newline as \n)
    text = html.unescape(re.sub(r"<[^>]+>", "", dom.stdout))
    for name in [*judges.values(), grid["dataset"], grid["bm25"], grid["perfect"], grid["experiment"]]:
        assert shown(name) in text, name[:80]
    # the terminal summary: one line per name, no line over 120 characters
    printed = grid["printed"]
    assert "line1\\nline2" in printed and "\x1b" not in printed
    assert (
        max(len(line) for line in printed.splitlines() if not line.startswith("full report: ")) <= 120
    )  # a path is never cut


@pytest.mark.slow  # the grid above
def test_compare_run_logs_every_judge_under_its_own_key(grid):
    client = MlflowClient(grid["uri"])
    (run,) = client.search_runs(
        [client.get_experiment_by_name(grid["experiment"]).experiment_id],
        filter_string="tags.`judgebench.kind` = 'compare'",
    )
    keys = [k for k in run.data.metrics if k.startswith("kappa_graded.")]
    assert len(keys) == len(grid["judges"]) + 2  # two virtual judges
    assert len(run.data.params["judges"]) <= 6000 and run.data.params["judges"].endswith("the report has them all)")


@pytest.mark.slow  # the grid above (test_names_options_take_double_quotes is the quick check)
def test_a_judge_name_with_a_comma_is_selected_in_double_quotes(grid, tmp_path):
    unicode, maths = grid["judges"]["unicode"], grid["judges"]["mathtext"]
    code, _, err = run_compare(
        f"experiment={grid['experiment']}",
        f"tracking_uri={grid['uri']}",
        f"out={tmp_path}",
        f'judges="{unicode}",{maths}',
        "format=csv",
        "bootstrap=0",
        "log=false",
    )
    assert code == 0, err
    assert set(pd.read_csv(tmp_path / "table2.csv")["judge"]) == {
        unicode,
        maths,
        "majority",
        "mean_label",
    }  # and their ensembles
    code, printed, err = run_compare(
        f"experiment={grid['experiment']}",
        f"tracking_uri={grid['uri']}",
        f"out={tmp_path}",
        f'judges="{unicode},{maths}',
        "log=false",
    )
    assert code == 2 and printed == "" and len(err.strip().splitlines()) == 1
    assert err.startswith("judgebench-compare: error: judges=") and "double quotes" in err


# --------------------------------------------------------------------------- each output on its own, no grid


NAMES = [
    *hostile(9).values(),
    "a_b",
    "_lead",
    "tab\there",
    "esc\x1b[2J",
    "rtl\u202eevil",
    "&amp; &#60;",
    "<http://127.0.0.1:9/a>",
    "www.example.com",
    "**bold** __b__",
    "~~s~~",
    "[x]: http://127.0.0.1:9/ref",
    "# heading",
    "- item",
    "1. one",
]


@pytest.mark.parametrize("name", NAMES)
def test_markdown_it_renders_an_escaped_name_as_the_name(name):
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    one_line = shown(name).replace("\t", "\\t").replace("\x1b", "\\x1b").replace("\u202e", "\\u202e")
    expected = html.escape(one_line, quote=False).replace('"', "&quot;")
    assert md.renderInline(names.markdown(name)) == expected
    # in a heading and a table cell too (a | or a newline would open another cell or line)
    page = md.render(f"### {names.markdown(name)}\n\n| a | b |\n|---|---|\n| {names.markdown(name)} | 1 |\n")
    assert re.findall(r"<h3>(.*)</h3>", page) == [expected.strip()]
    assert re.findall(r"<td>(.*?)</td>", page) == [expected.strip(), "1"]


def test_figures_draw_hostile_names_as_text(tmp_path):
    systems = pd.Index(NAMES[:6], name="system")
    table = pd.DataFrame(
        {
            "type": ["oracle", "llm", "lexical", "oracle", "llm", "lexical"],
            "human": [0.9, 0.8, 0.7, 0.6, 0.5, 0.4],
            **{n: [0.5, 0.4, 0.8, 0.2, 0.3, 0.1] for n in NAMES[:5]},
        },
        index=systems,
    )
    path = figures.ndcg_bars({NAMES[0]: table}, tmp_path / "bars.png")
    assert path.stat().st_size > 10_000
    levels = pd.DataFrame(
        {
            "dataset": NAMES[1],
            "judge": NAMES[0],
            "query_id": "q",
            "doc_id": list("abcd"),
            "relevance": [0, 1, 2, 3],
            "human": [0, 1, 3, 3],
        }
    )
    assert label_figures.confusion(levels, NAMES[0], tmp_path / "c.png").stat().st_size > 10_000
    assert (
        label_figures.confusion_grid(pd.concat([levels, levels.assign(judge=NAMES[2])]), tmp_path / "g.png")
        .stat()
        .st_size
        > 10_000
    )
    assert (
        names.plot("_lead") == " _lead" and names.plot(LONG).endswith("…") and len(names.plot(LONG)) == names.PLOT_LIMIT
    )


def test_file_parts_are_plain_distinct_and_keep_plain_names():
    parts = [names.file_part(n) for n in NAMES]
    assert len(set(parts)) == len(parts)
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]{1,70}", p) and not p.startswith(".") for p in parts)
    plain = ["toy", "dl19", "simulated_unbiased", "gpt-4o.mini"]
    assert [names.file_part(n) for n in plain] == plain  # file names and metric keys of plain names are as before
    assert names.file_part("a b") != names.file_part("a_b") and names.file_part("..") != ".."


def test_latex_cells_escape_every_special():
    frame = pd.DataFrame({"judge": ["[x] *y* 50% & $z$ #1 _u_ {b} ~ ^ \\ < > |"], "v": [0.5]})
    tex = render.latex(frame, "caption with $ and %", "tab:x", index=False)
    row = next(line for line in tex.splitlines() if "0.5000" in line)
    assert row == (
        r"{[}x{]} {*}y{*} 50\% \& \$z\$ \#1 \_u\_ \{b\} \textasciitilde{} \textasciicircum{} \textbackslash{} "
        r"\textless{} \textgreater{} \textbar{} & 0.5000 \\"
    )
    assert r"\caption{caption with \$ and \%}" in tex


def test_report_html_forbids_network_loads_whatever_the_markdown(tmp_path):
    (tmp_path / "figure_x.png").write_bytes(b"\x89PNG fake")
    page = report_html.render(
        "![a](http://127.0.0.1:9/a.png) ![b](../b.png) ![c](figure_x.png) <img src=http://127.0.0.1:9/c.png>",
        tmp_path,
        {"judges": "x\ny <b>"},
        "t",
    )
    parsed = Elements()
    parsed.feed(page)
    assert [a["src"][:22] for t, a in parsed.tags if t == "img"] == [
        "data:image/png;base64,"
    ]  # only the figure beside it
    assert "[image: a]" in page and "[image: b]" in page and "&lt;img src=" in page
    assert "<dd>x\\ny &lt;b&gt;</dd>" in page
    (meta,) = [a for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert meta["content"].startswith("default-src 'none'; img-src data:;")


def test_names_options_take_double_quotes():
    opts = validate.options(schema.parse(["experiment=x", 'judges="a, b",c', 'datasets="d,1"', 'panel=p,"q ""r"""']))
    assert opts.judges == ["a, b", "c"] and opts.datasets == ["d,1"] and opts.panel == ["p", 'q "r"']
    assert validate.options(schema.parse(["experiment=x", "judges=a, b"])).judges == ["a", "b"]  # unquoted: as before
    with pytest.raises(CompareError, match=r"""judges='"a, b': expected names separated by commas"""):
        validate.options(schema.parse(["experiment=x", 'judges="a, b']))
    assert "judges='\"gpt, tuned\",human'" in schema.USAGE
