"""Tests for the persistent LLM call cache in its one-file-per-entry layout (still selectable, always read):
integrity, concurrency, crash safety, export/import, CLI. The default layout, segments, has these guarantees
tested in cache/test_segments.py and e2e/test_reliability.py."""

from __future__ import annotations

import errno
import gzip
import hashlib
import json
import logging
import multiprocessing as mp
import os
import signal
import time
from pathlib import Path

import pytest

from judgebench.cache import maintenance
from judgebench.cache import store as cache_mod
from judgebench.cache.cli import main
from judgebench.cache.keys import call_key
from judgebench.cache.store import CacheStats, CallCache
from judgebench.exceptions import CacheError

PARTS = dict(
    backend="openai",
    model="gpt-4o-mini",
    template_version="umbrela-v1",
    prompt="Query: q\nPassage: p\nScore 0-3:",
    params={"temperature": 0.0, "max_tokens": 8, "seed": 1},
)


def _key(**over) -> str:
    return call_key(**{**PARTS, **over})


def _rec(i: int = 0) -> dict:
    return {"output": f"score {i}", "usage": {"in": 12, "out": 3}, "latency_s": 0.25, "i": i}


@pytest.fixture(autouse=True)
def _files_layout(monkeypatch):
    """Every cache in this file (forked writers included) is written one file per entry."""
    monkeypatch.setenv("JUDGEBENCH_CACHE_LAYOUT", "files")


