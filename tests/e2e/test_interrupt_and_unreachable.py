"""Ctrl-C and an unreachable judge server: one line each, fast, nothing lost, and a sweep still summarized."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import time
from pathlib import Path

import cli_runner
from cli_runner import env_with
from judgebench.cache.store import CallCache
from judgebench.testing.fake_process import FakeLLMServer

STORE: dict[str, Path] = {}


_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]


def cell(tmp: Path, *extra: str) -> list[str]:
    return [
        "ranker=oracle",
        "judge=gpt_4o_mini",
        "progress=false",
        f"tracking_uri=sqlite:///{STORE['dir']}/mlflow.db",
        f"artifact_root={STORE['dir']}/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.run.dir={tmp}/out",
        f"hydra.sweep.dir={tmp}/multirun",
        "experiment_name=interrupts",
        *extra,
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_judge_server_fails_fast_naming_the_url(tmp_path):
    port = _free_port()  # nothing listens there: connection refused
    url = f"http://127.0.0.1:{port}/v1"  # (a URL with credentials is refused before any request: test_secrets.py)
    started = time.monotonic()
    res = cli_runner.run(cell(tmp_path), cwd=tmp_path, env=env_with(OPENAI_BASE_URL=url))
    elapsed = time.monotonic() - started
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
    assert f"cannot connect to http://127.0.0.1:{port}/v1" in res.error_lines[0], str(res)
    assert "cached" not in res.error_lines[0]
    assert elapsed < 20, elapsed  # not minutes of retries


def test_ctrl_c_is_one_line_exit_130_and_the_sweep_is_still_summarized(tmp_path):
    with FakeLLMServer(latency_s=0.05) as srv:
        args = [
            "-m",
            *cell(
                tmp_path,
                f"judge.base_url={srv.openai_base_url}",
                "judge.backend.max_concurrency=4",
                "judge.parse_attempts=1,2",
            ),
        ]
        child = cli_runner.start(args, cwd=tmp_path, env=env_with())
        deadline = time.monotonic() + 60
        while srv.stats()["requests"] < 20:
            assert child.poll() is None and time.monotonic() < deadline, str(child.result())
            time.sleep(0.01)
        before = child.signal_state()
        os.kill(child.pid, signal.SIGINT)
        res = child.wait(60)
    assert res.rc == 130, f"{res}\nsignal state of the child when SIGINT was sent: {before}"
    assert "Traceback" not in res.err + res.out, str(res)
    lines = [x for x in res.err.splitlines() if x.startswith("judgebench: interrupted")]
    assert len(lines) == 1, str(res)
    stored = sum(1 for _ in CallCache(tmp_path / "cache" / "calls").keys())
    assert (
        0 < stored
        and f"{stored} answers stored in the call cache" in lines[0]
        and "rerun the same command to resume" in lines[0]
    ), lines
    assert "cell #0" in lines[0]
    summary = json.loads((tmp_path / "multirun" / "sweep_summary.json").read_text())
    assert [j["status"] for j in summary["jobs"]] == ["interrupted"] and summary["failed"] == 1
    # the second cell (judge.parse_attempts=2) never started: the summary names it and says how to run it
    assert summary["cells"] == 2 and summary["not_started"] == 1, summary
    assert (
        summary["never_started"][0]["num"] == 1 and "judge.parse_attempts=2" in summary["never_started"][0]["overrides"]
    ), summary
    assert "2 cells - 0 ran, 0 skipped, 1 failed, 1 never started" in res.out, str(res)
    assert "never started (1): #1; rerun the same command to run them (finished cells are skipped)" in res.out, str(res)
    assert re.search(r"^ +#1: .*judge\.parse_attempts=2", res.out, re.M), str(res)
