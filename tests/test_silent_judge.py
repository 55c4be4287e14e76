"""Class 3 of round 5: a judge that labelled no pair (every call failed, ``max_failed_share=1.0`` let its cells
finish) is reported as such, a note, and has no number: no Table 1 column of 0.000, no Table 2 row (tau_AP 0),
no finding about it but the note ("not inverted" would be a verdict on a judge that said nothing)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from mlflow.tracking import MlflowClient

import cli_runner
from judgebench.compare import report as report_mod
from judgebench.compare import sections
from judgebench.compare.base import tables
from judgebench.data.datasets import load_toy
from judgebench.jobs import pipeline

REPO = Path(__file__).resolve().parents[1] / "src" / "judgebench"
SYSTEMS = ("oracle_perfect", "oracle_swap_3")


def _cfg(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/mlflow.db",
                f"artifact_root={tmp}/artifacts",
                f"cache_dir={tmp}/cache",
                "experiment_name=silent",
                "progress=false",
                "dataset=toy",
                *overrides,
            ],
        )


@pytest.fixture(scope="module")
def silent_grid(tmp_path_factory):
    tmp = cli_runner.warm_store(tmp_path_factory)
    toy = load_toy()
    query = next(iter(toy.queries))
    labels = tmp / "nothing.txt"  # one label, for a pair outside the label set: the judge labels none of its pairs
    labels.write_text(f"{query} 0 not-a-pool-doc 2\n", encoding="utf-8")
    for system in SYSTEMS:
        for judge in (
            ["judge=simulated"],
            ["judge=qrels", f"judge.path={labels}", "judge.name=mute", "max_failed_share=1.0"],
        ):
            assert pipeline.run_job(_cfg(tmp, f"+system={system}", *judge)).status == "finished"
    client = MlflowClient(f"sqlite:///{tmp}/mlflow.db")
    return report_mod.build(client, "silent", options=report_mod.Options(bootstrap=0, formats=("md",)))


def test_silent_judge_is_found_from_its_summary_and_its_rows_leave_every_frame():
    summaries = pd.DataFrame(
        {
            "dataset": ["a", "a", "b", "a"],
            "judge": ["mute", "talks", "mute", "mute"],
            "text_view": ["original", "original", "original", "rewritten:x"],
            "labelled_pairs": [0, 12, 5, 0],
            "failed_pairs": [40, 0, 3, 40],
        }
    )
    silent = tables.silent_judges(summaries)
    assert silent.values.tolist() == [["a", "mute", 40]]  # on b it labelled 5 pairs: it has numbers there
    frame = pd.DataFrame(
        {"dataset": ["a", "a", "b", "a"], "judge": ["mute", "talks", "mute", "human"], "value": [0.0, 0.5, 0.4, 0.6]}
    )
    assert tables.without(frame, silent)["value"].tolist() == [0.5, 0.4, 0.6]
    jobs = pd.DataFrame({"dataset": ["a", "b", "a"], "judge": ["mute", "mute", "quiet"]})
    quiet = pd.concat(
        [silent, pd.DataFrame({"dataset": ["a"], "judge": ["quiet"], "failed_pairs": [40]})], ignore_index=True
    )
    assert tables.silent_everywhere(jobs, quiet) == {"quiet"}


@pytest.mark.slow  # ~25 s on an idle machine: four cells in process and a compare
def test_silent_judge_has_no_column_row_or_finding_only_a_note(silent_grid):
    rep = silent_grid
    (table,) = rep.table1.values()
    assert "mute" not in table.columns and "simulated" in " ".join(table.columns)
    assert "mute" not in set(rep.table2["judge"]) and len(rep.table2)
    assert rep.silent[["judge", "failed_pairs"]].values.tolist() == [["mute", len(load_toy().label_set())]]
    found = sections.findings(rep)
    about = [f for f in found if f.judge == "mute"]
    assert len(about) == 1 and "labelled none of its" in about[0].text and "no numbers" in about[0].text
    assert not any("mute" in f.text for f in found if f.judge != "mute")
    md = sections.markdown(rep)
    assert "judge mute labelled none of its" in md
