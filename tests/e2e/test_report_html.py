"""report.html in a real browser, and the MLflow conventions through a real `mlflow server`'s REST API.

The session's toy grid (tests/conftest.py, on the SQLite default ``mlruns/`` under its folder), then compare. The
browser test renders report.html in headless Chromium (``--dump-dom``, ``--screenshot``; the screenshot
is kept under tests/artifacts/); without Chromium it skips, under CI (``CI`` set) it fails. The server
test moves the store elsewhere, reads it there without a server (compare) and through ``mlflow server``
(the UI's artifact endpoints), runs another small grid against the server over HTTP and checks, through
the REST API, the parent and its children, the dataset input, the git tag and the reduced params.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import re
import shutil
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from PIL import Image

import cli_runner
from browser import Elements, chromium, headless  # noqa: F401
from cli_runner import run_compare as compare
from judgebench.data.datasets import TOY_DIR
from mlflow_server import MlflowServer, free_port

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"


@pytest.fixture(scope="module")
def grid(toy_grid_store, toy_grid_compare):
    """conftest's toy grid and its one compare (``toy_grid_compare``, shared with test_compare): this module only
    reads the report."""
    tmp = toy_grid_store
    uri = f"sqlite:///{tmp}/mlruns/mlflow.db"
    return {"tmp": tmp, "uri": uri, "out": toy_grid_compare["out"], "printed": toy_grid_compare["printed"]}


# --------------------------------------------------------------------------- report.html in Chromium


def test_report_html_renders_every_table_and_figure(grid):
    binary = chromium()
    out = grid["out"]
    page = out / "report.html"
    assert f"full report: {page}" in grid["printed"]
    dom = headless(binary, "--dump-dom", page.as_uri())
    assert dom.returncode == 0 and "<table" in dom.stdout, dom.stderr[-2000:]
    assert "CONSOLE" not in dom.stderr, dom.stderr[-2000:]  # no console message, error or otherwise
    parsed = Elements()
    parsed.feed(dom.stdout)
    tags = parsed.tags

    # every table of report.md (a Markdown table has one |---| separator line) is a table of the page
    md = (out / "report.md").read_text(encoding="utf-8")
    md_tables = len(re.findall(r"^\|[-:| ]+\|$", md, flags=re.M))
    assert md_tables >= 10 and sum(t == "table" for t, _ in tags) == md_tables
    # every figure written is embedded: the data URI decodes to exactly the PNG file beside the report
    images = [a for t, a in tags if t == "img"]
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) >= 6 and len(images) == len(pngs)
    embedded = []
    for attrs in images:
        src = attrs["src"]
        assert src.startswith("data:image/png;base64,"), src[:80]
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        Image.open(io.BytesIO(data)).verify()  # a complete, valid PNG
        embedded.append(hashlib.sha256(data).hexdigest())
        assert attrs.get("alt")
    assert sorted(embedded) == sorted(hashlib.sha256(p.read_bytes()).hexdigest() for p in pngs)
    # nothing is fetched: no script, no stylesheet link, no external source or link
    assert not [t for t, _ in tags if t in ("script", "link", "iframe")]
    urls = [v for _, a in tags for k, v in a.items() if k in ("src", "href") and v]
    assert not [u for u in urls if u.startswith(("http:", "https:", "//"))], urls
    # the header states dataset, judges, reference, selection and versions
    text = re.sub(r"<[^>]+>", " ", dom.stdout)
    for words in (
        "datasets",
        "toy",
        "simulated_unbiased",
        "panel = majority here",
        "human_labelset",
        "selection",
        "metric_version",
        "report by judgebench",
    ):
        assert words in text, words

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    done = headless(binary, f"--screenshot={shot}", "--window-size=1400,4000", "--hide-scrollbars", page.as_uri())
    assert done.returncode == 0 and shot.is_file(), done.stderr[-2000:]
    drawn = rendered_report(shot)
    assert drawn["size"] == (1400, 4000)
    # what only the report draws: text and, in the first 4000 px (below the findings and contents), tables: their
    # 1 px #ccc rules cross >= 20 pixel rows (an error page, e.g. Chromium's "file not found", has text and no such
    # rules: checked below, on a real one)
    assert drawn["dark"] > 0.02, drawn
    assert drawn["table_rules"] >= 20, drawn
    print(f"screenshot of report.html: {shot} {drawn}")
    # the same measures on an error page (a title and a traceback) fail: the check tells the report from one
    error_page = out.parent / "error.html"
    error_page.write_text(
        "<html><body><h1>Internal Server Error</h1><pre>"
        + "Traceback (most recent call last):\n"
        + '  File "report.py", line 1, in build\n' * 40
        + "KeyError: 'table1'</pre></body></html>"
    )
    error_shot = out.parent / "error.png"
    done = headless(
        binary, f"--screenshot={error_shot}", "--window-size=1400,4000", "--hide-scrollbars", error_page.as_uri()
    )
    assert done.returncode == 0 and error_shot.is_file(), done.stderr[-2000:]
    error = rendered_report(error_shot)
    assert error["dark"] > 0.002 and error["table_rules"] < 20, error


def rendered_report(png: Path) -> dict:
    """Measures of a screenshot: its size, the share of dark pixels (text), the pixel rows crossed by a table rule
    (at least 60 px of exactly #ccc, html.py's td/th border) and the share of strongly coloured pixels."""
    import numpy as np

    image = Image.open(png).convert("RGB")
    rgb = np.asarray(image).astype(int)
    grey = rgb.mean(axis=2)
    rule = (rgb == 204).all(axis=2)
    chroma = rgb.max(axis=2) - rgb.min(axis=2)
    return {
        "size": image.size,
        "dark": float((grey < 200).mean()),
        "table_rules": int((rule.sum(axis=1) >= 60).sum()),
        "coloured": float((chroma > 60).mean()),
    }


# --------------------------------------------------------------------------- the store, moved, and a real server


def rest(uri: str, endpoint: str, body: dict | None = None, raw: bool = False):
    url = f"{uri}{endpoint}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=30) as r:
        content = r.read()
    return content if raw else json.loads(content)


def search(uri: str, experiment_id: str) -> list[dict]:
    return rest(uri, "/api/2.0/mlflow/runs/search", {"experiment_ids": [experiment_id], "max_results": 1000}).get(
        "runs", []
    )


def tags(run: dict) -> dict[str, str]:
    return {t["key"]: t["value"] for t in run["data"].get("tags", [])}


def params(run: dict) -> dict[str, str]:
    return {p["key"]: p["value"] for p in run["data"].get("params", [])}


def toy_digest() -> str:
    """The dataset input's digest, computed here from the four files the toy loader reads (not its README, not
    candidates.tsv, which the default toy config does not open)."""
    read = ("topics.tsv", "qrels.txt", "pool.trec", "corpus.jsonl")
    files = {f"dataset/{n}": hashlib.sha256((Path(str(TOY_DIR)) / n).read_bytes()).hexdigest() for n in read}
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()[:16]


@pytest.mark.slow  # ~60 s: a real mlflow server, and the store moved
def test_moved_store_and_mlflow_server(grid, tmp_path):
    old = grid["tmp"] / "mlruns"
    store = tmp_path / "elsewhere" / "mlruns"
    shutil.move(old, store)  # nothing can read the old place any more (moved back for the shared grid's readers)
    try:
        _moved_store_and_server(grid, tmp_path, store)
    finally:
        if store.exists() and not old.exists():
            shutil.move(store, old)


def _moved_store_and_server(grid, tmp_path: Path, store: Path) -> None:
    uri = f"sqlite:///{store}/mlflow.db"
    # 1. without a server: compare reads every artifact of the moved store, same numbers
    code, printed, err = compare(
        "experiment=grid", f"tracking_uri={uri}", f"out={tmp_path}/out", "bootstrap=0", "log=false", "format=csv"
    )
    assert code == 0 and "problem:" not in printed, printed + err
    before, after = (pd.read_csv(d / "table1_toy.csv", index_col="system") for d in (grid["out"], tmp_path / "out"))
    pd.testing.assert_frame_equal(before, after)

    server = MlflowServer(store / "mlflow.db", store / "artifacts", free_port(), proxied=True)
    try:
        server.wait_ready()
        # 2. the UI's artifact endpoints read the moved store's artifacts
        exp = rest(server.uri, "/api/2.0/mlflow/experiments/get-by-name?experiment_name=grid")["experiment"]
        assert exp["artifact_location"] == "mlflow-artifacts:/grid"
        job = next(r for r in search(server.uri, exp["experiment_id"]) if tags(r).get("judgebench.kind") == "job")
        run_id = job["info"]["run_id"]
        listed = rest(server.uri, f"/ajax-api/2.0/mlflow/artifacts/list?run_id={run_id}")
        names = {f["path"] for f in listed["files"]}
        assert {"per_query.csv", "judge_labels.csv", "judge_failures.csv", "config.yaml"} <= names and not any(
            n.endswith(".tsv") for n in names
        )
        query = urllib.parse.urlencode({"path": "per_query.csv", "run_uuid": run_id})
        served = rest(server.uri, f"/get-artifact?{query}", raw=True)
        assert served == (store / "artifacts" / "grid" / run_id / "artifacts" / "per_query.csv").read_bytes()

        # 3. a grid over HTTP: one parent, its children, MLflow's tags, the dataset input, reduced params
        cwd = tmp_path / "http"
        cwd.mkdir()
        res = cli_runner.run(
            [
                "-m",
                "ranker=bm25,oracle",
                "perturbation=perfect",
                "judge=human,simulated",
                "experiment_name=served",
                "artifact_root=null",
                f"tracking_uri={server.uri}",
                "progress=false",
                f"hydra.sweep.dir={cwd}/multirun",
                f"cache_dir={grid['tmp']}/cache",
            ],
            cwd=cwd,
        )
        assert res.rc == 0, str(res)
        served_exp = rest(server.uri, "/api/2.0/mlflow/experiments/get-by-name?experiment_name=served")["experiment"]
        runs = search(server.uri, served_exp["experiment_id"])
        by_kind: dict[str, list[dict]] = {}
        for r in runs:
            by_kind.setdefault(tags(r).get("judgebench.kind"), []).append(r)
        (parent,) = by_kind["sweep"]
        assert parent["info"]["status"] == "FINISHED" and tags(parent)["judgebench.sweep_id"] == f"{cwd}/multirun"
        jobs, summaries = by_kind["job"], by_kind["judge_summary"]
        assert len(jobs) == 2 * 2 and len(summaries) == 2  # BM25, Perfect x human, simulated
        for r in jobs + summaries:
            assert tags(r)["mlflow.parentRunId"] == parent["info"]["run_id"]
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        for r in jobs:
            t, p = tags(r), params(r)
            assert t["mlflow.source.git.commit"] == commit and t["mlflow.runName"] == r["info"]["run_name"]
            assert t["system"] in t["mlflow.note.content"] and t["judge"] in t["mlflow.note.content"]
            (inp,) = r["inputs"]["dataset_inputs"]
            ds = inp["dataset"]
            assert ds["name"] == "toy" and ds["digest"] == toy_digest() and str(TOY_DIR) in ds["source"]
            assert json.loads(ds["profile"])["num_rows"] == 241  # the label set: pool ∩ qrels
            assert [c["name"] for c in json.loads(ds["schema"])["mlflow_colspec"]] == [
                "query_id",
                "doc_id",
                "relevance",
            ]
            assert {
                "dataset.name",
                "ranker.name",
                "perturbation.name",
                "judge.name",
                "judge.model",
                "rewriter.name",
                "simulation.prior_seed",
            } <= set(p) and len(p) <= 22
            noise = [
                k
                for k, v in p.items()
                if "_target_" in k
                or v == "None"
                or k.split(".")[-1]
                in (
                    "cache_dir",
                    "tracking_uri",
                    "artifact_root",
                    "progress",
                    "dry_run",
                    "sweep_id",
                    "experiment_name",
                    "force",
                )
            ]
            assert noise == [], noise
        cell = next(r for r in jobs if tags(r)["judge"] == "simulated" and tags(r)["system"] == "BM25")
        assert params(cell)["judge.weight"] == "1.0" and params(cell)["ranker.name"] == "BM25"
        names = {
            f["path"]
            for f in rest(server.uri, f"/ajax-api/2.0/mlflow/artifacts/list?run_id={cell['info']['run_id']}")["files"]
        }
        assert {"per_query.csv", "judge_labels.csv", "config.yaml"} <= names
        query = urllib.parse.urlencode({"path": "per_query.csv", "run_uuid": cell["info"]["run_id"]})
        http_bytes = rest(server.uri, f"/get-artifact?{query}", raw=True)
    finally:
        server.kill()
    # 4. the store copied again, no server: the runs logged over HTTP read back from the copy
    copy = tmp_path / "copy" / "mlruns"
    shutil.copytree(store, copy)
    client = MlflowClient(f"sqlite:///{copy}/mlflow.db")
    got = Path(client.download_artifacts(cell["info"]["run_id"], "per_query.csv", str(tmp_path)))
    assert got.read_bytes() == http_bytes and str(copy) in str(copy / "artifacts")


# --------------------------------------------------------------------------- what the page opens on, and how wide it is


def test_report_html_opens_on_title_findings_and_contents(grid):
    """The page reads top down: the title, the findings panel, the contents (a link to every table and figure),
    then the metadata and Table 1. Long column names may break after an underscore; no header is nowrap."""
    page = (grid["out"] / "report.html").read_text(encoding="utf-8")
    body = page[page.index("<body>") :]
    where = {
        k: body.find(s)
        for k, s in (
            ("title", "<h1>"),
            ("findings", '<section class="findings">'),
            ("contents", '<nav class="toc">'),
            ("header", '<dl class="header">'),
            ("table1", 'id="table-1-mean-ndcg-10'),
        )
    }
    assert all(v >= 0 for v in where.values()), where
    assert where["title"] < where["findings"] < where["contents"] < where["header"] < where["table1"], where
    panel = html.unescape(body[where["findings"] : body.index("</section>")])
    assert "toy / simulated" in panel and "INVERTS the LLM and oracle rankers" in panel
    assert (
        re.search(r"per-query τ = \d\.\d\d \[\d\.\d\d, \d\.\d\d\] against human_judged", panel)
        and "Cohen's κ = " in panel
    )
    assert "all 24 grid cells have a finished run" in panel
    toc = body[where["contents"] : body.index("</nav>")]
    anchors = re.findall(r'href="#([^"]+)"', toc)
    ids = set(re.findall(r'<h[23] id="([^"]+)"', body))
    assert len(anchors) >= 15 and set(anchors) <= ids  # every link lands on a heading
    for heading in ("table-1-", "table-2-", "table-5-", "table-6-", "figures", "label-confusion-per-judge"):
        assert any(a.startswith(heading) for a in anchors), heading
    style = page[page.index("<style>") : page.index("</style>")]
    assert not re.search(r"th[^{}]*\{[^}]*nowrap", style)
    assert "kappa_<wbr>query_<wbr>median" in body
    # the per-judge confusion matrices share one paragraph: the page lays it out as a grid
    assert re.search(r"<p>(<img [^>]*>\s*){2,}</p>", body) and "p:has(> img + img) { display: grid" in style


def test_report_html_tables_fit_the_page_in_chromium(grid, tmp_path):
    """Measured in the browser at 1100 px: no table is wider than its box and no header's text is cut. The page
    forbids scripts (its CSP), so a copy without the policy runs the measuring script and writes its answer into
    the DOM that --dump-dom prints."""
    binary = chromium()
    page = (grid["out"] / "report.html").read_text(encoding="utf-8")
    probe = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace(
        "</body>",
        """<script>
const wide = [...document.querySelectorAll("table")].filter(t => t.scrollWidth > t.clientWidth + 1).length;
const cut = [...document.querySelectorAll("th")].filter(h => h.scrollWidth > h.clientWidth + 1).map(h => h.textContent);
const found = JSON.stringify({tables: document.querySelectorAll("table").length, wide, cut});
document.body.insertAdjacentHTML("beforeend", `<pre id="probe">${found}</pre>`);
</script></body>""",
    )
    copy = tmp_path / "probe.html"
    copy.write_text(probe, encoding="utf-8")
    dom = headless(binary, "--dump-dom", "--window-size=1100,2000", copy.as_uri())
    found = re.search(r'<pre id="probe">(\{.*?)</pre>', dom.stdout)  # not the script's own text
    assert found, dom.stderr[-2000:]
    result = json.loads(found.group(1).replace("&quot;", '"'))
    assert result["tables"] >= 10 and result["wide"] == 0 and result["cut"] == [], result
