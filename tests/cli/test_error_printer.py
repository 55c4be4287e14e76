"""One error printer (errors.print_error) for judgebench and judgebench-compare: the same bytes as the printers it
replaced (``PREFIX + message`` and compare's own ``judgebench-compare: error: ...``), secrets scrubbed."""

from __future__ import annotations

import pytest

from judgebench import errors
from judgebench.compare import entry


def test_the_printer_writes_one_line_per_program_with_the_secret_masked(capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    errors.print_error("bad key sk-test-0123456789abcdef for judge.model")
    errors.print_error("no experiment 'demo2'", "judgebench-compare")
    out, err = capsys.readouterr()
    assert out == ""
    assert err == ("judgebench: error: bad key *** for judge.model\njudgebench-compare: error: no experiment 'demo2'\n")
    assert errors.PREFIX == "judgebench: error: "  # the prefix the sweeper's CellError lines still start with


def test_compare_refuses_an_unknown_experiment_through_it(tmp_path, capsys):
    import sqlite3

    db = tmp_path / "mlflow.db"
    with sqlite3.connect(db) as con:  # the two columns of MLflow's experiments table compare's quick check reads
        con.execute("CREATE TABLE experiments (experiment_id INTEGER, name TEXT, lifecycle_stage TEXT)")
        con.execute("INSERT INTO experiments VALUES (1, 'demo', 'active')")
    code = entry.main([f"tracking_uri=sqlite:///{db}", "experiment=dem"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("judgebench-compare: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    assert "dem" in err


@pytest.mark.parametrize("argv", [["judge=humna"]])
def test_an_unknown_group_option_is_one_line_exit_2(argv, capsys):
    from judgebench.checks import cli_checks
    from judgebench.config.config_dir import CONF_DIR

    with pytest.raises(SystemExit) as stop:
        cli_checks.refuse_unknown_options(argv, CONF_DIR)
    err = capsys.readouterr().err
    assert stop.value.code == 2
    assert err.startswith("judgebench: error: judge=humna") and "human" in err and err.count("\n") == 1, err
