"""LLMJudge side by side with a bare AsyncOpenAI loop and with UMBRELA, same pairs, same fake server, one run.

(a) Bare client: ``openai.AsyncOpenAI`` + ``asyncio.Semaphore(c)`` + ``gather``, no cache, no retries, no
    parsing: the ceiling the client library allows on this machine, on each of the SDK's HTTP clients
    (--transports: aiohttp, httpx). Runs alternate bare / LLMJudge and the median of --repeats runs is reported,
    because a shared 2-core machine is noisy. LLMJudge runs on every cache layout in --layouts and every
    transport in each round; each is divided by the bare loop on each transport, at the same concurrency.
(b) UMBRELA 0.0.7 (PyPI; synchronous, one request at a time) installed into its own venv, fed the same
    prompt template (UMBRELA's zero-shot "bing" prompt, which judgebench ships) and the same pairs. Its newer
    async judge (GitHub source only, Python >= 3.12) is skipped when no newer PyPI release exists.

    python -m benchmarks.versus [--quick] [--pairs 2000] [--umbrela-pairs 300] [--repeats 3] [--layouts default
    files segments] [--transports aiohttp httpx]
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import MODEL, bound_per_s, parser, synthetic_dataset, table, write_json
from benchmarks.throughput import judge_pairs

UMBRELA_VERSION = "0.0.7"
UMBRELA_VENV = Path(os.environ.get("UMBRELA_VENV", "/tmp/umbrela-venv"))


async def _bare(
    base_url: str, prompts: list[str], concurrency: int, system: str | None, transport: str
) -> tuple[float, float]:
    import openai

    from judgebench.llm.remote.http_transport import openai_http_client

    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key="sk-dummy-for-the-fake-server",
        max_retries=0,
        http_client=openai_http_client(transport),
    )
    sem = asyncio.Semaphore(concurrency)
    messages_head = [{"role": "system", "content": system}] if system else []

    async def one(prompt: str) -> str:
        async with sem:
            resp = await client.chat.completions.create(
                model=MODEL,
                messages=messages_head + [{"role": "user", "content": prompt}],
                temperature=0.0,
                top_p=1.0,
                max_tokens=64,
                frequency_penalty=0.0,
            )
            return resp.choices[0].message.content or ""

    started, cpu = time.perf_counter(), time.process_time()
    answers = await asyncio.gather(*(one(p) for p in prompts))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    await client.close()
    assert len(answers) == len(prompts)
    return seconds, cpu


def bare_client(
    base_url: str, prompts: list[str], concurrency: int, system: str | None = None, transport: str = "aiohttp"
) -> tuple[float, float]:
    """(wall seconds, client CPU seconds) of the bare loop on the SDK's `transport` (aiohttp or httpx)."""
    return asyncio.run(_bare(base_url, prompts, concurrency, system, transport))


@contextlib.contextmanager
def cache_writes(mode: str):
    """Diagnostic only: "durable" (as shipped), "no-fsync" (entries written, never fsynced), "none" (no cache
    writes at all). Shows what the cache's durability costs LLMJudge's throughput."""
    import judgebench.cache.entry_files as jc
    from judgebench.cache.writer import GroupWriter

    async def no_write(self, key, record, meta=None):
        return None

    saved = (GroupWriter.put, jc.fsync_dir, os.fsync)
    try:
        if mode == "no-fsync":
            jc.fsync_dir = lambda d, os_module=None: None
            os.fsync = lambda fd: None
        elif mode == "none":
            GroupWriter.put = no_write
        yield
    finally:
        GroupWriter.put, jc.fsync_dir, os.fsync = saved


@contextlib.contextmanager
def cache_layout(layout: str):
    """The layout a fresh cache is written in (JUDGEBENCH_CACHE_LAYOUT) for the judge runs inside; "default":
    whatever the cache picks for a new root."""
    saved = os.environ.get("JUDGEBENCH_CACHE_LAYOUT")
    os.environ.pop("JUDGEBENCH_CACHE_LAYOUT", None)
    if layout != "default":
        os.environ["JUDGEBENCH_CACHE_LAYOUT"] = layout
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("JUDGEBENCH_CACHE_LAYOUT", None)
        else:
            os.environ["JUDGEBENCH_CACHE_LAYOUT"] = saved


