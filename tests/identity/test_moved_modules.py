"""identity/moved_modules.py: a pickle that names the entry point and the sweep callback by their paths before the
restructure (as submitit's pickles of queued SLURM jobs do) loads today's objects."""

from __future__ import annotations

import pickle
import subprocess
import sys

import judgebench.cli.hydra_callbacks
import judgebench.cli.run


def test_a_pickle_naming_the_old_paths_loads_todays_objects():
    # GLOBAL opcodes, written by hand as an old pickle has them: module path, newline, name
    assert pickle.loads(b"cjudgebench.run\njob\n.") is judgebench.cli.run.job
    old = pickle.loads(b"cjudgebench.hydra_callbacks\nSweepCallback\n.")
    assert old is judgebench.cli.hydra_callbacks.SweepCallback


def test_a_fresh_interpreter_needs_nothing_but_the_pickle():
    """As a SLURM job starts: nothing of judgebench imported before the pickle is read."""
    code = (
        "import pickle, sys; f = pickle.loads(b'cjudgebench.run\\njob\\n.'); "
        "print(f.__module__, f.__name__, 'judgebench.cli.run' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["judgebench.cli.run", "job", "True"]


def test_paths_that_never_existed_still_fail():
    import importlib

    import pytest

    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("judgebench.no_such_module")
