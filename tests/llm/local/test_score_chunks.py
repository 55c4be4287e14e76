"""cached_scores sizes its chunks by how long the last one took (judgebench.llm.local.models.next_chunk): a fast model's
chunks grow (fewer fixed costs: tokenizer calls, cache writes) up to CHUNK_GROWTH times the usual size, a slow
model's stay at it, and a very slow model's shrink to what it scores in SAVE_SECONDS, so a killed job loses at most
about that much work (tests/judges/test_transformers_judge.py kills a real cell)."""

import pytest

from judgebench.cache.store import CallCache
from judgebench.llm.local import models
from judgebench.llm.local.models import CHUNK_GROWTH, CHUNK_SECONDS, SAVE_SECONDS, cached_scores, next_chunk


@pytest.mark.parametrize(
    ("done", "seconds", "want"),
    [
        (256, CHUNK_SECONDS / 2, 512),  # half the target: twice as many
        (256, CHUNK_SECONDS / 100, 256 * CHUNK_GROWTH),  # very fast: capped
        (256, CHUNK_SECONDS * 3, 256),  # slow: not under the usual size while it fits in SAVE_SECONDS
        (256, SAVE_SECONDS * 2, 128),  # very slow: what SAVE_SECONDS holds
        (8, SAVE_SECONDS * 20, 1),  # a prompt takes minutes: one at a time
        (100, CHUNK_SECONDS / 3, 300),  # a short last part: rate from what it did
        (256, 0.0, 256 * CHUNK_GROWTH),  # a clock that did not move
    ],
)
def test_next_chunk(done, seconds, want):
    assert next_chunk(256, done, seconds) == want


def run(tmp_path, monkeypatch, seconds_per_item: float, n: int = 3000, first: int | None = None):
    """cached_scores over n items with a clock that advances seconds_per_item for each item scored."""
    now = [0.0]
    monkeypatch.setattr(models, "clock", lambda: now[0])
    sizes: list[int] = []

    def score(payloads):
        sizes.append(len(payloads))
        now[0] += seconds_per_item * len(payloads)
        return [{"score": float(p)} for p in payloads]

    cache = CallCache(tmp_path / "calls")
    items = [(f"{i:064x}", i) for i in range(n)]
    records, scored = cached_scores(cache, items, score, meta={"m": 1}, chunk=256, first=first, progress=False)
    assert scored == n and [records[k]["score"] for k, _ in items] == [float(i) for i in range(n)]
    again = CallCache(tmp_path / "calls").get_many(k for k, _ in items)  # every chunk was written
    assert len(again) == n
    return sizes


def test_a_fast_model_gets_larger_chunks(tmp_path, monkeypatch):
    # 256 items in 0.256 s: the next chunk would take 2 s at 2000 items, capped at 4 x 256
    assert run(tmp_path, monkeypatch, 0.001) == [256, 1024, 1024, 696]


def test_a_slow_model_keeps_the_first_size(tmp_path, monkeypatch):
    assert run(tmp_path, monkeypatch, 0.05, n=1000) == [256, 256, 256, 232]


def test_a_model_that_slows_down_gets_smaller_chunks_again(tmp_path, monkeypatch):
    now = [0.0]
    monkeypatch.setattr(models, "clock", lambda: now[0])
    sizes: list[int] = []

    def score(payloads):
        sizes.append(len(payloads))
        now[0] += (0.001 if len(sizes) == 1 else 0.004) * len(payloads)  # 4x slower after the first chunk
        return [{"score": 0.0} for _ in payloads]

    cached_scores(
        CallCache(tmp_path / "c"), [(f"{i:064x}", i) for i in range(2000)], score, meta={}, chunk=256, progress=False
    )
    assert sizes == [256, 1024, 500, 220]  # 1024 in 4.096 s -> 500 (2 s); 500 in 2 s -> 500; 220 left


def test_a_very_slow_model_is_stored_every_save_seconds(tmp_path, monkeypatch):
    """2 s a prompt (a small model on a loaded CPU): a first chunk of one batch (8), then what fits in SAVE_SECONDS."""
    per = int(SAVE_SECONDS / 2)
    assert run(tmp_path, monkeypatch, 2.0, n=60, first=8) == [8, per, per, per, 60 - 8 - 3 * per]


def test_a_fast_model_grows_from_a_small_first_chunk(tmp_path, monkeypatch):
    assert run(tmp_path, monkeypatch, 0.001, n=2000, first=8) == [8, 1024, 968]
