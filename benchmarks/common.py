"""Shared helpers: arguments, result files, tables, synthetic pairs, the fake server's request stats."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
TREC_DL_DIR = Path(os.environ.get("JUDGEBENCH_TREC_DL_DIR") or REPO.parent / "shared" / "data" / "trec-dl")
MODEL = "gpt-4o-mini"


def parser(description: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--quick", action="store_true", help="a seconds-long smoke version (for the tests)")
    ap.add_argument("--out", type=Path, default=RESULTS, help="folder for <name>.json (default benchmarks/results)")
    return ap


def machine() -> dict[str, Any]:
    def version(pkg: str) -> str | None:
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "openai": version("openai"),
        "judgebench": version("judgebench"),
        "torch": version("torch"),
        "transformers": version("transformers"),
        "load_average_1_5_15": [round(x, 2) for x in os.getloadavg()],  # other work on the machine skews the figures
    }


def write_json(name: str, data: dict[str, Any], out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    payload = {"benchmark": name, "written_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "machine": machine(), **data}
    path.write_text(json.dumps(payload, indent=2, default=str) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")
    return path


def table(rows: list[dict[str, Any]], columns: list[str] | None = None, title: str | None = None) -> str:
    """A GitHub-Markdown table (printed and reused in docs/performance.md)."""
    from tabulate import tabulate

    columns = columns or list(rows[0]) if rows else []
    body = [[r.get(c, "") for c in columns] for r in rows]
    text = tabulate(body, headers=columns, tablefmt="github", floatfmt=".4g")
    if title:
        text = f"### {title}\n\n{text}"
    print("\n" + text)
    return text


def synthetic_dataset(n_pairs: int, docs_per_query: int = 20, name: str = "synthetic"):
    """A Dataset whose label set has exactly n_pairs (query, doc) pairs with distinct, passage-sized prompts."""
    import pandas as pd

    from judgebench.data.datasets import Dataset

    n_queries = -(-n_pairs // docs_per_query)
    words = (
        "river bank interest rate flood plain mortgage sediment loan delta current account erosion "
        "deposit levee yield channel credit basin"
    ).split()
    queries = {
        f"q{i}": f"what is the {words[i % len(words)]} {words[(3 * i) % len(words)]} number {i}"
        for i in range(n_queries)
    }
    rows, corpus = [], {}
    for i in range(n_queries):
        for j in range(docs_per_query):
            d = f"d{i}_{j}"
            body = " ".join(words[(i * 7 + j * 3 + k) % len(words)] for k in range(60))
            corpus[d] = f"Passage {d}. {body}. It was written for query {i}, candidate {j}."
            rows.append((f"q{i}", d, float(docs_per_query - j), j + 1))
    pool = pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"]).iloc[:n_pairs]
    qrels = pool[["query_id", "doc_id"]].assign(relevance=[k % 4 for k in range(len(pool))])
    pool = pool.reset_index(drop=True)
    return Dataset(name, queries, qrels.reset_index(drop=True), corpus, pool)


def server_duplicates(stats: dict[str, Any]) -> dict[str, int]:
    """Requests, distinct prompts and duplicates (requests - distinct prompts) from the fake server's counters."""
    hashes = stats["prompt_sha256"]
    return {
        "requests": stats["requests"],
        "distinct_prompts": len(set(hashes)),
        "duplicates": len(hashes) - len(set(hashes)),
    }


def expected_seconds(n: int, concurrency: int, latency_s: float, rpm: float | None) -> float:
    return n / bound_per_s(concurrency, latency_s, rpm)


def bound_per_s(concurrency: int, latency_s: float, rpm: float | None) -> float:
    """The ideal judgments/s: min(concurrency / latency, rate limit)."""
    b = concurrency / latency_s if latency_s > 0 else float("inf")
    return min(b, rpm / 60) if rpm else b
