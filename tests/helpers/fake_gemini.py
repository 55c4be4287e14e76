"""The fake LLM server as pytest fixtures (one server per module, reset per test, fake keys set) and a
12-pair dataset small enough to read every request of: shared by the tests of thinking and of paid answers."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import pytest

from judgebench.data.datasets import Dataset
from judgebench.testing.fake_app import FakeConfig
from judgebench.testing.fake_process import FakeLLMServer


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer() as srv:
        yield srv


@pytest.fixture
def srv(server, monkeypatch):
    server.configure(**asdict(FakeConfig()))
    server.reset()
    monkeypatch.setenv("GEMINI_API_KEY", "fake-gemini-key")
    monkeypatch.setenv("OPENAI_API_KEY", "fake-openai-key")
    return server


@pytest.fixture
def small() -> Dataset:
    queries = {f"q{i}": f"question {i}" for i in range(2)}
    docs = {f"d{i}": f"passage {i} about zebra number {i}. It is short." for i in range(6)}
    pool = pd.DataFrame(
        [(q, f"d{j}", 6.0 - j, j + 1) for q in queries for j in range(6)],
        columns=["query_id", "doc_id", "score", "rank"],
    )
    qrels = pool[["query_id", "doc_id"]].assign(relevance=[j % 4 for j in range(len(pool))])
    return Dataset("small", queries, qrels, docs, pool)
