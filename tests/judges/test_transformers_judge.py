"""A local-model judge cell killed mid-work keeps every answer scored before the kill, and logs its progress.

The cell is real (``python run.py judge=smollm2`` with a tiny random model in a new interpreter, stderr to a file,
not a terminal). What is made deterministic is time: the child's scoring clock (``judgebench.llm.local.models.clock``)
advances SECONDS_PER_PAIR for each pair the judge scores, as a slow model on a loaded CPU would, and once
KILL_AFTER_S of such answers are done the next scoring call writes a marker and blocks, so that the test kills
the cell (SIGKILL: no handler, no flush) at a moment it knows, with the next chunk in flight.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from judgebench.cache.maintenance import stats
from judgebench.cache.store import CallCache

REPO = Path(__file__).resolve().parents[2]
SECONDS_PER_PAIR = 1.0
KILL_AFTER_S = 10.0

CHILD = """
import runpy, sys, time
from pathlib import Path
from judgebench.llm.local import models
from judgebench.judges.transformers_judge import TransformersJudge

now, scored = [0.0], [0]
models.clock = lambda: now[0]
real_score = TransformersJudge._score

def slow_score(self, payloads):
    if now[0] >= {kill_after}:  # enough answers: say how many are done, then wait for the kill
        Path({marker!r}).write_text(str(scored[0]))
        time.sleep(600)
    out = real_score(self, payloads)
    now[0] += {per_pair} * len(payloads)
    scored[0] += len(payloads)
    return out

TransformersJudge._score = slow_score
sys.argv = ["run.py", *sys.argv[1:]]
runpy.run_path({run_py!r}, run_name="__main__")
"""


@pytest.mark.slow  # a new interpreter that imports torch and loads a model: ~15 s on an idle machine
def test_a_killed_local_judge_cell_keeps_its_answers_and_logged_progress(tmp_path):
    from tiny_models import tiny_causal

    model = tiny_causal(tmp_path / "model")
    marker = tmp_path / "scored-before-kill"
    script = tmp_path / "child.py"
    script.write_text(
        CHILD.format(
            kill_after=KILL_AFTER_S, per_pair=SECONDS_PER_PAIR, marker=str(marker), run_py=str(REPO / "run.py")
        ),
        encoding="utf-8",
    )
    cache = tmp_path / "cache"
    args = [
        "ranker=oracle",
        "judge=smollm2",
        f"judge.model_spec.model={model}",
        "progress=true",
        "progress_interval_s=0.001",
        f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"artifact_root={tmp_path}/artifacts",
        f"cache_dir={cache}",
        f"hydra.run.dir={tmp_path}/out",
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGEBENCH_CACHE_DIR", "HYDRA_FULL_ERROR")}
    with open(tmp_path / "stderr.txt", "w") as err:
        child = subprocess.Popen([sys.executable, str(script), *args], cwd=tmp_path, env=env, stdout=err, stderr=err)
        try:
            deadline = time.monotonic() + 240
            while not marker.exists() and child.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert marker.exists(), f"rc={child.poll()}\n" + (tmp_path / "stderr.txt").read_text()[-3000:]
            time.sleep(0.1)  # the marker's text is written
            child.send_signal(signal.SIGKILL)
        finally:
            child.kill()
            child.wait()
    log = (tmp_path / "stderr.txt").read_text()
    done = int(marker.read_text())
    # a first chunk of one batch (smollm2.yaml: batch_size 8, 8 s), then what SAVE_SECONDS holds at 1 s a pair (30):
    # killed after 38 s of answers, scoring the third chunk, far short of the 241-pair label set
    assert done == 8 + 30, log[-2000:]
    stored = stats(CallCache(cache / "calls"))
    assert stored.entries == done and stored.corrupt == 0, (
        stored,
        log[-2000:],
    )  # every answered pair, nothing of the chunk in flight
    lines = re.findall(r"^judge smollm2: (\d+)/(\d+) pairs.*$", log, re.M)
    assert [int(n) for n, _ in lines] == [8, done], log[-2000:]  # one line per stored chunk at this interval
    assert {int(total) for _, total in lines} == {241}, lines
