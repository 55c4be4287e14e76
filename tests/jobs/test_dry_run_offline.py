"""A dry run prices a grid offline: no key, no request to any server, what it cannot check listed as not checked,
and the sweep's total (jobs/dry_run_total.py) counting a call shared by two cells once."""

from __future__ import annotations

import re
from pathlib import Path

import cli_runner
from cli_runner import env_with
from judgebench.data.datasets import load_toy
from judgebench.jobs import dry_run_total
from judgebench.llm.prompts import load_prompt
from judgebench.testing.fake_process import FakeLLMServer

TOY = load_toy()


def no_keys() -> dict[str, str]:
    env = env_with()
    env.pop("OPENAI_API_KEY")
    return env


def args(tmp: Path, *extra: str) -> list[str]:
    return [
        "-m",
        *extra,
        "dry_run=true",
        "progress=false",
        f"tracking_uri=sqlite:///{tmp}/store/mlflow.db",
        f"artifact_root={tmp}/store/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.sweep.dir={tmp}/multirun",
    ]


def test_a_grid_of_api_judges_is_priced_with_no_key_and_no_request(tmp_path):
    template = load_prompt("umbrela_bing")
    pairs = TOY.label_set()
    tokens = sum(
        len(template.render(query=TOY.queries[q], passage=TOY.corpus[d])) // 4
        for q, d in zip(pairs["query_id"], pairs["doc_id"])
    )
    with FakeLLMServer() as srv:  # the judges' base_url: any request or model lookup would show in its counts
        res = cli_runner.run(
            args(tmp_path, "judge=gemini_pro,gemini_flash", "ranker=oracle,bm25", f"++judge.base_url={srv.base_url}"),
            cwd=tmp_path,
            env=no_keys(),
        )
        stats = srv.stats()
    assert res.rc == 0 and "error" not in res.err.lower(), str(res)
    assert stats["requests"] == 0 and sum(stats["model_gets"].values()) == 0, stats
    assert res.out.count("[dry run] not checked: judge gemini gemini-3.1-pro-preview") == 1, res.out  # once per backend
    assert "key NOT SET (GEMINI_API_KEY or GOOGLE_API_KEY)" in res.out
    costs = {
        j: float(re.search(rf"/ {j}: .*?~\$([0-9.]+)\)", res.out).group(1)) for j in ("gemini_pro", "gemini_flash")
    }
    line = next(x for x in res.out.splitlines() if x.startswith("dry run total"))
    assert line.startswith("dry run total (dataset toy): "), line  # what it priced: the default dataset, named
    # 4 cells, but oracle and bm25 share the label set: each judge's calls once
    assert f"{2 * len(pairs):,} distinct API calls to make, ~{2 * tokens:,} input tokens" in line, line
    assert abs(float(re.search(r"~\$([0-9.]+) at", line).group(1)) - sum(costs.values())) < 2e-4, (line, costs)
    assert costs["gemini_pro"] > costs["gemini_flash"] > 0  # the config's prices: Pro costs more
    assert f"gemini gemini-3.8-flash at {srv.base_url}" in res.out.split("dry run total (dataset toy):")[1]
    assert not (tmp_path / "store").exists()  # nothing created in MLflow


def test_a_retired_model_is_still_refused_offline_in_one_line(tmp_path):
    res = cli_runner.run(
        args(tmp_path, "judge=gemini_flash", "judge.backend.model=gemini-2.0-flash"), cwd=tmp_path, env=no_keys()
    )
    assert res.rc == 2 and any("use gemini-3.8-flash instead" in x for x in res.error_lines), str(res)


def test_the_total_reads_every_cells_file_and_counts_shared_calls_once(tmp_path):
    """Cells run in separate processes (parallel or SLURM launchers) save separately; the total merges them."""
    import json

    d = tmp_path / dry_run_total.DIR
    d.mkdir(parents=True)
    (d / "00000.json").write_text(
        json.dumps(
            {
                "calls": {"a": [10, 0.5], "b": [20, 1.0]},
                "gpu_hours": {"m:x": 0.25},
                "cpu_hours": {"m:x": 2.0},
                "not_checked": ["openai m at u"],
                "datasets": ["dl19"],
            }
        )
    )
    (d / "00001.json").write_text(
        json.dumps(
            {
                "calls": {"b": [20, 1.0], "c": [5, 0.25]},
                "gpu_hours": {"m:x": 0.25, "m:y": 1.0},
                "cpu_hours": {"m:x": 2.0, "m:y": 8.0},
                "not_checked": ["openai m at u"],
                "datasets": ["dl20"],
            }
        )
    )
    t = dry_run_total.total(tmp_path)
    assert t == {
        "calls": 3,
        "input_tokens": 35,
        "cost_usd": 1.75,
        "gpu_hours": 1.25,
        "cpu_hours": 10.0,
        "not_checked": ["openai m at u"],
        "datasets": ["dl19", "dl20"],
    }
    line = dry_run_total.format_total(t)
    assert line.startswith("dry run total (datasets dl19, dl20): 3 distinct API calls")
    assert "~1.25 GPU-hours of local models (~10 CPU-hours on 2 cores)" in line, line
    assert dry_run_total.total(tmp_path / "none") is None
