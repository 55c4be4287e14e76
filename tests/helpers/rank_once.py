"""Rank once, judge many: the re-ranked depth of the toy pool, the distinct prompts a ranking of it asks (worked out
from the pool, not read from the code under test), and a run's stored ranking read back as bytes."""

from __future__ import annotations

import itertools
import tempfile
from pathlib import Path

from mlflow.tracking import MlflowClient

from judgebench.data.datasets import load_toy

DEPTH = 4  # the re-ranked head of each toy query: 12 queries x 4 passages


def expected_prompts(ranker: str) -> int:
    """Distinct prompts of a ranking of the toy pool's top DEPTH (the call cache scores each once)."""
    toy = load_toy()
    head = toy.pool[toy.pool["rank"] <= DEPTH]
    per_query = [(toy.queries[q], [toy.corpus[d] for d in g["doc_id"]]) for q, g in head.groupby("query_id")]
    if ranker == "rg":
        return len({(q, p) for q, ps in per_query for p in ps})
    return len({(q, a, b) for q, ps in per_query for a, b in itertools.permutations(ps, 2)})


def run_artifact_bytes(client: MlflowClient, run_id: str, name: str = "run.trec") -> bytes:
    with tempfile.TemporaryDirectory() as tmp:
        return Path(client.download_artifacts(run_id, name, tmp)).read_bytes()
