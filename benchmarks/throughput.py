"""Judging throughput of LLMJudge against the fake OpenAI-compatible server.

For each latency (50 ms, 200 ms), concurrency (1, 8, 32, 64) and rate limit (none, or a requests-per-minute
limit), judge synthetic pairs with a fresh cache and report judgments/s and efficiency = achieved /
min(concurrency / latency, rate limit). Slow settings get fewer pairs (each measurement is capped at about
--max-seconds of ideal time), so concurrency 1 at 200 ms does not take 400 s.

    python -m benchmarks.throughput [--quick] [--pairs 2000] [--rpm 6000] [--max-seconds 20]
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from benchmarks.common import MODEL, bound_per_s, parser, synthetic_dataset, table, write_json


def judge_pairs(
    base_url: str, dataset, pairs, concurrency: int, rpm: float | None, http_transport: str = "aiohttp"
) -> dict:
    """One measurement: a fresh LLMJudge with a fresh cache judges `pairs`; wall time and client CPU of judge()."""
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.remote.api import OpenAIBackend

    cache = tempfile.mkdtemp(prefix="jb-throughput-")
    try:
        backend = OpenAIBackend(
            MODEL,
            base_url=base_url,
            max_concurrency=concurrency,
            requests_per_minute=rpm,
            http_transport=http_transport,
        )
        judge = LLMJudge(name="bench", family="openai", model=MODEL, backend=backend, cache_dir=cache, progress=False)
        started, cpu = time.perf_counter(), time.process_time()
        result = judge.judge(pairs, dataset, dataset.corpus)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "seconds": seconds,
        "cpu_seconds": cpu,
        "labels": len(result.labels),
        "failed": len(result.failed),
        "calls_made": result.usage.calls_made,
        "http_client": type(backend._client._client).__name__,
    }


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2000, help="pairs per measurement before scaling down")
    ap.add_argument("--latencies", type=float, nargs="+", default=[0.05, 0.2])
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32, 64])
    ap.add_argument("--rpm", type=float, default=6000, help="the requests-per-minute limit of the limited runs")
    ap.add_argument("--max-seconds", type=float, default=20.0, help="cap on each measurement's ideal duration")
    args = ap.parse_args(argv)
    if args.quick:
        args.pairs, args.latencies, args.concurrency, args.rpm, args.max_seconds = 40, [0.01], [1, 8], 1200, 0.5
    os.environ.setdefault(
        "OPENAI_API_KEY", "sk-dummy-for-the-fake-server"
    )  # not a word of any path: secrets are scrubbed from text

    from judgebench.testing.fake_process import FakeLLMServer

    dataset = synthetic_dataset(args.pairs)
    all_pairs = dataset.label_set()[["query_id", "doc_id"]]
    rows = []
    with FakeLLMServer() as srv:
        for latency in args.latencies:
            srv.configure(latency_s=latency)
            for rpm in (None, args.rpm):
                for c in args.concurrency:
                    bound = bound_per_s(c, latency, rpm)
                    n = int(min(args.pairs, max(10, round(bound * args.max_seconds))))
                    srv.reset()
                    m = judge_pairs(srv.openai_base_url, dataset, all_pairs.iloc[:n], c, rpm)
                    stats = srv.stats()
                    rate = n / m["seconds"]
                    rows.append(
                        {
                            "latency_ms": round(latency * 1000),
                            "concurrency": c,
                            "rpm_limit": rpm or "none",
                            "server_latency_ms": round(
                                stats["config"]["latency_s"] * 1000, 3
                            ),  # what the server applied
                            "pairs": n,
                            "seconds": round(m["seconds"], 3),
                            "judgments_per_s": round(rate, 1),
                            "bound_per_s": round(bound, 1),
                            "efficiency": round(rate / bound, 3),
                            "server_requests": stats["requests"],
                            "max_in_flight": stats["max_in_flight"],
                            "labels": m["labels"],
                            "failed": m["failed"],
                        }
                    )
                    r = rows[-1]
                    print(
                        f"latency {r['latency_ms']} ms, concurrency {c:>2}, rpm {r['rpm_limit']}: {n} pairs in "
                        f"{r['seconds']} s = {r['judgments_per_s']}/s (bound {r['bound_per_s']}/s, efficiency "
                        f"{r['efficiency']})",
                        flush=True,
                    )
    cols = [
        "latency_ms",
        "concurrency",
        "rpm_limit",
        "pairs",
        "judgments_per_s",
        "bound_per_s",
        "efficiency",
        "max_in_flight",
    ]
    md = table(rows, cols, "LLMJudge throughput against the fake server (fresh cache per row)")
    out = {
        "settings": {
            "pairs": args.pairs,
            "latencies_s": args.latencies,
            "concurrency": args.concurrency,
            "rpm_limit": args.rpm,
            "max_seconds": args.max_seconds,
            "quick": args.quick,
        },
        "notes": "pairs scaled down to about max_seconds x bound per row; bound = min(concurrency/latency, rpm/60); "
        "server on the same machine, in its own process",
        "rows": rows,
        "markdown": md,
    }
    write_json("throughput", out, args.out)
    return out


if __name__ == "__main__":
    main()
