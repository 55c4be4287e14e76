"""benchmarks.hot_path runs tiny (--quick, toy data) and writes rows whose figures follow from what it measured:
prompt counts equal what the settings imply on the toy data (computed here), ratio = us_per_prompt / tokenizer
time, padding waste = 1 - real / computed tokens of the tensors the model received."""

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_hot_path_quick(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k != "JUDGEBENCH_CACHE_DIR"}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.hot_path", "--quick", "--out", str(tmp_path)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads((tmp_path / "hot_path.json").read_text())
    rows = {r["path"]: r for r in data["rows"]}
    assert set(rows) == {"rankt5", "prp", "judge"}

    from judgebench.data.datasets import load_toy

    toy = load_toy()
    q = toy.judged_queries()[0]
    s = data["settings"]
    pool = toy.pool[toy.pool["query_id"] == q]
    n_prp = int((pool["rank"] <= s["prp_depth"]).sum())
    assert rows["rankt5"]["prompts"] == int((pool["rank"] <= s["rankt5_depth"]).sum())
    assert rows["prp"]["prompts"] == n_prp * (n_prp - 1)
    assert rows["judge"]["prompts"] == len(toy.label_set().query("query_id == @q"))
    for r in rows.values():
        for field in ("us_per_prompt", "tokenize_us_per_prompt", "ratio", "padding_waste"):
            assert field in r
        assert r["us_per_prompt"] > 0 and r["tokenize_us_per_prompt"] > 0
        assert abs(r["ratio"] - r["us_per_prompt"] / r["tokenize_us_per_prompt"]) <= 0.01 + 1e-3 * r["ratio"]
        assert r["cpu_us_per_prompt"] > 0 and r["tokenize_cpu_us_per_prompt"] > 0
        assert (
            abs(r["cpu_ratio"] - r["cpu_us_per_prompt"] / r["tokenize_cpu_us_per_prompt"])
            <= 0.01 + 1e-3 * r["cpu_ratio"]
        )
        assert 0 < r["tokens_real"] <= r["batches_tokens_computed"]
        assert abs(r["padding_waste"] - (1 - r["tokens_real"] / r["batches_tokens_computed"])) < 1e-4
        assert r["meets_target"] == (
            r["ratio"] <= data["targets"]["ratio"] and r["padding_waste"] <= data["targets"]["padding_waste"]
        )
    # the judge's prompts are the long UMBRELA instruction: more tokens than RankT5's "Query: ... Document: ..."
    assert rows["judge"]["tokens_per_prompt"] > 2 * rows["rankt5"]["tokens_per_prompt"]