def test_a_new_cache_is_written_in_segments_unless_told_files(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGEBENCH_CACHE_LAYOUT")
    c = CallCache(tmp_path / "c")
    c.put(_key(), _rec(1), meta=PARTS)
    assert c.layout == "segments" and not list((tmp_path / "c").glob("??/*.json"))
    assert len(list((tmp_path / "c" / "segments").glob("*.seg"))) == 1
    assert CallCache(tmp_path / "c", layout="files").layout == "files"


# -- keys ------------------------------------------------------------------------


def test_call_key_is_stable_canonical_sha256():
    # the canonical JSON written out by hand (keys sorted, no spaces, UTF-8 kept), and its digest pinned: a key that
    # changed between versions would orphan every cached answer
    canonical = (
        '{"backend":"openai","model":"gpt-4o-mini","params":{"max_tokens":8,"seed":1,"temperature":0.0},'
        '"prompt":"Query: q\\nPassage: p\\nScore 0-3:","template_version":"umbrela-v1"}'
    )
    expected = "4949dec5966ddf9b1f296b59f2af6275016aa16a6467c043cc5dba2cadc099fa"
    assert hashlib.sha256(canonical.encode()).hexdigest() == expected
    assert call_key(**PARTS) == expected
    accents = canonical.replace("Query: q\\nPassage: p\\nScore 0-3:", "café ☕")
    assert (
        call_key(**{**PARTS, "prompt": "café ☕"})
        == hashlib.sha256(accents.encode("utf-8")).hexdigest()
        == ("af5b1b1011aa734f627a9556b9f689b1e984b5adae52f774f197522c41d9d4cb")
    )
    # argument and nested dict order do not matter
    reordered = dict(reversed(list(PARTS.items())))
    reordered["params"] = dict(reversed(list(PARTS["params"].items())))
    assert call_key(**reordered) == expected


@pytest.mark.parametrize(
    "over",
    [
        {"backend": "gemini"},
        {"model": "gpt-4o"},
        {"template_version": "umbrela-v2"},
        {"prompt": PARTS["prompt"] + " "},
        {"params": {**PARTS["params"], "temperature": 0.7}},
        {"params": {**PARTS["params"], "seed": 2}},
        {"params": {k: v for k, v in PARTS["params"].items() if k != "seed"}},
        {"extra": None},
    ],
)
def test_call_key_changes_with_any_part(over):
    assert _key(**over) != call_key(**PARTS)


def test_call_key_rejects_non_json():
    with pytest.raises(TypeError):
        call_key(x=object())
    with pytest.raises(ValueError):
        call_key(x=float("nan"))


# -- round trip --------------------------------------------------------------------


def test_round_trip_layout_and_counters(tmp_path):
    c = CallCache(tmp_path / "c")
    k = _key()
    assert c.get(k) is None and k not in c
    c.put(k, _rec(1), meta=PARTS)
    path = tmp_path / "c" / k[:2] / f"{k}.json"
    assert path.is_file() and c.temp_files() == []
    assert c.get(k) == _rec(1) and k in c
    assert (c.hits, c.misses, c.puts) == (1, 1, 1)
    assert c.get_meta(k)["model"] == "gpt-4o-mini"
    # a new instance (new process) sees it
    c2 = CallCache(tmp_path / "c")
    assert c2.get(k) == _rec(1) and list(c2.keys()) == [k]
    assert maintenance.stats(c2) == CacheStats(1, path.stat().st_size, 0, {"openai": 1}, {"gpt-4o-mini": 1})
    with pytest.raises(ValueError):
        c.put("../evil", _rec())


def test_json_normalisation_does_not_look_corrupt(tmp_path):
    """Int dict keys / tuples change under JSON; the checksum is over what a reader parses."""
    c = CallCache(tmp_path)
    k = _key()
    c.put(k, {"logprobs": {2: -0.1, 10: -2.0}, "toks": (1, 2), "inf": float("-inf")})
    assert c.get(k) == {"logprobs": {"2": -0.1, "10": -2.0}, "toks": [1, 2], "inf": float("-inf")}
    assert maintenance.verify(c) == []


# -- corruption ----------------------------------------------------------------------


def _corrupt(path: Path, how: str, other: Path) -> None:
    data = path.read_bytes()
    if how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "bitflip":  # valid JSON, record changed, checksum not updated
        path.write_bytes(data.replace(b"score 0", b"score 3"))
    elif how == "misnamed":  # a valid entry stored under another key's name
        path.write_bytes(other.read_bytes())


@pytest.mark.parametrize("how", ["truncated", "empty", "bitflip", "misnamed"])
def test_corrupt_entry_is_reported_missed_and_verified(tmp_path, caplog, how):
    c = CallCache(tmp_path)
    k, k2 = _key(), _key(model="other")
    c.put(k, _rec(0), meta=PARTS)
    c.put(k2, _rec(2), meta=PARTS)
    path = c.path_for(k)
    _corrupt(path, how, c.path_for(k2))
    with caplog.at_level(logging.WARNING, logger="judgebench.cache"):
        assert c.get(k) is None
        assert c.get(k) is None  # warned once
    warned = [r for r in caplog.records if str(path) in r.getMessage()]
    assert len(warned) == 1
    assert c.corrupt_seen == 1 and c.misses == 2 and k not in c
    assert maintenance.verify(c) == [path]
    s = maintenance.stats(c)
    assert (s.entries, s.corrupt) == (1, 1)
    # recomputation overwrites it
    c.put(k, _rec(0))
    assert c.get(k) == _rec(0) and maintenance.verify(c) == []
    # verify(remove_corrupt=True) deletes corrupt entries
    path.write_bytes(b"")
    assert maintenance.verify(c, remove_corrupt=True) == [path] and not path.exists()
    assert c.get(k2) == _rec(2)


# -- unwritable / full -----------------------------------------------------------------


def test_root_that_cannot_be_created_raises_cache_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(CacheError, match=str(blocker / "cache")) as ei:
        CallCache(blocker / "cache")
    assert "Errno" in str(ei.value)


def test_unwritable_shard_raises_on_put_naming_path(tmp_path):
    c = CallCache(tmp_path)
    k = _key()
    (tmp_path / k[:2]).write_text("not a dir")  # the entry directory cannot be created
    with pytest.raises(CacheError, match=str(c.path_for(k))):
        c.put(k, _rec())
    assert c.get(k) is None


@pytest.mark.parametrize("err", [errno.ENOSPC, errno.EROFS])
def test_full_or_readonly_disk_raises_on_first_write(tmp_path, monkeypatch, err):
    """Root runs tests (chmod does not block) and no small/RO mount is available: inject the errno
    at the syscall the real failure would hit (write for a full disk, open for a read-only mount)."""
    c = CallCache(tmp_path)  # opening a read-only or full cache is fine: reads still work
    k0 = _key(model="old")
    c.put(k0, _rec())
    k = _key()

    def boom(*a, **kw):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(cache_mod.os, "write" if err == errno.ENOSPC else "open", boom)
    with pytest.raises(CacheError) as ei:
        c.put(k, _rec())
    msg = str(ei.value)
    assert str(c.path_for(k)) in msg and os.strerror(err) in msg
    monkeypatch.undo()
    assert c.get(k0) == _rec() and k not in c
    assert c.temp_files() == []  # the failed temp file was removed


# -- export / import ---------------------------------------------------------------------


def _fill(c: CallCache, n: int) -> list[str]:
    keys = []
    for i in range(n):
        meta = {**PARTS, "backend": ["openai", "gemini", "hf"][i % 3], "model": f"m{i % 4}", "prompt": f"p{i}"}
        k = call_key(**meta)
        c.put(k, _rec(i), meta=meta)
        keys.append(k)
    return keys


def test_export_import_round_trip(tmp_path):
    a = CallCache(tmp_path / "a")
    keys = _fill(a, 30)
    f1, f2, f3 = tmp_path / "x1.jsonl.gz", tmp_path / "x2.jsonl.gz", tmp_path / "x3.jsonl.gz"
    assert maintenance.export(a, f1) == 30
    assert maintenance.export(a, f2) == 30
    assert f1.read_bytes() == f2.read_bytes()  # deterministic
    lines = gzip.decompress(f1.read_bytes()).decode().splitlines()
    assert [json.loads(x)["payload"]["key"] for x in lines] == sorted(keys)

    b = CallCache(tmp_path / "b")
    assert maintenance.import_entries(b, f1) == (30, 0)
    assert all(b.get(k) == a.get(k) for k in keys)
    assert maintenance.stats(b) == maintenance.stats(a)
    assert maintenance.verify(b) == []
    assert maintenance.import_entries(b, f1) == (0, 30)
    assert maintenance.import_entries(b, f1, overwrite=True) == (30, 0)
    maintenance.export(b, f3)
    assert f3.read_bytes() == f1.read_bytes()  # import preserves entries exactly


def test_import_skips_corrupt_lines(tmp_path, caplog):
    a = CallCache(tmp_path / "a")
    _fill(a, 10)
    f = tmp_path / "x.jsonl.gz"
    maintenance.export(a, f)
    lines = gzip.decompress(f.read_bytes()).decode().splitlines()
    lines[0] = lines[0][: len(lines[0]) // 2]  # truncated
    lines[1] = lines[1].replace('"output":"score', '"output":"SCORE')  # checksum mismatch
    k2 = json.loads(lines[2])["payload"]["key"]
    lines[2] = lines[2].replace(k2, "../../etc")  # bad key
    lines.append("not json")
    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    b = CallCache(tmp_path / "b")
    with caplog.at_level(logging.WARNING, logger="judgebench.cache"):
        added, skipped = maintenance.import_entries(b, bad)
    assert (added, skipped, b.last_import_corrupt) == (7, 4, 4)
    assert sum("corrupt entry skipped" in r.getMessage() for r in caplog.records) == 4
    assert maintenance.verify(b) == [] and maintenance.stats(b).entries == 7

    truncated = tmp_path / "trunc.jsonl.gz"
    truncated.write_bytes(f.read_bytes()[:-20])
    with pytest.raises(CacheError, match="trunc.jsonl.gz"):
        maintenance.import_entries(CallCache(tmp_path / "c"), truncated)


# -- concurrency ----------------------------------------------------------------------------

N_WRITERS, PER_WRITER, SHARED = 8, 400, 200


def _conc_key(j: int) -> str:
    return call_key(j=j, kind="conc")


def _writer(root: str, wid: int, start) -> None:
    c = CallCache(root)
    own = range(SHARED + wid * (PER_WRITER - SHARED), SHARED + (wid + 1) * (PER_WRITER - SHARED))
    js = [*range(SHARED), *own]
    js = js[wid * 7 % len(js) :] + js[: wid * 7 % len(js)]  # start at different shared keys
    start.wait()
    for j in js:
        c.put(_conc_key(j), {"j": j, "writer": wid, "blob": "x" * (500 + j % 1500)}, meta={"backend": f"w{wid}"})


def _reader(root: str, n_keys: int, start, stop, out) -> None:
    c = CallCache(root)
    keys = [_conc_key(j) for j in range(n_keys)]
    seen = bad = 0
    start.wait()
    while not stop.is_set():
        for j in range(0, n_keys, 7):
            r = c.get(keys[j])
            if r is not None:
                seen += 1
                if r["j"] != j or len(r["blob"]) != 500 + j % 1500 or not 0 <= r["writer"] < N_WRITERS:
                    bad += 1
    out.put((seen, bad, c.corrupt_seen))


def test_concurrent_writers_and_readers(tmp_path):
    ctx = mp.get_context("spawn")
    root = str(tmp_path / "cache")
    CallCache(root)
    n_keys = SHARED + N_WRITERS * (PER_WRITER - SHARED)
    start, stop, out = ctx.Barrier(N_WRITERS + 2), ctx.Event(), ctx.Queue()
    writers = [ctx.Process(target=_writer, args=(root, i, start)) for i in range(N_WRITERS)]
    readers = [ctx.Process(target=_reader, args=(root, n_keys, start, stop, out)) for _ in range(2)]
    for p in writers + readers:
        p.start()
    for p in writers:
        p.join(120)
        assert p.exitcode == 0
    stop.set()
    results = [out.get(timeout=60) for _ in readers]
    for p in readers:
        p.join(30)
        assert p.exitcode == 0
    assert all(bad == 0 and corrupt == 0 for _, bad, corrupt in results)
    assert sum(seen for seen, _, _ in results) > 0

    c = CallCache(root)
    assert maintenance.verify(c) == [] and c.temp_files() == []
    s = maintenance.stats(c)
    assert (s.entries, s.corrupt) == (n_keys, 0)
    assert sum(s.by_backend.values()) == n_keys
    for j in range(n_keys):
        r = c.get(_conc_key(j))
        assert r is not None and r["j"] == j
        if j >= SHARED:  # own keys: exactly one possible writer
            assert r["writer"] == (j - SHARED) // (PER_WRITER - SHARED)


BIG = 256 * 1024


def _endless_writer(root: str, first: int) -> None:
    c = CallCache(root)
    j = first
    while True:
        c.put(_conc_key(j), {"j": j, "blob": "y" * BIG})
        j += 1


def test_sigkill_mid_write_leaves_no_corrupt_entry(tmp_path):
    ctx = mp.get_context("spawn")
    root = tmp_path / "cache"
    c = CallCache(root)
    rnd = 0
    # At least 3 kills; keep going (up to 10) until one lands mid-write (a temp file is left).
    while rnd < 3 or (not c.temp_files() and rnd < 10):
        p = ctx.Process(target=_endless_writer, args=(str(root), rnd * 100_000))
        p.start()
        deadline = time.monotonic() + 60
        while sum(1 for _ in c.keys()) < 10 * (rnd + 1) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.013 * (rnd % 3 + 1))  # land at varying points of a write
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
        assert p.exitcode == -signal.SIGKILL
        rnd += 1
    assert maintenance.verify(c) == []
    keys = list(c.keys())
    assert len(keys) >= 30
    for k in keys:
        r = c.get(k)
        assert r is not None and len(r["blob"]) == BIG and _conc_key(r["j"]) == k
    assert maintenance.stats(c).corrupt == 0 and c.corrupt_seen == 0
    # temp files are ignored; fresh ones survive cleaning (could be live), stale ones are removed
    temps = c.temp_files()  # a writer really killed mid-write: tests/cache/test_segments.py
    assert c.clean_temp() == []
    old = time.time() - cache_mod.STALE_TEMP_S - 60
    for t in temps:
        os.utime(t, (old, old))
    assert maintenance.verify(c, remove_corrupt=True) == [] and c.temp_files() == []
    assert sorted(c.keys()) == sorted(keys)


# -- CLI ------------------------------------------------------------------------------------


def test_cli_stats_verify_export_import(tmp_path, capsys, monkeypatch):
    a = CallCache(tmp_path / "a")
    keys = _fill(a, 6)
    assert main(["stats", "--root", str(a.root)]) == 0
    out = capsys.readouterr().out
    assert "entries" in out and "gemini" in out and "m3" in out and " 6 " in out

    assert main(["verify", "--root", str(a.root)]) == 0
    assert "0 corrupt entries" in capsys.readouterr().out
    bad = a.path_for(keys[0])
    bad.write_bytes(b"{")
    assert main(["verify", "--root", str(a.root)]) == 1
    assert f"corrupt: {bad}" in capsys.readouterr().out
    assert main(["verify", "--remove", "--root", str(a.root)]) == 0
    assert not bad.exists()
    capsys.readouterr()

    f = tmp_path / "share.jsonl.gz"
    assert main(["export", str(f), "--root", str(a.root)]) == 0
    assert "exported 5 entries" in capsys.readouterr().out
    monkeypatch.setenv("JUDGEBENCH_CACHE_DIR", str(tmp_path / "b"))  # default root
    assert main(["import", str(f)]) == 0
    assert "imported 5 entries, skipped 0 (0 corrupt)" in capsys.readouterr().out
    assert maintenance.stats(CallCache(tmp_path / "b" / "calls")).entries == 5


def test_cli_errors_exit_2_with_one_line(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["import", str(tmp_path / "missing.gz"), "--root", str(blocker / "cache")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: cannot create cache root") and str(blocker) in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert main(["import", str(tmp_path / "missing.gz"), "--root", str(tmp_path / "c")]) == 2
    assert "missing.gz" in capsys.readouterr().err
    assert main(["bogus"]) == 2


# -- record schema: a valid checksum is not a valid entry ----------------------------


def _judge_entry(key: str, record: dict) -> dict:
    """An entry as another tool (or an older judgebench) might have written it: checksum right, record not."""
    payload = {
        "key": key,
        "meta": {"backend": "openai", "model": "gpt-4o-mini", "prompt_version": "umbrela_bing@x"},
        "record": record,
        "written_at": 1.0,
    }
    payload = json.loads(cache_mod._canon(payload))
    return {"sha256": cache_mod._checksum(payload), "payload": payload}


GOOD = {
    "text": "##final score: 2",
    "parsed": 2,
    "input_tokens": 10,
    "output_tokens": 4,
    "latency_s": 0.1,
    "attempts": 1,
}
BAD = {
    "no-tokens": {"text": "##final score: 2", "parsed": 2},
    "label-7": {**GOOD, "parsed": 7, "text": "##final score: 7"},
    "label-bool": {**GOOD, "parsed": True},
    "text-not-str": {**GOOD, "text": 3},
    "no-parsed": {k: v for k, v in GOOD.items() if k != "parsed"},
}


def test_import_and_verify_report_entries_that_break_the_record_schema(tmp_path, caplog, capsys):
    keys = [_key(prompt=f"p{i}") for i in range(len(BAD) + 1)]
    export = tmp_path / "shared.jsonl.gz"
    with gzip.open(export, "wt", encoding="utf-8") as f:
        f.write(json.dumps(_judge_entry(keys[0], GOOD)) + "\n")
        for key, record in zip(keys[1:], BAD.values()):
            f.write(json.dumps(_judge_entry(key, record)) + "\n")
    cache = CallCache(tmp_path / "imported")
    with caplog.at_level(logging.WARNING):
        added, skipped = maintenance.import_entries(cache, export)
    assert (added, skipped, cache.last_import_corrupt) == (1, len(BAD), len(BAD))
    warned = [r.getMessage() for r in caplog.records if "invalid entry skipped" in r.getMessage()]
    assert len(warned) == len(BAD) and any("line 3" in w and "parsed" in w for w in warned), warned
    assert cache.get(keys[0]) == GOOD

    # the same entries planted directly in a cache directory: verify names each, reading one is a miss
    planted = CallCache(tmp_path / "planted")
    for key, record in zip(keys, [GOOD, *BAD.values()]):
        planted._write(planted.path_for(key), _judge_entry(key, record))
    bad_paths = {planted.path_for(k) for k in keys[1:]}
    assert set(maintenance.verify(planted)) == bad_paths
    assert main(["verify", "--root", str(tmp_path / "planted")]) == 1
    out = capsys.readouterr().out
    assert all(str(p) in out for p in bad_paths) and f"{len(BAD)} corrupt entries found" in out
    assert all(planted.get(k) is None for k in keys[1:]) and keys[1] not in planted


def test_a_bad_shared_entry_is_a_warned_miss_at_run_time_never_a_crash_or_a_label(tmp_path, monkeypatch, caplog):
    import pandas as pd

    from judgebench.data.datasets import load_toy
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.prompts import load_prompt
    from judgebench.llm.remote.api import OpenAIBackend
    from judgebench.testing.fake_app import fake_label
    from judgebench.testing.fake_process import FakeLLMServer

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    toy = load_toy()
    pairs = toy.label_set()[["query_id", "doc_id"]].head(len(BAD) + 1).reset_index(drop=True)
    template = load_prompt("umbrela_bing")
    with FakeLLMServer() as srv:
        backend = OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url)
        judge = LLMJudge(
            name="fake", family="openai", model="gpt-4o-mini", backend=backend, cache_dir=str(tmp_path), progress=False
        )
        prompts = [
            template.render(query=toy.queries[q], passage=toy.corpus[d]) for q, d in pairs.itertuples(index=False)
        ]
        for prompt, record in zip(prompts, [GOOD, *BAD.values()]):
            key = judge.key_for(prompt)
            judge.cache._write(judge.cache.path_for(key), _judge_entry(key, record))
        with caplog.at_level(logging.WARNING):
            result = judge.judge(pairs, toy, toy.corpus)
        assert srv.stats()["requests"] == len(BAD)  # each bad entry asked again, the good one read
    got = dict(zip(zip(result.labels["query_id"], result.labels["doc_id"]), result.labels["relevance"]))
    assert got[tuple(pairs.iloc[0])] == 2  # the good entry's label
    for (q, d), prompt in list(zip(pairs.itertuples(index=False), prompts))[1:]:
        assert got[(q, d)] == fake_label(prompt)  # the server's, never 7
    assert sum("invalid cache entry" in r.getMessage() for r in caplog.records) == len(BAD)
    assert isinstance(result.labels, pd.DataFrame) and result.failed.empty


@pytest.mark.parametrize("cmd", [["stats"], ["verify"], ["verify", "--remove"], ["export", "OUT"]])
def test_cli_on_a_mistyped_root_is_an_error_and_creates_nothing(tmp_path, capsys, cmd):
    typo = tmp_path / "cahce" / "calls"
    cmd = [str(tmp_path / "out.jsonl.gz") if c == "OUT" else c for c in cmd]
    assert main([*cmd, "--root", str(typo)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: no cache at {typo} (no such directory), expected the calls folder of a cache_dir\n"
    assert not (tmp_path / "cahce").exists() and not (tmp_path / "out.jsonl.gz").exists()


def test_import_of_a_line_nested_too_deep_skips_it_as_corrupt(tmp_path, capsys):
    a = CallCache(tmp_path / "a")
    _fill(a, 3)
    f = tmp_path / "share.jsonl.gz"
    maintenance.export(a, f)
    deep = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError on it
    with gzip.open(f, "ab") as out:
        out.write((deep + "\n").encode())
    assert main(["import", str(f), "--root", str(tmp_path / "b")]) == 0
    out = capsys.readouterr()
    assert "imported 3 entries, skipped 1 (1 corrupt)" in out.out and "Traceback" not in out.err
    assert maintenance.stats(CallCache(tmp_path / "b")).entries == 3
