"""The call cache's per-job paths (issue 46): keys from a shared prefix, envelopes made per group, lookups of many
keys at once, and the writability probe. Each must give exactly what the one-at-a-time path gives: the same keys
(old caches stay readable), the same stored bytes (readers check them), the same records, hits and misses."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path

import pytest

from judgebench.cache.keys import call_key, canon, envelope_bytes, envelopes, key_maker
from judgebench.cache.store import CallCache
from judgebench.llm.local.models import ModelSpec, transformers_key, transformers_key_maker

PROMPTS = ["", "plain", 'quotes " and \\ back', "tab\tnew\nline\x00nul", "ünïcödé ✓ 𝄞", "{query} {passage}", "a" * 5000]


def _reference_key(**parts) -> str:
    """call_key's definition written out: sha256 of sorted, compact, UTF-8 JSON."""
    text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("varying", ["prompt", "a", "zzz"])  # sorts first, in the middle, last
def test_key_maker_gives_call_key_for_every_value(varying):
    fixed = {"backend": "transformers", "model": "m", "params": {"token": "<x>", "n": [1, 2.5, None]}, "system": None}
    make = key_maker(varying, **fixed)
    for v in [*PROMPTS, 3, 2.5, None, ["l", 1], {"b": 1, "a": "ü"}]:
        assert make(v) == call_key(**fixed, **{varying: v}) == _reference_key(**fixed, **{varying: v})
    with pytest.raises(TypeError):
        key_maker("model", **fixed)


def test_transformers_key_maker_keeps_the_keys_of_old_caches():
    spec = ModelSpec(model="some/model", dtype="float32")

    def old(p):
        return _reference_key(
            backend="transformers",
            model="some/model",
            method="rankt5",
            prompt_version="rankt5@1",
            prompt=p,
            params={"token": "<extra_id_10>"},
            dtype="float32",
            device="cpu",
        )

    make = transformers_key_maker(spec, "rankt5", "rankt5@1", token="<extra_id_10>")
    for p in PROMPTS:
        assert make(p) == transformers_key(spec, "rankt5", "rankt5@1", p, token="<extra_id_10>") == old(p)


RECORDS = [
    {"score": -1.25},
    {"score": 1e-300, "n": 10**30, "ok": True, "none": None, "neg0": -0.0, "text": 'ü\n"✓'},
    {"nested": {"b": [1, {"c": 2}], "a": []}, "nan": math.nan, "inf": -math.inf},
    {1: "a", 10: "b", 2: "c"},  # int keys become strings and sort as such ("10" < "2"): the round trip is needed
    {"tuple": (1, 2, ("x",)), "deep": {3: [4]}},
    {"sub": type("F", (float,), {})(0.1)},  # a float subclass: not plain, still the same text
]


@pytest.mark.parametrize("meta", [None, {}, {"backend": "transformers", "model": "m", "dtype": "float32"}, {5: "x"}])
def test_envelopes_are_byte_for_byte_envelope_bytes(meta):
    keys = [call_key(i=i) for i in range(len(RECORDS))]
    items = [(k, r, meta) for k, r in zip(keys, RECORDS)]
    got = envelopes(items, 1733390000.123456)
    assert got == [envelope_bytes(k, r, m, 1733390000.123456)[1] for k, r, m in items]


def test_put_many_reads_back_through_both_layouts(tmp_path):
    for layout in ("segments", "files"):
        cache = CallCache(tmp_path / layout, layout=layout)
        keys = [call_key(layout=layout, i=i) for i in range(len(RECORDS))]
        cache.put_many([(k, r, {"m": 1}) for k, r in zip(keys, RECORDS)])
        fresh = CallCache(tmp_path / layout)  # a reader that parses and checks what was written
        for k, r in zip(keys, RECORDS):  # as JSON text: NaN != NaN
            assert canon(fresh.get(k)) == canon(envelope_bytes(k, r, None, 0.0)[0]["record"])
        assert fresh.corrupt_seen == 0 and all(fresh.get_meta(k) == {"m": 1} for k in keys)
        with pytest.raises(ValueError, match="not a cache key"):
            cache.put_many([(keys[0], {}, None), ("NOT-A-KEY", {}, None)])


