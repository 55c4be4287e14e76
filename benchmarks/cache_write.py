"""Cache writes per second: one file per entry vs append-only segments, one process and eight, same run.

Each writer stores judge-sized records (an answer of ~300 characters with its meta) through the public API:
``put`` (one record per call, what a synchronous caller does) and ``put_many`` in groups of 32 (what the
background group writer produces on a busy event loop). Eight processes write into one cache directory at
once (forked, released together by a barrier); the figure is all their records over the wall time. With
``--fsync`` each write is also fsync'd (JUDGEBENCH_CACHE_FSYNC=1), on fewer records. Rounds alternate the
layouts and the median is reported, because the machine is shared.

    python -m benchmarks.cache_write [--quick] [--records 2000] [--rounds 3] [--fsync]
"""

from __future__ import annotations

import multiprocessing as mp
import shutil
import statistics
import tempfile
import time

from benchmarks.common import parser, table, write_json

LAYOUTS = ("files", "segments")
GROUP = 32


def _records(n: int, salt: str) -> list[tuple[str, dict, dict]]:
    from judgebench.cache.keys import call_key

    meta = {"backend": "openai", "model": "gpt-4o-mini", "prompt_version": "umbrela_bing@bench"}
    out = []
    for i in range(n):
        text = f"##final score: {i % 4}\n" + "reasoning " * 28
        rec = {
            "text": text,
            "parsed": i % 4,
            "input_tokens": 600,
            "output_tokens": 40,
            "latency_s": 0.05,
            "attempts": 1,
            "time": 1.0,
        }
        out.append((call_key(salt=salt, i=i), rec, meta))
    return out


def _write(root: str, layout: str, grouped: bool, fsync: bool, items: list) -> float:
    from judgebench.cache.store import CallCache

    cache = CallCache(root, fsync=fsync, layout=layout)
    started = time.perf_counter()
    if grouped:
        for i in range(0, len(items), GROUP):
            cache.put_many(items[i : i + GROUP])
    else:
        for key, rec, meta in items:
            cache.put(key, rec, meta)
    seconds = time.perf_counter() - started
    cache.close()
    return seconds


def _child(root: str, layout: str, grouped: bool, fsync: bool, n: int, wid: int, barrier) -> None:
    items = _records(n, f"w{wid}")
    barrier.wait()
    _write(root, layout, grouped, fsync, items)


def one_process(layout: str, grouped: bool, fsync: bool, n: int) -> float:
    root = tempfile.mkdtemp(prefix="jb-cache-write-")
    try:
        return n / _write(root, layout, grouped, fsync, _records(n, "one"))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def eight_processes(layout: str, grouped: bool, fsync: bool, n: int, procs: int = 8) -> float:
    ctx = mp.get_context("fork")
    root = tempfile.mkdtemp(prefix="jb-cache-write-")
    try:
        barrier = ctx.Barrier(procs + 1)
        ps = [ctx.Process(target=_child, args=(root, layout, grouped, fsync, n, w, barrier)) for w in range(procs)]
        for p in ps:
            p.start()
        barrier.wait()
        started = time.perf_counter()
        for p in ps:
            p.join()
        seconds = time.perf_counter() - started
        assert all(p.exitcode == 0 for p in ps)
        from judgebench.cache import maintenance
        from judgebench.cache.store import CallCache

        assert maintenance.stats(CallCache(root)).entries == procs * n  # every record stored, none corrupt
        return procs * n / seconds
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=2000, help="records per writer")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fsync", action="store_true", help="also measure with fsync on (records / 10)")
    args = ap.parse_args(argv)
    if args.quick:
        args.records, args.rounds = 64, 1
    settings = [(False, args.records)] + ([(True, max(8, args.records // 10))] if args.fsync else [])
    rows = []
    for fsync, n in settings:
        for grouped in (False, True):
            for procs in (1, 8):
                runs: dict[str, list[float]] = {layout: [] for layout in LAYOUTS}
                for _ in range(args.rounds):
                    for layout in LAYOUTS:  # alternating, so both see the same load
                        rate = (
                            one_process(layout, grouped, fsync, n)
                            if procs == 1
                            else eight_processes(layout, grouped, fsync, n // 4 or 1)
                        )
                        runs[layout].append(rate)
                files, segments = (statistics.median(runs[layout]) for layout in LAYOUTS)
                rows.append(
                    {
                        "api": f"put_many({GROUP})" if grouped else "put",
                        "processes": procs,
                        "fsync": fsync,
                        "records_per_process": n if procs == 1 else n // 4 or 1,
                        "files_writes_per_s": round(files, 1),
                        "segments_writes_per_s": round(segments, 1),
                        "segments_vs_files": round(segments / files, 2),
                        "files_runs": [round(r, 1) for r in runs["files"]],
                        "segments_runs": [round(r, 1) for r in runs["segments"]],
                    }
                )
                print(
                    f"{rows[-1]['api']:>13} x{procs} fsync={fsync}: files {files:.0f}/s, segments {segments:.0f}/s "
                    f"({segments / files:.2f}x)",
                    flush=True,
                )
    md = table(
        rows,
        [
            "api",
            "processes",
            "fsync",
            "records_per_process",
            "files_writes_per_s",
            "segments_writes_per_s",
            "segments_vs_files",
        ],
        f"Cache writes/s, one file per entry vs segments (median of {args.rounds}, alternating)",
    )
    result = {
        "settings": {"records": args.records, "rounds": args.rounds, "group": GROUP, "quick": args.quick},
        "rows": rows,
        "markdown": md,
    }
    write_json("cache_write", result, args.out)
    return result


if __name__ == "__main__":
    main()