def render_prompts(dataset, pairs) -> list[str]:
    from judgebench.llm.prompts import load_prompt

    template = load_prompt("umbrela_bing")
    return [
        template.render(query=dataset.queries[q], passage=dataset.corpus[d])
        for q, d in zip(pairs["query_id"], pairs["doc_id"])
    ]


# ------------------------------------------------------------------------------------------- UMBRELA


def _pip(venv: Path, *args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", *args], capture_output=True, text=True, timeout=timeout
    )


def ensure_umbrela_venv(venv: Path = UMBRELA_VENV) -> tuple[Path | None, str]:
    """A venv with umbrela==0.0.7 (--no-deps: its torch/pyserini/fschat stack is not on its judging path) and the
    same openai version as ours. Reused when present. Returns (python, message); python is None when it failed."""
    from importlib.metadata import version

    py = venv / "bin" / "python"
    openai_version = version("openai")
    check = (
        f"import importlib.metadata as m; assert m.version('umbrela') == '{UMBRELA_VERSION}'; assert "
        f"m.version('openai') == '{openai_version}'; import pkg_resources"
    )
    if py.exists() and subprocess.run([str(py), "-c", check], capture_output=True).returncode == 0:
        return py, f"reused {venv}"
    try:
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run(
            [getattr(sys, "_base_executable", None) or "python3", "-m", "venv", str(venv)],
            check=True,
            capture_output=True,
            timeout=300,
        )
        for args in (
            ["install", "-q", "--no-deps", f"umbrela=={UMBRELA_VERSION}"],
            ["install", "-q", f"openai=={openai_version}", "tqdm", "setuptools<81"],
        ):  # 0.0.7 imports pkg_resources
            done = _pip(venv, *args)
            if done.returncode != 0:
                return None, f"pip {' '.join(args)} failed: {done.stderr.strip().splitlines()[-1:]}"
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"could not create {venv}: {e}"
    if subprocess.run([str(py), "-c", check], capture_output=True).returncode != 0:
        return None, "umbrela venv created but the import check failed"
    return py, f"installed umbrela=={UMBRELA_VERSION} (--no-deps) + openai=={openai_version} into {venv}"


def newest_umbrela_on_pypi(py: Path | None) -> str | None:
    if py is None:
        return None
    done = subprocess.run(
        [str(py), "-m", "pip", "index", "versions", "umbrela"], capture_output=True, text=True, timeout=120
    )
    m = re.search(r"Available versions:\s*([^\n]+)", done.stdout)
    return m.group(1).split(",")[0].strip() if m else None


def run_umbrela(py: Path, base_url: str, dataset, pairs) -> dict:
    from judgebench.judges.parsing import parse_label
    from judgebench.llm.prompts import PACKAGED

    queries = []
    for q, group in pairs.groupby("query_id", sort=False):
        queries.append({"query": dataset.queries[q], "passages": [dataset.corpus[d] for d in group["doc_id"]]})
    with tempfile.TemporaryDirectory(prefix="jb-umbrela-") as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(
            json.dumps({"prompt_file": str(PACKAGED / "umbrela_bing.txt"), "model": MODEL, "queries": queries})
        )
        env = {
            **os.environ,
            "OPEN_AI_API_KEY": "sk-dummy-for-the-fake-server",
            "AZURE_OPENAI_API_VERSION": "",
            "AZURE_OPENAI_API_BASE": "",
            "DEPLOYMENT_NAME": MODEL,
            "OPENAI_BASE_URL": base_url,
        }
        started = time.perf_counter()
        done = subprocess.run(
            [str(py), str(Path(__file__).with_name("_umbrela_runner.py")), str(src), str(dst)],
            env=env,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        process_seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"UMBRELA runner failed: {done.stderr[-2000:]}")
        res = json.loads(dst.read_text())
    stated = [parse_label(j["prediction"]) for j in res["judgments"]]
    correct = sum(1 for j, s in zip(res["judgments"], stated) if s is not None and j["judgment"] == s)
    return {
        "version": res["version"],
        "pairs": len(res["judgments"]),
        "seconds": res["seconds"],
        "process_seconds": process_seconds,
        # its parser wants '"final score": N' (JSON); an answer it cannot parse silently becomes label 0
        "labels_parsed": len(res["judgments"]) - res["invalid_lines"],
        "labels_equal_to_stated_score": correct,
        "answers_stating_a_score": sum(s is not None for s in stated),
        "invalid_response_prints": res["invalid_lines"],
        "sample_answer": res["judgments"][0]["prediction"] if res["judgments"] else None,
        "sample_label": res["judgments"][0]["judgment"] if res["judgments"] else None,
    }