def _mixed_cache(tmp_path: Path) -> tuple[CallCache, list[str], list[str]]:
    """Records in the segments layout and in entry files, keys of neither, and one corrupt entry file."""
    cache = CallCache(tmp_path / "calls", layout="segments")
    seg_keys = [call_key(kind="seg", i=i) for i in range(40)]
    cache.put_many([(k, {"i": i}, None) for i, k in enumerate(seg_keys)])
    files = CallCache(tmp_path / "calls", layout="files")
    file_keys = [call_key(kind="file", i=i) for i in range(40)]
    files.put_many([(k, {"f": i}, None) for i, k in enumerate(file_keys)])
    files.path_for(file_keys[3]).write_bytes(b'{"payload": truncated')
    missing = [call_key(kind="none", i=i) for i in range(200)]
    return cache, seg_keys + file_keys, missing


def test_get_many_equals_get_one_by_one(tmp_path, caplog):
    _, present, missing = _mixed_cache(tmp_path)
    asked = [*missing[:100], *present, *missing[100:], present[0]]  # a repeat is looked up once
    one = CallCache(tmp_path / "calls")
    with caplog.at_level(logging.WARNING):
        expected = {k: r for k in dict.fromkeys(asked) if (r := one.get(k)) is not None}
    bulk = CallCache(tmp_path / "calls")
    with caplog.at_level(logging.WARNING):
        got = bulk.get_many(iter(asked))
    assert got == expected and len(got) == 79  # 40 + 40, less the corrupt one
    assert got[present[0]] == {"i": 0} and got[present[45]] == {"f": 5}
    assert (bulk.hits, bulk.misses, bulk.corrupt_seen) == (one.hits, one.misses, one.corrupt_seen) == (79, 201, 1)
    assert sum("corrupt cache entry" in r.message for r in caplog.records) == 2  # once per reader


def test_get_many_sees_another_writers_records_after_a_rescan(tmp_path, monkeypatch):
    reader = CallCache(tmp_path / "calls")
    keys = [call_key(i=i) for i in range(5)]
    assert reader.get_many(keys) == {}
    CallCache(tmp_path / "calls").put_many([(k, {"i": i}, None) for i, k in enumerate(keys)])  # another process
    monkeypatch.setattr(reader.segments, "refreshed_at", float("-inf"))  # REFRESH_S has passed
    assert reader.get_many(keys) == {k: {"i": i} for i, k in enumerate(keys)}
    with pytest.raises(ValueError, match="not a cache key"):
        reader.get_many(["nope"])


def test_get_many_on_a_segments_cache_opens_no_entry_file(tmp_path, monkeypatch):
    """No shard folder exists: a miss costs no open (the one-at-a-time path tried one per key)."""
    cache = CallCache(tmp_path / "calls")
    cache.put_many([(call_key(i=0), {"i": 0}, None)])
    opened = []
    monkeypatch.setattr(Path, "read_bytes", lambda self: opened.append(self) or b"")
    assert cache.get_many([call_key(i=i) for i in range(50)]) == {call_key(i=0): {"i": 0}}
    assert opened == []


@pytest.mark.parametrize("fsync", [False, True])
def test_writability_probe_fsyncs_only_a_cache_that_fsyncs(tmp_path, monkeypatch, fsync):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real(fd))
    cache = CallCache(tmp_path / "calls", fsync=fsync)
    cache.check_writable([call_key(i=1)])
    assert len(synced) == (2 if fsync else 0)  # the root and segments/
    assert sorted(p.name for p in (tmp_path / "calls").iterdir()) == ["segments"]  # no probe left behind
