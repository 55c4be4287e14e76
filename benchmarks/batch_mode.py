"""Batch mode vs online on the paper grid's label sets (TREC DL 2019 + 2020: 5,116 pairs; the grid's 14
systems share them, so judging the grid pays for exactly these prompts), judged by gpt_4o_mini pointed at the
local fake server: calls, batch jobs, cost, and a job killed while polling then rerun (prompts paid twice).

    python -m benchmarks.batch_mode [--quick] [--latency 0.002]

``--quick`` judges a synthetic 60-pair label set (seconds).

Online runs on its own cache; the batch run is a child process killed (SIGKILL) once its batches are being
polled, then rerun in this process on the same cache; an online run on that cache last must make 0 calls.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, TREC_DL_DIR, parser, synthetic_dataset, table, write_json

PRICE_IN, PRICE_OUT = 0.15, 0.60  # conf/judge/gpt_4o_mini.yaml
DATASETS = ["dl19", "dl20"]


def load(name: str):
    """A TREC DL year with its passages, or (passages absent, or --quick) a synthetic set of the same size."""
    if name == "quick":
        return synthetic_dataset(60, name="quick")
    sizes = {"dl19": 2257, "dl20": 2859}
    if (TREC_DL_DIR / "passages").is_dir():
        from judgebench.data.trec_dl import load_trec_dl

        return load_trec_dl(name, int("20" + name[2:]), data_dir=str(TREC_DL_DIR))
    return synthetic_dataset(sizes[name], name=name)


def make_judge(url: str, cache_dir: Path, mode: str, poll_s: float):
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.remote.api import OpenAIBackend

    backend = OpenAIBackend(
        "gpt-4o-mini",
        base_url=url + "/v1",
        mode=mode,
        batch={"poll_interval_s": poll_s},
        price_input_per_mtok=PRICE_IN,
        price_output_per_mtok=PRICE_OUT,
        max_concurrency=8,
    )
    return LLMJudge(
        name="gpt_4o_mini",
        family="openai",
        model=backend.model,
        backend=backend,
        cache_dir=str(cache_dir),
        progress=False,
    )


def judge_all(url: str, cache_dir: Path, mode: str, datasets: list[str], poll_s: float = 0.05) -> dict:
    """Each dataset's label set judged once (what the grid pays for); totals of the judges' usage."""
    totals = {
        "labels": 0,
        "failed": 0,
        "calls_made": 0,
        "calls_cached": 0,
        "requests": 0,
        "batches": 0,
        "cost_usd": 0.0,
    }
    started = time.perf_counter()
    for name in datasets:
        ds = load(name)
        result = make_judge(url, cache_dir, mode, poll_s).judge(ds.label_set()[["query_id", "doc_id"]], ds, ds.corpus)
        u = result.usage
        totals["labels"] += len(result.labels)
        totals["failed"] += len(result.failed)
        for k in ("calls_made", "calls_cached", "requests", "batches", "cost_usd"):
            totals[k] += getattr(u, k)
    totals["seconds"] = round(time.perf_counter() - started, 2)
    return totals


def kill_while_polling(srv, url: str, cache_dir: Path, datasets: list[str], timeout_s: float = 600) -> dict:
    """A batch-mode job in a child process, SIGKILLed once its first batch has been polled 3 times."""
    srv.configure_batches(polls_in_progress=10**9)  # held in progress until released
    code = (
        f"import sys; sys.path.insert(0, {str(REPO)!r})\nfrom pathlib import Path\n"
        "from benchmarks.batch_mode import judge_all\n"
        f"judge_all({url!r}, Path({str(cache_dir)!r}), 'batch', {datasets!r})\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout_s
    try:
        while srv.batch_stats()["polls"] < 3:
            if child.poll() is not None:
                raise RuntimeError(f"the batch job ended before it was killed:\n{child.stderr.read()[-3000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError("the batch job never polled its batch")
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    finally:
        if child.poll() is None:
            child.kill()
        child.stderr.close()
    stats = srv.batch_stats()
    srv.configure_batches(polls_in_progress=0)  # the provider finishes the batch while nobody waits
    return {
        "killed_at_polls": stats["polls"],
        "batches_at_kill": stats["batches"],
        "prompts_submitted_at_kill": stats["prompts_submitted"],
        "saved_batch_files": len(list((cache_dir / "batches").glob("batch-*.json"))),
    }


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--latency", type=float, default=0.002, help="fake server latency per online request (s)")
    args = ap.parse_args(argv)
    datasets = ["quick"] if args.quick else DATASETS
    os.environ.setdefault("OPENAI_API_KEY", "sk-dummy-for-the-fake-server")  # the child inherits it

    from judgebench.testing.fake_process import FakeLLMServer

    root = Path(tempfile.mkdtemp(prefix="jb-batch-mode-"))
    rows: list[dict] = []
    result: dict = {
        "settings": {
            "datasets": datasets,
            "latency_s": args.latency,
            "quick": args.quick,
            "passages": (TREC_DL_DIR / "passages").is_dir(),
            "prices_per_mtok": [PRICE_IN, PRICE_OUT],
        }
    }
    try:
        with FakeLLMServer(latency_s=args.latency) as srv:

            def row(run: str, totals: dict) -> dict:
                stats, bstats = srv.stats(), srv.batch_stats()
                submitted = bstats["submitted_sha256"]
                r = {
                    "run": run,
                    "labels": totals["labels"],
                    "failed": totals["failed"],
                    "online_calls": stats["requests"],
                    "batches": bstats["batches"],
                    "prompts_submitted": bstats["prompts_submitted"],
                    "paid_twice": len(submitted) - len(set(submitted)),
                    "cost_usd": totals["cost_usd"],
                    "seconds": totals["seconds"],
                }
                rows.append(r)
                print(f"{run}: {r}", flush=True)
                return r

            srv.reset(), srv.reset_batches()
            online = row("online, cold cache", judge_all(srv.base_url, root / "online", "online", datasets))

            srv.reset(), srv.reset_batches()
            result["kill"] = kill_while_polling(srv, srv.base_url, root / "batch", datasets)
            print(f"killed while polling: {result['kill']}", flush=True)
            resumed = judge_all(srv.base_url, root / "batch", "batch", datasets)
            batch = row("batch, killed while polling, then rerun", resumed)

            srv.reset(), srv.reset_batches()
            after = row("online after batch (same cache)", judge_all(srv.base_url, root / "batch", "online", datasets))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    n = online["labels"]
    md = table(
        rows,
        [
            "run",
            "labels",
            "failed",
            "online_calls",
            "batches",
            "prompts_submitted",
            "paid_twice",
            "cost_usd",
            "seconds",
        ],
        f"Batch mode vs online: {n} label-set pairs of {', '.join(datasets)}, gpt-4o-mini prices, fake server",
    )
    result.update(
        {
            "rows": rows,
            "markdown": md,
            "label_set_total": n,
            "cost_ratio_batch_vs_online": round(batch["cost_usd"] / online["cost_usd"], 4)
            if online["cost_usd"]
            else None,
            "targets": {
                "same_label_count": batch["labels"] == online["labels"] == n,
                "one_batch_per_label_set": batch["batches"] == len(datasets),
                "paid_twice_zero": batch["paid_twice"] == 0 and batch["prompts_submitted"] == n,
                "online_after_batch_zero_calls": after["online_calls"] == 0,
            },
        }
    )
    write_json("batch_mode", result, args.out)
    return result


if __name__ == "__main__":
    main()