# ------------------------------------------------------------------------------------------- main


def _median_rate(n: int, runs: list[tuple[float, float]]) -> tuple[float, float]:
    """(pairs/s of the median wall time, median client CPU ms per pair)."""
    return n / statistics.median(s for s, _ in runs), 1000 * statistics.median(c for _, c in runs) / n


def main(argv: list[str] | None = None) -> dict:
    ap = parser(__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2000)
    ap.add_argument("--umbrela-pairs", type=int, default=300, help="UMBRELA 0.0.7 is sequential: a subset of the pairs")
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[32, 64])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--skip-umbrela", action="store_true")
    ap.add_argument(
        "--layouts",
        nargs="+",
        default=["default"],
        choices=["default", "files", "segments"],
        help="cache layouts LLMJudge writes (default: what a new cache gets); the first is the headline",
    )
    ap.add_argument(
        "--transports",
        nargs="+",
        default=["aiohttp", "httpx"],
        choices=["aiohttp", "httpx"],
        help="the SDK's HTTP clients; the bare loop and LLMJudge run on each; the first is the headline",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.pairs, args.umbrela_pairs, args.latency, args.concurrency, args.repeats = 60, 10, 0.01, [8], 1
    os.environ.setdefault(
        "OPENAI_API_KEY", "sk-dummy-for-the-fake-server"
    )  # not a word of any path: secrets are scrubbed from text

    from judgebench.testing.fake_process import FakeLLMServer

    dataset = synthetic_dataset(args.pairs)
    pairs = dataset.label_set()[["query_id", "doc_id"]]
    prompts = render_prompts(dataset, pairs)
    n = len(pairs)
    head_t, head_l = args.transports[0], args.layouts[0]
    ceiling_rows, umbrela_rows, notes = [], [], []
    result: dict = {
        "settings": {
            "pairs": n,
            "umbrela_pairs": args.umbrela_pairs,
            "latency_s": args.latency,
            "concurrency": args.concurrency,
            "repeats": args.repeats,
            "quick": args.quick,
            "layouts": args.layouts,
            "transports": args.transports,
        }
    }
    # LLMJudge runs: every layout on the headline transport, every other transport on the headline layout
    judge_runs = [(head_t, layout) for layout in args.layouts] + [(t, head_l) for t in args.transports[1:]]
    with FakeLLMServer(latency_s=args.latency) as srv:
        url = srv.openai_base_url
        for t in args.transports:
            bare_client(url, prompts[:20], 4, transport=t)  # warm-up: imports, first connections
        # (a) the bare-client ceiling vs LLMJudge, alternating, median of repeats
        for c in args.concurrency:
            bare = {t: [] for t in args.transports}
            judged: dict = {run: [] for run in judge_runs}
            clients = set()
            for _ in range(args.repeats):
                for t in args.transports:
                    srv.reset()
                    bare[t].append(bare_client(url, prompts, c, transport=t))
                for t, layout in judge_runs:
                    srv.reset()
                    with cache_layout(layout):
                        m = judge_pairs(url, dataset, pairs, c, None, http_transport=t)
                    assert m["labels"] == n and srv.stats()["requests"] == n, m
                    judged[(t, layout)].append((m["seconds"], m["cpu_seconds"]))
                    clients.add((t, m["http_client"]))
            bare_rate = {t: _median_rate(n, runs) for t, runs in bare.items()}
            judge_rate = {run: _median_rate(n, runs) for run, runs in judged.items()}
            head_bare, head_judge = bare_rate[head_t][0], judge_rate[(head_t, head_l)][0]
            bound = bound_per_s(c, args.latency, None)
            diag = {}
            for mode in ("no-fsync", "none"):  # one run each: what the durable cache writes cost
                srv.reset()
                with cache_writes(mode), cache_layout(head_l):
                    diag[mode] = n / judge_pairs(url, dataset, pairs, c, None, http_transport=head_t)["seconds"]
            row = {
                "concurrency": c,
                "pairs": n,
                "transport": head_t,
                "layout": head_l,
                "server_latency_ms": round(srv.stats()["config"]["latency_s"] * 1000, 3),  # what the server applied
                "bare_client_per_s": round(head_bare, 1),
                "llmjudge_per_s": round(head_judge, 1),
                "llmjudge_vs_bare": round(head_judge / head_bare, 3),
                "bound_per_s": round(bound, 1),
                "bare_efficiency": round(head_bare / bound, 3),
                "llmjudge_efficiency": round(head_judge / bound, 3),
                "llmjudge_no_fsync_per_s": round(diag["no-fsync"], 1),
                "llmjudge_no_cache_writes_per_s": round(diag["none"], 1),
                "bare_runs_s": [round(s, 3) for s, _ in bare[head_t]],
                "llmjudge_runs_s": [round(s, 3) for s, _ in judged[(head_t, head_l)]],
                "http_clients": {t: name for t, name in sorted(clients)},
            }
            for t, (rate, cpu_ms) in bare_rate.items():
                row[f"bare_{t}_per_s"], row[f"bare_{t}_cpu_ms_per_pair"] = round(rate, 1), round(cpu_ms, 2)
                row[f"bare_{t}_runs_s"] = [round(s, 3) for s, _ in bare[t]]
            for (t, layout), (rate, cpu_ms) in judge_rate.items():
                who = f"llmjudge_{t}_{layout}"
                row[f"{who}_per_s"], row[f"{who}_cpu_ms_per_pair"] = round(rate, 1), round(cpu_ms, 2)
                row[f"{who}_runs_s"] = [round(s, 3) for s, _ in judged[(t, layout)]]
                for bt, (brate, _) in bare_rate.items():  # each judge run against the bare loop on each transport
                    row[f"{who}_vs_bare_{bt}"] = round(rate / brate, 3)
            ceiling_rows.append(row)
            per_run = ", ".join(
                f"{t}/{layout} {rate:.1f}/s ("
                + ", ".join(f"{rate / brate:.3f} of bare {bt}" for bt, (brate, _) in bare_rate.items())
                + ")"
                for (t, layout), (rate, _) in judge_rate.items()
            )
            bares = ", ".join(f"{t} {rate:.1f}/s" for t, (rate, _) in bare_rate.items())
            print(f"concurrency {c}: bare {bares}; LLMJudge {per_run} (bound {bound:.0f}/s)", flush=True)
        result["ceiling"] = ceiling_rows

        # (b) UMBRELA, and the shape of its newer async judge; every ratio at equal concurrency, on the same pairs
        sub = pairs.iloc[: args.umbrela_pairs]
        srv.reset()
        jb_sub = judge_pairs(
            url, dataset, sub, 8, None, http_transport=head_t
        )  # its configured default concurrency (8)
        jb_sub_rate = len(sub) / jb_sub["seconds"]
        best_c = max(ceiling_rows, key=lambda r: r["llmjudge_per_s"]) if ceiling_rows else None
        umbrela: dict = {"requested": not args.skip_umbrela}
        ratios = {}
        if args.skip_umbrela:
            notes.append("UMBRELA skipped (--skip-umbrela)")
        else:
            py, msg = ensure_umbrela_venv()
            umbrela["setup"] = msg
            print(f"UMBRELA setup: {msg}", flush=True)
            if py is None:
                notes.append(f"UMBRELA {UMBRELA_VERSION} skipped: {msg}")
            else:
                srv.reset()
                u = run_umbrela(py, url, dataset, sub)
                u["server_requests"] = srv.stats()["requests"]
                u["per_s"] = u["pairs"] / u["seconds"]
                umbrela["v0.0.7"] = u
                srv.reset()
                jb_c1 = judge_pairs(
                    url, dataset, sub, 1, None, http_transport=head_t
                )  # UMBRELA 0.0.7 sends one at a time
                ratios["llmjudge_vs_umbrela_0.0.7_c1"] = round(u["seconds"] / jb_c1["seconds"], 2)
                umbrela_rows.append(
                    {
                        "judge": f"UMBRELA {u['version']} (sync)",
                        "concurrency": 1,
                        "pairs": u["pairs"],
                        "per_s": round(u["per_s"], 1),
                        "labels_parsed_correctly": f"{u['labels_parsed']}/{u['pairs']} parsed; the rest became 0 "
                        f"({u['labels_equal_to_stated_score']} right by chance)",
                    }
                )
                umbrela_rows.append(
                    {
                        "judge": "judgebench LLMJudge",
                        "concurrency": 1,
                        "pairs": len(sub),
                        "per_s": round(len(sub) / jb_c1["seconds"], 1),
                        "labels_parsed_correctly": f"{jb_c1['labels']}/{len(sub)}",
                    }
                )
            newest = newest_umbrela_on_pypi(py)
            umbrela["newest_on_pypi"] = newest
            if newest in (None, UMBRELA_VERSION):
                umbrela["async"] = (
                    "skipped: the newest UMBRELA on PyPI is %s (synchronous); the async judge "
                    "(GPTJudge(max_concurrency=8), Python >= 3.12) exists only in the castorini/umbrela "
                    "GitHub source, which this machine cannot reach" % (newest or "unknown")
                )
            else:
                umbrela["async"] = f"skipped: PyPI has umbrela {newest}; installing it is not automated here yet"
            notes.append(f"UMBRELA async judge {umbrela['async']}")
            print(f"UMBRELA async judge {umbrela['async']}", flush=True)
        # stand-in for UMBRELA's newer judge: the same shape (AsyncOpenAI, gather under Semaphore(8), a system
        # message), written here, not its code; on the same pairs and transport as LLMJudge at concurrency 8
        srv.reset()
        shaped_s, _ = bare_client(
            url, render_prompts(dataset, sub), 8, system="You are a helpful assistant.", transport=head_t
        )
        shaped_rate = len(sub) / shaped_s
        umbrela_rows.append(
            {
                "judge": "AsyncOpenAI + Semaphore(8) (shape of UMBRELA's async judge; stand-in)",
                "concurrency": 8,
                "pairs": len(sub),
                "per_s": round(shaped_rate, 1),
                "labels_parsed_correctly": "n/a",
            }
        )
        umbrela_rows.append(
            {
                "judge": "judgebench LLMJudge",
                "concurrency": 8,
                "pairs": len(sub),
                "per_s": round(jb_sub_rate, 1),
                "labels_parsed_correctly": f"{jb_sub['labels']}/{len(sub)}",
            }
        )
        ratios["llmjudge_vs_async_shaped_c8"] = round(jb_sub_rate / shaped_rate, 2)
        if best_c:  # context, not a ratio: what concurrency adds
            umbrela_rows.append(
                {
                    "judge": "judgebench LLMJudge",
                    "concurrency": best_c["concurrency"],
                    "pairs": n,
                    "per_s": best_c["llmjudge_per_s"],
                    "labels_parsed_correctly": f"{n}/{n}",
                }
            )
        umbrela["ratios"] = ratios
        result["umbrela"] = umbrela
    vs_cols = [f"llmjudge_{t}_{layout}_vs_bare_{bt}" for t, layout in judge_runs for bt in args.transports]
    md_a = table(
        ceiling_rows,
        [
            "concurrency",
            "pairs",
            "bare_client_per_s",
            "llmjudge_per_s",
            "llmjudge_vs_bare",
            *vs_cols,
            *[f"bare_{t}_cpu_ms_per_pair" for t in args.transports],
            *[f"llmjudge_{t}_{layout}_cpu_ms_per_pair" for t, layout in judge_runs],
            "bound_per_s",
            "llmjudge_no_fsync_per_s",
            "llmjudge_no_cache_writes_per_s",
        ],
        f"(a) LLMJudge ({head_t}, {head_l} layout) vs a bare AsyncOpenAI loop, {round(args.latency * 1000)} ms "
        f"latency (median of {args.repeats})",
    )
    md_b = table(umbrela_rows, ["judge", "concurrency", "pairs", "per_s", "labels_parsed_correctly"], "(b) vs UMBRELA")
    for k, v in ratios.items():
        print(f"{k}: {v}")
    result.update({"umbrela_rows": umbrela_rows, "notes": notes, "markdown": md_a + "\n\n" + md_b})
    write_json("versus", result, args.out)
    return result


if __name__ == "__main__":
    main()
