"""The README's first look, ``python run.py +experiment=quick`` then ``judgebench-compare experiment=quick``: no model,
no key, and it shows the tool's point, a judge that puts the LLM ranker above oracles the humans put above it.
The inversion is checked on the cells' own metrics in MLflow, then on what compare reports."""

from __future__ import annotations

import csv
from pathlib import Path

from mlflow.tracking import MlflowClient

import cli_runner
from cli_runner import env_with, run_compare

REPO = Path(__file__).resolve().parents[2]


def test_the_quick_demo_shows_an_inversion_and_writes_its_report(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    res = cli_runner.run(
        [
            "+experiment=quick",
            "progress=false",
            f"tracking_uri={uri}",
            f"artifact_root={tmp_path}/mlruns/artifacts",
            f"cache_dir={tmp_path}/cache",
            f"hydra.sweep.dir={tmp_path}/multirun",
        ],
        cwd=tmp_path,
        env=env_with(),
    )
    assert res.rc == 0 and "judgebench sweep: 10 cells - 10 ran, 0 skipped, 0 failed" in res.out, str(res)
    assert not any(name in res.out + res.err for name in ("smollm2", "SmolLM2"))  # no model anywhere

    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("quick").experiment_id], "tags.`judgebench.kind` = 'job'")
    ndcg = {(r.data.tags["system"], r.data.tags["judge"]): r.data.metrics for r in runs}
    llm, perfect = ndcg[("SimLLM", "simulated")], ndcg[("Perfect", "simulated")]
    assert llm["ndcg10_human"] < perfect["ndcg10_human"]  # the humans: the oracle first
    assert llm["ndcg10_judge"] > perfect["ndcg10_judge"]  # the simulated judge: the LLM ranker first, the inversion
    human = ndcg[("SimLLM", "human")]
    assert human["ndcg10_judge"] == human["ndcg10_human"]  # the human "judge" is the human qrels: no inversion

    out = tmp_path / "compare-out"
    code, stdout, err = run_compare(
        f"tracking_uri={uri}", "experiment=quick", f"out={out}", "bootstrap=50", "log=false"
    )
    assert code == 0, err
    assert "toy / simulated: INVERTED (LLM above oracles)" in stdout, stdout
    assert (out / "report.html").is_file()
    with open(out / "ranker_bias.csv", newline="", encoding="utf-8") as f:
        bias = {row["judge"]: row for row in csv.DictReader(f)}
    assert bias["simulated"]["inverted"] == "True" and bias["simulated"]["llm_above_oracles_judge"] == "SimLLM"


def test_the_readme_opens_on_the_quick_demo_and_keeps_two_setup_lines():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme.split("```bash\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert len(block) == 2, block
    assert block[0].endswith("python run.py +experiment=quick && judgebench-compare experiment=quick"), block[0]
    assert "python run.py -m +experiment=demo" in readme  # the SmolLM2 demo, the next step
