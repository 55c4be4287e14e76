"""Each benchmark runs end to end on a tiny input (--quick) and writes its JSON with the expected keys.

No timing is asserted: the figures belong to the benchmark runs on a quiet machine, not to CI.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def run_benchmark(name: str, out: Path, *extra: str, timeout: int = 300) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JUDGEBENCH_CACHE_DIR"}  # --quick runs on the toy data
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{name}", "--quick", "--out", str(out), *extra],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((out / f"{name}.json").read_text())
    assert data["benchmark"] == name and data["machine"]["cpus"]
    assert data["markdown"].count("|") > 10  # the printed table
    return data


def test_call_economy(tmp_path):
    data = run_benchmark("call_economy", tmp_path)
    cold, *reruns, parallel = data["rows"]
    assert cold["calls"] == data["label_set_total"] > 0  # every label-set pair judged once
    assert all(r["calls"] == 0 for r in reruns)
    assert parallel["calls"] == data["parallel"]["requests"]
    assert {"duplicates", "distinct_prompts", "in_flight_overlap_bound", "uncoordinated_calls", "return_codes"} <= set(data["parallel"])
    assert data["parallel"]["return_codes"] == [0, 0]
    assert data["parallel"]["duplicates"] == 0  # jobs sharing a label set take turns: nothing is paid twice
    assert set(data["targets"]) == {"cold_calls_equal_label_set", "rerun_zero_calls", "parallel_duplicates_within_overlap"}


def test_throughput(tmp_path):
    data = run_benchmark("throughput", tmp_path)
    assert len(data["rows"]) == 4  # 1 latency x 2 concurrency levels x (no limit, rpm limit)
    for row in data["rows"]:
        assert {"latency_ms", "concurrency", "rpm_limit", "pairs", "judgments_per_s", "bound_per_s", "efficiency"} <= set(row)
        assert row["labels"] == row["pairs"] == row["server_requests"] and row["failed"] == 0


def test_versus_without_umbrela(tmp_path):
    # UMBRELA needs its own venv (pip, ~20 s): the test checks our side and the bare client only
    data = run_benchmark("versus", tmp_path, "--skip-umbrela")
    (row,) = data["ceiling"]
    assert {"bare_client_per_s", "llmjudge_per_s", "llmjudge_vs_bare", "bound_per_s", "llmjudge_no_fsync_per_s"} <= set(row)
    assert data["umbrela"]["requested"] is False and "ratios" in data["umbrela"]
    assert any("stand-in" in r["judge"] for r in data["umbrela_rows"])


def test_local_scoring(tmp_path):
    data = run_benchmark("local_scoring", tmp_path)
    assert {(r["task"], r["batch"]) for r in data["rows"]} == {("rg", 1), ("rg", 8), ("prp", 1), ("prp", 8)}
    for row in data["rows"]:
        assert row["ms_per_prompt"] > 0 and row["peak_rss_mb"] > 0 and row["speedup_vs_batch1"] > 0


def test_local_judge_prefix(tmp_path):
    data = run_benchmark("local_judge_prefix", tmp_path)
    unshared, shared = data["rows"]
    assert (unshared["path"], shared["path"]) == ("unshared", "shared") and unshared["pairs"] == shared["pairs"] == 12
    assert shared["prefix_shared"] == 12 and shared["prefix_fallbacks"] == 0 and unshared["prefix_shared"] == 0
    assert shared["tokens_per_pair"] < unshared["tokens_per_pair"]  # the prefix is run once per query
    assert data["max_abs_delta_logprob"] <= 1e-4 and data["labels_equal"]
    assert data["peak"]["gflops"] > 0 and set(data["targets"]) == {"speedup_at_least_2.5", "max_delta_at_most_1e-4"}


def test_overhead(tmp_path):
    data = run_benchmark("overhead", tmp_path)
    split = data["profile"]["split_s"]
    assert {"metrics", "MLflow (store, runs, params, metrics, artifacts)", "process start-up (imports, Hydra init, sweep set-up)"} <= set(split)
    assert 0 < data["share_outside_metrics"] <= 1
    assert data["rows"][0]["finished_runs"] == 1


@pytest.mark.parametrize("name", ["call_economy", "throughput", "versus", "local_scoring", "local_judge_prefix", "overhead"])
def test_help(name):
    import importlib

    sys.path.insert(0, str(REPO))
    mod = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0
