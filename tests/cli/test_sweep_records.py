"""cli/sweep_records.py: the per-cell records a sweep leaves, and the summary counted and printed from them."""

from __future__ import annotations

import json

from judgebench.cli import sweep_records


def test_a_long_error_loses_its_middle_and_keeps_the_cell_and_the_cause():
    text = "cell judge=a dataset=b " + "x" * 500 + " ValueError: the cause"
    short = sweep_records.short_error(text, limit=60)
    assert len(short) == 60 and short.startswith("cell judge=a") and short.endswith("the cause")
    assert " … " in short
    assert sweep_records.short_error("first\n\nsecond\nthird", lines=2) == "first second"


def test_secret_overrides_are_masked_in_a_record(tmp_path):
    sweep_records.write_record(tmp_path, 3, ["judge.api_key=sk-123", "judge=gpt", "seed=1"], "finished")
    (record,) = sweep_records.read_records(tmp_path)
    assert record["overrides"] == ["judge.api_key=***", "judge=gpt", "seed=1"]
    assert record["num"] == 3 and record["status"] == "finished" and "sk-123" not in json.dumps(record)


def test_the_summary_counts_each_outcome_and_names_the_cells_that_never_started(tmp_path):
    """Five planned cells, four records (two finished, one skipped, one failed): the fifth never started."""
    planned = [["judge=a", "seed=0"], ["judge=b", "seed=0"], ["judge=c", "seed=0"], ["judge=d", "seed=0"]]
    planned.append(["judge=e", "seed=0"])
    sweep_records.write_json(tmp_path / sweep_records.PLANNED, planned)
    for num, status in enumerate(["finished", "finished", "skipped-done", "failed"]):
        error = "ValueError: bad" if status == "failed" else None
        sweep_records.write_record(tmp_path, num, planned[num], status, error)
    summary = sweep_records.summarize(tmp_path)
    assert (summary["cells"], summary["ran"], summary["skipped"], summary["failed"], summary["not_started"]) == (
        5,
        2,
        1,
        1,
        1,
    )
    assert summary["never_started"] == [{"num": 4, "overrides": ["judge=e", "seed=0"]}]
    assert json.loads((tmp_path / sweep_records.SUMMARY_FILE).read_text()) == json.loads(json.dumps(summary))
    table = sweep_records.format_summary(summary)
    assert table.splitlines()[0].startswith("judgebench sweep: 5 cells - 2 ran, 1 skipped, 1 failed, 1 never started")
    assert "common overrides: seed=0" in table and "error: ValueError: bad" in table
    assert "#4: judge=e" in table
