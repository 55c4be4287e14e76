"""Opening a segments cache: time and peak memory of a fresh process, before and after ``cache compact``.

For each size the cache is built by a direct writer (judge-sized envelopes framed and appended to 8 segments in
large writes, as 8 finished jobs leave them; no judge runs), then a new interpreter opens it and looks one
stored key up; it reports the seconds from constructing ``CallCache`` to the answer and its peak RSS
(``VmHWM``), with the peak of the same interpreter before opening (its imports). Then the cache is compacted (timed) and
measured again the same way; compaction runs in a new interpreter too, for its own time and peak RSS.

    python -m benchmarks.cache_open [--quick] [--sizes 10000 100000 1000000]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, parser, table, write_json

SEGMENTS = 8
CHUNK = 5000
TARGET_S, TARGET_MB = 2.0, 300.0

# peak RSS is VmHWM (per address space, so it starts afresh at exec), not ru_maxrss, which Linux carries over
# from the forking parent: a benchmark process holding a large cache would inflate the child's figure
_PROBE = r"""
import json, sys, time
from judgebench.cache.store import CallCache
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
before = hwm()
t = time.perf_counter()
c = CallCache(sys.argv[1], create=False)
rec = c.get(sys.argv[2])
s = time.perf_counter() - t
print(json.dumps({"seconds": s, "found": rec is not None and rec.get("parsed") == int(sys.argv[3]),
                  "rss_before_mb": before, "peak_rss_mb": hwm()}))
"""


_COMPACT = r"""
import json, sys, time
from judgebench.cache.compact import compact
from judgebench.cache.store import CallCache
t = time.perf_counter()
r = compact(CallCache(sys.argv[1], create=False))
s = time.perf_counter() - t
hwm = next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmHWM:"))
print(json.dumps({"seconds": s, "records": r.records, "kept": len(r.kept), "peak_rss_mb": hwm}))
"""


def key_of(i: int) -> str:
    from judgebench.cache.keys import call_key

    return call_key(bench="cache_open", i=i)


def build(root: Path, n: int) -> None:
    """n judge answers in SEGMENTS segment files, written through the segment writer in chunks."""
    from judgebench.cache import segments as seg
    from judgebench.cache.keys import envelope_bytes

    meta = {"backend": "openai", "model": "gpt-4o-mini", "prompt_version": "umbrela_bing@bench"}
    per = -(-n // SEGMENTS)
    for s in range(SEGMENTS):
        writer = seg.SegmentWriter(root / seg.DIRNAME)
        frames = []
        for i in range(s * per, min(n, (s + 1) * per)):
            rec = {
                "text": f"##final score: {i % 4}\n" + "reasoning " * 28,
                "parsed": i % 4,
                "input_tokens": 600,
                "output_tokens": 40,
                "latency_s": 0.05,
                "attempts": 1,
            }
            key = key_of(i)
            frames.append(seg.frame(key, envelope_bytes(key, rec, meta, 1.0)[1]))
            if len(frames) >= CHUNK:
                writer.append(frames)
                frames = []
        if frames:
            writer.append(frames)
        writer.close()


def fresh(code: str, *args: str) -> dict:
    """Run ``code`` in a new interpreter; the JSON it prints last."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"the measuring interpreter failed on {args[0]}:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def probe(root: Path, i: int) -> dict:
    """Open ``root`` in a new interpreter and look key i up."""
    return fresh(_PROBE, str(root), key_of(i), str(i % 4))


def measure(n: int, workdir: Path) -> list[dict]:
    root = workdir / f"calls-{n}"
    t = time.perf_counter()
    build(root, n)
    built_s = time.perf_counter() - t
    size_mb = sum(p.stat().st_size for p in (root / "segments").iterdir()) / 2**20
    rows = []
    before = probe(root, n // 2)
    report = fresh(_COMPACT, str(root))  # compaction in a new interpreter too: its own peak RSS
    after = probe(root, n // 2)
    assert report["records"] == n and report["kept"] == 0, report
    for state, m in (("segments", before), ("compacted", after)):
        rows.append(
            {
                "entries": n,
                "state": state,
                "open_s": round(m["seconds"], 6),
                "peak_rss_mb": round(m["peak_rss_mb"], 1),
                "interpreter_rss_mb": round(m["rss_before_mb"], 1),
                "found": m["found"],
                "disk_mb": round(size_mb, 1),
                "build_s": round(built_s, 1),
                "compact_s": round(report["seconds"], 2) if state == "compacted" else None,
                "compact_peak_rss_mb": round(report["peak_rss_mb"], 1) if state == "compacted" else None,
                "meets_targets": m["seconds"] <= TARGET_S and m["peak_rss_mb"] <= TARGET_MB,
            }
        )
        print(
            f"{n:>8} {state:>9}: open {m['seconds']:.3f} s, peak RSS {m['peak_rss_mb']:.0f} MB "
            f"(interpreter {m['rss_before_mb']:.0f} MB)",
            flush=True,
        )
    shutil.rmtree(root, ignore_errors=True)
    return rows


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--workdir", type=Path, default=None, help="where the caches are built (default: a temp folder)")
    args = ap.parse_args(argv)
    if args.quick:
        args.sizes = [200, 2000]
    workdir = Path(tempfile.mkdtemp(prefix="jb-cache-open-", dir=args.workdir))
    try:
        rows = [row for n in args.sizes for row in measure(n, workdir)]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    cols = [
        "entries",
        "state",
        "open_s",
        "peak_rss_mb",
        "interpreter_rss_mb",
        "found",
        "disk_mb",
        "compact_s",
        "compact_peak_rss_mb",
        "meets_targets",
    ]
    md = table(
        rows,
        cols,
        f"Opening a segments cache in a fresh process and looking one key up (targets: <= {TARGET_S:g} s, "
        f"<= {TARGET_MB:g} MB peak RSS)",
    )
    result = {
        "settings": {
            "sizes": args.sizes,
            "segments": SEGMENTS,
            "quick": args.quick,
            "targets": {"open_s": TARGET_S, "peak_rss_mb": TARGET_MB},
        },
        "rows": rows,
        "markdown": md,
    }
    write_json("cache_open", result, args.out)
    return result


if __name__ == "__main__":
    main()
