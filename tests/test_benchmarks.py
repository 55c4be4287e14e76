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


def test_batch_mode(tmp_path):
    data = run_benchmark("batch_mode", tmp_path)
    online, batch, after = data["rows"]
    assert online["online_calls"] == online["labels"] == data["label_set_total"] == 60 and online["batches"] == 0
    assert data["kill"]["batches_at_kill"] == 1 and data["kill"]["saved_batch_files"] == 1  # killed mid-poll
    assert batch["online_calls"] == 0 and batch["batches"] == 1 and batch["prompts_submitted"] == 60
    assert batch["paid_twice"] == 0 and batch["labels"] == 60
    assert data["cost_ratio_batch_vs_online"] == pytest.approx(0.5)  # same tokens, half price
    assert after["online_calls"] == 0 and after["prompts_submitted"] == 0
    assert all(data["targets"].values())


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


def test_overhead(tmp_path):
    data = run_benchmark("overhead", tmp_path)
    split = data["profile"]["split_s"]
    assert {"metrics", "MLflow (store, runs, params, metrics, artifacts)", "process start-up (imports, Hydra init, sweep set-up)"} <= set(split)
    assert 0 < data["share_outside_metrics"] <= 1
    assert data["rows"][0]["finished_runs"] == 1


def test_adaptive_concurrency(tmp_path):
    data = run_benchmark("adaptive_concurrency", tmp_path)
    rows = {(r["limit"].split()[-1], r["concurrency"].split()[0] + (" storm" if "64" in r["concurrency"] else "")): r
            for r in data["rows"]}
    assert len(rows) == 6  # (in flight, RPM) x (fixed 64, fixed at the limit, adaptive)
    inflight_storm, inflight_fixed, inflight_adaptive = (rows[("flight", k)] for k in ("fixed storm", "fixed", "adaptive"))
    # the quick run's server admits 4 in flight: a fixed window of 64 is refused most of the time, one of 4 never
    assert inflight_storm["share_429"] > 0.02 and inflight_storm["server_max_in_flight"] == 4
    assert inflight_fixed["429s"] == 0 and inflight_fixed["labels"] == inflight_fixed["pairs"]
    assert inflight_adaptive["share_429"] < 0.02 and inflight_adaptive["labels"] == inflight_adaptive["pairs"]
    assert inflight_adaptive["server_max_in_flight"] == 4 and 3 <= inflight_adaptive["final_window"] <= 6
    rpm_storm, rpm_adaptive = rows[("RPM", "fixed storm")], rows[("RPM", "adaptive")]
    assert rpm_storm["share_429"] > 0.02 and rpm_adaptive["share_429"] < rpm_storm["share_429"] / 3
    assert rpm_adaptive["labels"] == rpm_adaptive["pairs"]
    assert set(data["targets"]) == {"adaptive_within_10pct_of_bound", "adaptive_within_10pct_of_fixed_at_limit",
                                    "adaptive_429_share_below_2pct"}


@pytest.mark.parametrize("name", ["call_economy", "batch_mode", "throughput", "versus", "local_scoring", "overhead",
                                  "adaptive_concurrency"])


@pytest.mark.parametrize("name", ["call_economy", "batch_mode", "throughput", "versus", "local_scoring", "overhead"])
def test_help(name):
    import importlib

    sys.path.insert(0, str(REPO))
    mod = importlib.import_module(f"benchmarks.{name}")
    with pytest.raises(SystemExit) as e:
        mod.main(["--help"])
    assert e.value.code == 0
