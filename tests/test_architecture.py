"""docs/architecture.md's "Add a judge", followed as written by a newcomer: a judge class and its config
written outside the repository, run through run.py, read back by compare."""

from __future__ import annotations

import os
import re
import textwrap
from pathlib import Path

import pandas as pd

import cli_runner

REPO = Path(__file__).resolve().parents[1]


def _doc_block(after: str, lang: str) -> str:
    """The first fenced block of language ``lang`` after the heading ``after`` in docs/architecture.md."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc[doc.index(after) :]
    return textwrap.dedent(re.search(rf"```{lang}\n(.*?)```", section, re.S).group(1))


def test_add_a_judge_as_the_doc_says(tmp_path, tmp_path_factory):
    # step 1: the class, copied from the doc, in a module of the user's (not in the package)
    code = _doc_block("## Add a judge", "python")
    pkg = tmp_path / "mine"
    pkg.mkdir()
    (pkg / "always_two.py").write_text(code, encoding="utf-8")
    # step 2: the config from the doc, pointing at that module, in a config directory of the user's
    config = _doc_block("## Add a judge", "yaml").replace("judgebench.judges.always_two", "always_two")
    (tmp_path / "myconf" / "judge").mkdir(parents=True)
    (tmp_path / "myconf" / "judge" / "always_two.yaml").write_text(config, encoding="utf-8")
    # step 3: run it beside the human judge, then compare
    store = cli_runner.warm_store(tmp_path_factory)
    env = {**os.environ, "PYTHONPATH": f"{pkg}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    args = [
        "-m",
        "judge=human,always_two",
        "ranker=oracle,bm25",
        "experiment_name=newcomer",
        "progress=false",
        f"hydra.searchpath=[file://{tmp_path / 'myconf'}]",
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={tmp_path}/cache",
        f"hydra.sweep.dir={tmp_path}/multirun",
    ]
    res = cli_runner.run(args, cwd=tmp_path, env=env, fresh=True)
    assert res.rc == 0, str(res)
    out = tmp_path / "report"
    res = cli_runner.run(
        ["experiment=newcomer", f"tracking_uri=sqlite:///{store}/mlflow.db", f"out={out}", "bootstrap=0", "log=false"],
        cwd=tmp_path,
        env=env,
        module="judgebench.compare",
    )
    assert res.rc == 0, str(res)
    t1 = pd.read_csv(out / "table1_toy.csv", index_col="system")
    assert "always_two" in t1.columns
    # a judge that labels every pair 2 gives every judged document the same gain: any ranking that puts
    # judged documents first scores 1 on every query, the Perfect oracle as much as BM25's pool order
    assert t1.loc["Perfect", "always_two"] == 1.0 and t1.loc["BM25", "always_two"] == 1.0
    t2 = pd.read_csv(out / "table2.csv").set_index("judge")
    # kappa of a constant rater is 0 (p_o equals p_e: it agrees exactly as often as chance says)
    assert abs(t2.loc["always_two", "kappa_graded"]) < 1e-12


def test_every_module_is_named_in_the_architecture():
    """docs/architecture.md names every module under src/judgebench by its path there (``jobs/common.py``)."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = REPO / "src" / "judgebench"
    unnamed = [
        str(p.relative_to(package))
        for p in sorted(package.rglob("*.py"))
        if p.name != "__init__.py"
        and f"`{p.relative_to(package).as_posix()}`" not in doc
        and not (p.parent != package and p.relative_to(package).as_posix() in doc)
    ]
    assert not unnamed, f"docs/architecture.md does not name: {', '.join(unnamed)}"
