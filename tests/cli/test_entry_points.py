"""The entry points survive the move of the root modules into cli/ (issue 57): the console script, ``python -m
judgebench.cli``, the repository's run.py, and the Hydra job function that submitit pickles by reference."""

from __future__ import annotations

import pickle
import subprocess
import sys
import tomllib
from importlib import import_module
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_console_scripts_name_functions_that_exist():
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    assert scripts["judgebench"] == "judgebench.cli:main"
    for target in scripts.values():
        module, _, name = target.partition(":")
        assert callable(getattr(import_module(module), name)), target


def test_the_job_function_pickles_by_reference_and_loads_in_a_fresh_process(tmp_path):
    import cloudpickle

    from judgebench.cli import run

    blob = cloudpickle.dumps(run.job)
    assert b"judgebench.cli.run" in blob and len(blob) < 200  # by reference: the job process imports the module
    (tmp_path / "job.pkl").write_bytes(blob)
    code = (
        f"import pickle; f = pickle.loads(open({str(tmp_path / 'job.pkl')!r}, 'rb').read()); "
        "print(f.__module__, f.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["judgebench.cli.run", "job"], done.stderr
    assert pickle.loads(blob) is run.job


def test_python_m_judgebench_cli_and_run_py_answer_help():
    cli = subprocess.run([sys.executable, "-m", "judgebench.cli"], capture_output=True, text=True, timeout=120)
    assert "judgebench run" in cli.stdout + cli.stderr, cli.stderr
    run_py = subprocess.run(
        [sys.executable, str(REPO / "run.py"), "--help"], capture_output=True, text=True, timeout=120, cwd=REPO
    )
    assert run_py.returncode == 0 and "judge" in run_py.stdout, run_py.stderr
