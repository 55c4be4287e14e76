"""The segments layout of the call cache: torn tails, corrupt middles, concurrent writers, old caches, the
group writer, and writers really killed mid-write (both layouts)."""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import multiprocessing as mp
import os
import shutil
import signal
import struct
import time
import zlib
from pathlib import Path

import pytest

from judgebench.cache import maintenance
from judgebench.cache import segments as seg
from judgebench.cache.keys import call_key, envelope_bytes
from judgebench.cache.store import CallCache
from judgebench.cache.writer import GroupWriter
from judgebench.exceptions import CacheError


def _key(i: int, kind: str = "seg") -> str:
    return call_key(i=i, kind=kind)


def _rec(i: int) -> dict:
    return {"output": f"answer {i}", "n": i, "blob": "z" * (50 + i % 7)}


def _frames_by_hand(path: Path) -> list[tuple[int, int, str]]:
    """(offset, frame length, key) of each frame, parsed here from the documented format, not by the module."""
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        magic, n, crc = struct.unpack_from(">4sII", data, pos)
        assert magic == b"JBc1" and zlib.crc32(data[pos + 12 : pos + 44 + n]) == crc
        out.append((pos, 44 + n, data[pos + 12 : pos + 44].hex()))
        pos += 44 + n
    return out


def _one_segment(root: Path) -> Path:
    (path,) = sorted((root / "segments").iterdir())
    return path


def test_records_are_framed_as_documented_and_read_back_by_a_new_process_view(tmp_path):
    c = CallCache(tmp_path, layout="segments")
    keys = [_key(i) for i in range(6)]
    c.put_many([(k, _rec(i), {"backend": "openai", "model": "m"}) for i, k in enumerate(keys)])
    frames = _frames_by_hand(_one_segment(tmp_path))
    assert [k for _, _, k in frames] == keys
    body = _one_segment(tmp_path).read_bytes()[frames[2][0] + 44 : frames[2][0] + frames[2][1]]
    assert json.loads(body)["payload"]["record"] == _rec(2)
    fresh = CallCache(tmp_path)  # no layout given: the segments folder keeps the layout
    assert fresh.layout == "segments"
    assert [fresh.get(k) for k in keys] == [_rec(i) for i in range(6)]
    assert not list(tmp_path.glob("??/*.json"))  # nothing in the one-file-per-entry layout
    assert maintenance.stats(fresh).entries == 6 and maintenance.stats(fresh).bytes == sum(n for _, n, _ in frames)


def test_a_torn_tail_at_every_byte_is_never_read_back(tmp_path):
    src = tmp_path / "src"
    c = CallCache(src, layout="segments")
    keys = [_key(i) for i in range(4)]
    for i, k in enumerate(keys):
        c.put(k, _rec(i))
    seg_file = _one_segment(src)
    data = seg_file.read_bytes()
    last_at, last_len, last_key = _frames_by_hand(seg_file)[-1]
    assert last_key == keys[-1] and last_at + last_len == len(data)
    for cut in range(last_at, len(data)):  # every length from "frame not started" to "one byte missing"
        root = tmp_path / f"cut{cut}"
        (root / "segments").mkdir(parents=True)
        (root / "segments" / seg_file.name).write_bytes(data[:cut])
        view = CallCache(root)
        assert view.get(keys[-1]) is None, cut
        assert [view.get(k) for k in keys[:-1]] == [_rec(i) for i in range(3)], cut
        assert maintenance.verify(view) == [] and view.corrupt_seen == 0, cut
        shutil.rmtree(root)
    # a torn tail completed later (a live writer finishing its write) is picked up by the next scan
    root = tmp_path / "growing"
    (root / "segments").mkdir(parents=True)
    grow = root / "segments" / seg_file.name
    grow.write_bytes(data[: last_at + 10])
    view = CallCache(root)
    assert view.get(keys[-1]) is None
    grow.write_bytes(data)
    view.refresh()
    assert view.get(keys[-1]) == _rec(3)


def test_a_corrupt_middle_record_is_reported_and_the_rest_still_read(tmp_path, caplog):
    c = CallCache(tmp_path, layout="segments")
    keys = [_key(i) for i in range(5)]
    for i, k in enumerate(keys):
        c.put(k, _rec(i), {"backend": "openai"})
    path = _one_segment(tmp_path)
    frames = _frames_by_hand(path)
    data = bytearray(path.read_bytes())
    data[frames[1][0] + 60] ^= 0x01  # one bit inside the second record's body
    data[frames[3][0] : frames[3][0] + 4] = b"XXXX"  # and the fourth frame's magic number
    path.write_bytes(bytes(data))
    where1, where3 = path.with_name(f"{path.name}@{frames[1][0]}"), path.with_name(f"{path.name}@{frames[3][0]}")
    view = CallCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="judgebench.cache"):
        got = [view.get(k) for k in keys]
    assert got == [_rec(0), None, _rec(2), None, _rec(4)]  # resynchronised on the next good frame
    messages = "\n".join(r.getMessage() for r in caplog.records)
    assert str(where1) in messages and str(where3) in messages
    assert sorted(maintenance.verify(view)) == sorted([where1, where3])
    assert maintenance.stats(view).corrupt == 2 and maintenance.stats(view).entries == 3
    # a young segment may still be written by its process: verify --remove leaves it
    assert sorted(maintenance.verify(view, remove_corrupt=True)) == sorted([where1, where3]) and path.exists()
    old = time.time() - 2 * 3600
    os.utime(path, (old, old))
    maintenance.verify(view, remove_corrupt=True)
    assert not path.exists()
    fresh = CallCache(tmp_path)
    assert maintenance.verify(fresh) == [] and [fresh.get(k) for k in keys] == [_rec(0), None, _rec(2), None, _rec(4)]


def _segment_writer(root: str, wid: int, start, seen_some) -> None:
    c = CallCache(root, layout="segments")
    js = [*range(100), *range(1000 * (wid + 1), 1000 * (wid + 1) + 300)]  # 100 shared keys, 300 own
    start.wait()
    for i in range(0, len(js), 8):
        if i == 200:  # halfway: the reader must have read live entries before the rest is written
            seen_some.wait(60)
        c.put_many(
            [
                (_key(j, "conc"), {"j": j, "writer": wid, "blob": "w" * (j % 900)}, {"backend": f"w{wid}"})
                for j in js[i : i + 8]
            ]
        )


def _segment_reader(root: str, start, stop, out, seen_some) -> None:
    c = CallCache(root)
    keys = {j: _key(j, "conc") for j in [*range(100), *range(1000, 1300), *range(2000, 2300)]}
    seen = bad = 0
    start.wait()
    while not stop.is_set():
        for j, k in keys.items():
            r = c.get(k)
            if r is not None:
                seen += 1
                bad += r["j"] != j or len(r["blob"]) != j % 900
        if seen:
            seen_some.set()
    out.put((seen, bad, c.corrupt_seen))


def test_two_processes_append_while_a_third_reads_then_a_fourth_reads_all(tmp_path):
    ctx = mp.get_context("fork")
    root = str(tmp_path / "cache")
    CallCache(root, layout="segments").check_writable()
    start, stop, out, seen_some = ctx.Barrier(3), ctx.Event(), ctx.Queue(), ctx.Event()
    writers = [ctx.Process(target=_segment_writer, args=(root, w, start, seen_some)) for w in range(2)]
    reader = ctx.Process(target=_segment_reader, args=(root, start, stop, out, seen_some))
    for p in [*writers, reader]:
        p.start()
    for p in writers:
        p.join(120)
        assert p.exitcode == 0
    stop.set()
    seen, bad, corrupt = out.get(timeout=60)
    reader.join(30)
    assert bad == 0 and corrupt == 0 and seen > 0 and seen_some.is_set()  # it read while both were still writing
    segments = sorted((Path(root) / "segments").iterdir())
    assert len(segments) == 2  # one file per writing process, none shared
    c = CallCache(root)
    assert maintenance.verify(c) == [] and maintenance.stats(c).entries == 700
    for j in [*range(100), *range(1000, 1300), *range(2000, 2300)]:
        r = c.get(_key(j, "conc"))
        assert r["j"] == j and len(r["blob"]) == j % 900
        if j >= 1000:
            assert r["writer"] == j // 1000 - 1


def test_an_old_one_file_per_entry_cache_is_read_exported_and_extended(tmp_path):
    keys = [_key(i, "old") for i in range(8)]
    old = CallCache(tmp_path / "c", layout="files")
    for i, k in enumerate(keys[:5]):
        old.put(k, _rec(i), {"backend": "gemini", "model": "g"})
    new = CallCache(tmp_path / "c", layout="segments")
    assert [new.get(k) for k in keys[:5]] == [_rec(i) for i in range(5)]
    for i, k in enumerate(keys[5:], 5):
        new.put(k, _rec(i), {"backend": "gemini", "model": "g"})
    both = CallCache(tmp_path / "c")
    assert both.layout == "segments" and sorted(both.keys()) == sorted(keys)
    assert maintenance.verify(both) == [] and maintenance.stats(both).entries == 8
    # the export equals that of the same entries written in one layout only (entries carry their write time)
    flat = CallCache(tmp_path / "flat", layout="files")
    f1, f2 = tmp_path / "both.jsonl.gz", tmp_path / "flat.jsonl.gz"
    assert maintenance.export(both, f1) == 8
    assert maintenance.import_entries(flat, f1) == (8, 0)
    maintenance.export(flat, f2)
    assert f1.read_bytes() == f2.read_bytes()
    lines = gzip.decompress(f1.read_bytes()).decode().splitlines()
    assert [json.loads(line)["payload"]["key"] for line in lines] == sorted(keys)
    into_segments = CallCache(tmp_path / "s", layout="segments")
    assert maintenance.import_entries(into_segments, f2) == (8, 0) and maintenance.import_entries(
        into_segments, f2
    ) == (0, 8)
    assert [into_segments.get(k) for k in keys] == [_rec(i) for i in range(8)]


def test_a_bad_layout_name_is_one_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEBENCH_CACHE_LAYOUT", "sqlite")
    with pytest.raises(CacheError, match=r"JUDGEBENCH_CACHE_LAYOUT='sqlite' .*expected one of files, segments"):
        CallCache(tmp_path)


@pytest.mark.parametrize("layout, inline", [("files", False), ("segments", False), ("segments", True)])
def test_the_group_writer_returns_only_once_stored_and_batches(tmp_path, layout, inline):
    keys = [_key(i, layout) for i in range(200)]
    readable_at_return = []

    async def main() -> int:
        async with GroupWriter(CallCache(tmp_path, layout=layout), inline=inline) as w:

            async def one(i: int) -> None:
                await w.put(keys[i], _rec(i), {"backend": "openai"})
                readable_at_return.append(CallCache(tmp_path).get(keys[i]) == _rec(i))  # another reader sees it

            await asyncio.gather(*(one(i) for i in range(200)))
            return w.groups

    groups = asyncio.run(main())
    assert len(readable_at_return) == 200 and all(readable_at_return)
    if inline:  # the loop writes once per iteration: the 200 handed over in one iteration go out as one group
        assert groups == 1
    else:
        assert groups < 200  # answers queued while a group was written went out together


def test_the_default_cache_is_written_by_the_loop_and_fsync_or_files_by_the_thread(tmp_path):
    assert GroupWriter(CallCache(tmp_path / "a")).inline
    assert not GroupWriter(CallCache(tmp_path / "b", fsync=True)).inline
    assert not GroupWriter(CallCache(tmp_path / "c", layout="files")).inline


def test_the_inline_group_writer_fails_every_answer_of_a_group_it_could_not_store(tmp_path):
    c = CallCache(tmp_path, layout="segments")
    c.segment_dir.parent.mkdir(parents=True, exist_ok=True)
    c.segment_dir.write_text("not a directory")  # no segment can be created
    outcomes: dict[int, str] = {}

    async def main() -> None:
        async with GroupWriter(c) as w:

            async def one(i: int) -> None:
                try:
                    await w.put(_key(i, "seg"), _rec(i))
                    outcomes[i] = "stored"
                except CacheError as e:
                    outcomes[i] = str(e)

            await asyncio.gather(*(one(i) for i in range(5)))

    asyncio.run(main())
    assert sorted(outcomes) == list(range(5))
    assert all("cannot write cache entry" in outcomes[i] and str(c.segment_dir) in outcomes[i] for i in range(5))
    assert all(c.get(_key(i, "seg")) is None for i in range(5))


def test_the_group_writer_fails_the_answers_it_could_not_store(tmp_path):
    c = CallCache(tmp_path, layout="files")
    blocked = _key(7, "blocked")
    (tmp_path / blocked[:2]).write_text("not a directory")  # this entry's shard cannot be created
    outcomes: dict[int, str] = {}

    async def main() -> None:
        async with GroupWriter(c) as w:

            async def one(i: int, key: str) -> None:
                try:
                    await w.put(key, _rec(i))
                    outcomes[i] = "stored"
                except CacheError as e:
                    outcomes[i] = str(e)

            await asyncio.gather(*(one(i, _key(i, "ok")) for i in range(5)), one(99, blocked))

    asyncio.run(main())
    assert [outcomes[i] for i in range(5)] == ["stored"] * 5  # queued before the failing one
    assert all(c.get(_key(i, "ok")) == _rec(i) for i in range(5))
    assert str(c.path_for(blocked)) in outcomes[99]
    assert c.get(blocked) is None


# -- writers really killed mid-write --------------------------------------------------------------------

BIG = 2 * 1024 * 1024
KILL_KEYS = [_key(j, "kill") for j in range(4)]


# Where each killed writer stops inside its second record: after its first byte, half of it, all but its last byte.
CUTS = (1, BIG // 2, -1)


def _write_big(root: str, layout: str, ready, torn, cut: int) -> None:
    """Store four big records (prepared first), the second one cut: its first ``cut`` bytes are written (all but the
    last with -1), then this process says so and waits for the parent's SIGKILL, so the kill lands inside a write at a
    known byte, every time (a kill timed from outside missed the write about one run in three under load)."""
    c = CallCache(root, layout=layout)
    bodies = [(k, envelope_bytes(k, {"j": j, "blob": "k" * BIG}, None, 1.0)[1]) for j, k in enumerate(KILL_KEYS)]
    write, records = os.write, []

    def stopping(fd, data):  # both layouts write through os.write: the entry file's, or the segment's frame
        if len(data) < BIG:
            return write(fd, data)
        records.append(len(data))
        if len(records) < 2:
            return write(fd, data)
        write(fd, bytes(memoryview(data)[:cut]))
        torn.set()
        time.sleep(600)

    os.write = stopping  # this forked child's own module object: the parent's is untouched
    ready.set()
    for i in range(12):
        c.write_group([bodies[i % 4]])


def _mid_write(root: Path, layout: str, frame_len: int) -> bool:
    """A write is under way: a temp entry file exists, or a segment ends inside a frame."""
    if layout == "files":
        return any(
            name.endswith(".tmp") for k in KILL_KEYS if (root / k[:2]).is_dir() for name in os.listdir(root / k[:2])
        )
    return any(p.stat().st_size % frame_len for p in (root / "segments").glob("*.seg"))


@pytest.mark.parametrize("layout", ["files", "segments"])
def test_sigkill_mid_write_never_leaves_a_readable_torn_record(tmp_path, layout):
    """A child really killed (SIGKILL) inside a write, at a known byte of its record: what it left is never read back
    as a record, and the records written whole before it are."""
    ctx = mp.get_context("fork")
    root = tmp_path / "cache"
    CallCache(root, layout=layout).check_writable()
    frame_len = seg.HEADER + len(envelope_bytes(KILL_KEYS[0], {"j": 0, "blob": "k" * BIG}, None, 1.0)[1])
    for cut in CUTS:
        ready, torn = ctx.Event(), ctx.Event()
        p = ctx.Process(target=_write_big, args=(str(root), layout, ready, torn, cut))
        p.start()
        assert ready.wait(120) and torn.wait(120), (
            f"the writer never reached its second record (exit code {p.exitcode})"
        )
        os.kill(p.pid, signal.SIGKILL)
        p.join(10)
        assert p.exitcode == -signal.SIGKILL
        assert _mid_write(
            root, layout, frame_len
        )  # killed inside the write: a temp file, or a segment ending in a frame
        view = CallCache(root)
        assert maintenance.verify(view) == [] and view.corrupt_seen == 0
        assert view.get(KILL_KEYS[0]) == {"j": 0, "blob": "k" * BIG}  # the first record, written whole before the kill
        for j, k in enumerate(KILL_KEYS):
            r = view.get(k)
            assert r is None or (r["j"] == j and len(r["blob"]) == BIG)
        assert view.get(KILL_KEYS[1]) is None  # the torn one, never written whole: never read back
    if layout == "segments":
        assert any(seg.scan_file(p).torn_tail for p in (root / "segments").glob("*.seg"))
    else:  # the temp files the killed writers left: kept while they could be live, then removed
        view = CallCache(root)
        temps = view.temp_files()
        assert temps and view.clean_temp() == []
        old = time.time() - 2 * 3600
        for t in temps:
            os.utime(t, (old, old))
        assert maintenance.verify(view, remove_corrupt=True) == [] and view.temp_files() == []


def test_an_api_judge_on_a_segments_cache_stores_every_answer_and_reruns_for_free(tmp_path, monkeypatch):
    from judgebench.data.datasets import load_toy
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.prompts import load_prompt
    from judgebench.llm.remote.api import OpenAIBackend
    from judgebench.testing.fake_app import fake_label
    from judgebench.testing.fake_process import FakeLLMServer

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("JUDGEBENCH_CACHE_LAYOUT", "segments")
    toy = load_toy()
    pairs = toy.label_set()[["query_id", "doc_id"]].head(60).reset_index(drop=True)
    template = load_prompt("umbrela_bing")
    with FakeLLMServer(latency_s=0.002) as srv:

        def judge():
            backend = OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url, max_concurrency=16)
            return LLMJudge(
                name="fake",
                family="openai",
                model="gpt-4o-mini",
                backend=backend,
                cache_dir=str(tmp_path),
                progress=False,
            )

        first = judge().judge(pairs, toy, toy.corpus)
        assert srv.stats()["requests"] == 60
        monkeypatch.delenv("JUDGEBENCH_CACHE_LAYOUT")  # the folder now says "segments"
        again = judge().judge(pairs, toy, toy.corpus)
        assert srv.stats()["requests"] == 60 and again.usage.calls_cached == 60
    for result in (first, again):
        for q, d, label in result.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
            assert label == fake_label(template.render(query=toy.queries[q], passage=toy.corpus[d]))
        assert len(result.labels) == 60 and result.failed.empty
    calls = tmp_path / "calls"
    assert not list(calls.glob("??/*.json")) and len(list((calls / "segments").glob("*.seg"))) == 1
    cache = CallCache(calls)
    assert maintenance.verify(cache) == [] and maintenance.stats(cache).entries == 60


def _judge_in_child(base_url: str, cache_dir: str, conc: int) -> None:
    from judgebench.data.datasets import load_toy
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.remote.api import OpenAIBackend

    os.environ["OPENAI_API_KEY"] = "test-key"
    toy = load_toy()
    backend = OpenAIBackend("gpt-4o-mini", base_url=base_url, max_concurrency=conc)
    judge = LLMJudge(
        name="fake", family="openai", model="gpt-4o-mini", backend=backend, cache_dir=cache_dir, progress=False
    )
    judge.judge(toy.label_set()[["query_id", "doc_id"]], toy, toy.corpus)


def test_a_judge_killed_mid_run_on_a_segments_cache_loses_only_its_in_flight_calls(tmp_path, monkeypatch):
    """SIGKILL a judging process early and late: every answer it was told was stored is there, the rerun
    pays exactly for the rest, and what it pays twice is at most the calls in flight (max_concurrency)."""
    from judgebench.data.datasets import load_toy
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.prompts import load_prompt
    from judgebench.llm.remote.api import OpenAIBackend
    from judgebench.testing.fake_app import fake_label
    from judgebench.testing.fake_process import FakeLLMServer

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("JUDGEBENCH_CACHE_LAYOUT", "segments")
    toy = load_toy()
    pairs = toy.label_set()[["query_id", "doc_id"]]
    n, conc = len(pairs), 8
    template = load_prompt("umbrela_bing")
    ctx = mp.get_context("fork")
    with FakeLLMServer(latency_s=0.01) as srv:
        for i, target in enumerate((20, n - 2 * conc)):
            srv.reset()
            cache_dir = tmp_path / f"run{i}"
            child = ctx.Process(target=_judge_in_child, args=(srv.openai_base_url, str(cache_dir), conc))
            child.start()
            deadline = time.monotonic() + 120
            while srv.stats()["requests"] < target:
                assert child.is_alive() and time.monotonic() < deadline, "the judge ended before the kill"
                time.sleep(0.005)
            os.kill(child.pid, signal.SIGKILL)
            child.join(10)
            assert child.exitcode == -signal.SIGKILL
            time.sleep(0.1)  # requests it sent may still be answered by the server
            sent = srv.stats()["requests"]
            cache = CallCache(cache_dir / "calls")
            stored = sum(1 for _ in cache.keys())
            assert maintenance.verify(cache) == [] and 0 <= sent - stored <= conc, (sent, stored)
            backend = OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url, max_concurrency=conc)
            judge = LLMJudge(
                name="fake",
                family="openai",
                model="gpt-4o-mini",
                backend=backend,
                cache_dir=str(cache_dir),
                progress=False,
            )
            result = judge.judge(pairs, toy, toy.corpus)
            assert srv.stats()["requests"] - sent == n - stored  # the rerun asked exactly for what was missing
            assert len(result.labels) == n and result.usage.calls_cached == stored
            for q, d, label in result.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
                assert label == fake_label(template.render(query=toy.queries[q], passage=toy.corpus[d]))
            assert maintenance.stats(CallCache(cache_dir / "calls")).entries == n


class _ReadOnlyFolder:
    """The cache's view of ``os`` with one folder refusing new files (EACCES), as a read-only directory does for a
    user who is not root; ``access`` says so too."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def __getattr__(self, name):
        return getattr(os, name)

    def open(self, path, flags, *a):
        if flags & os.O_CREAT and Path(path).parent == self.folder:
            raise PermissionError(13, "Permission denied", str(path))
        return os.open(path, flags, *a)

    def access(self, path, mode):
        return False if Path(path) == self.folder and mode & os.W_OK else os.access(path, mode)


@pytest.mark.parametrize("layout", ["segments", "files"])
def test_an_unwritable_answer_folder_under_a_writable_root_fails_before_paying(tmp_path, monkeypatch, layout):
    """calls/segments (or the shard folder of a key to store) refuses writes while calls/ itself is writable: the
    judge asks nothing and names that folder, instead of paying for answers it then cannot store."""
    from judgebench.cache import store as cache_mod
    from judgebench.data.datasets import load_toy
    from judgebench.judges.llm import LLMJudge
    from judgebench.llm.remote.api import OpenAIBackend
    from judgebench.testing.fake_process import FakeLLMServer

    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("JUDGEBENCH_CACHE_LAYOUT", layout)
    toy = load_toy()
    pairs = toy.label_set()[["query_id", "doc_id"]]
    with FakeLLMServer() as srv:
        backend = OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url, max_concurrency=16)
        judge = LLMJudge(
            name="fake", family="openai", model="gpt-4o-mini", backend=backend, cache_dir=str(tmp_path), progress=False
        )
        calls = tmp_path / "calls"
        if layout == "segments":
            folder = calls / "segments"
        else:
            folder = calls / judge.render(pairs.head(1), toy, toy.corpus)[0].key[:2]
        folder.mkdir(parents=True)
        monkeypatch.setattr(cache_mod, "os", _ReadOnlyFolder(folder))
        with pytest.raises(CacheError, match=rf"^cache {folder} is not writable: \[Errno 13\] Permission denied"):
            judge.judge(pairs, toy, toy.corpus)
        assert srv.stats()["requests"] == 0
        assert list(folder.iterdir()) == [] and [p.name for p in calls.iterdir()] == [
            folder.name
        ]  # no probe left behind


def _segment_of(root: Path, n: int) -> tuple[CallCache, list[str], Path, list[tuple[int, int, str]]]:
    """n records, one frame each, in one segment; the frames as parsed here from the documented format."""
    c = CallCache(root, layout="segments")
    keys = [_key(i, "len") for i in range(n)]
    for i, k in enumerate(keys):
        c.put(k, _rec(i), {"backend": "openai", "model": "m"})
    c.close()
    path = _one_segment(root)
    return c, keys, path, _frames_by_hand(path)


@pytest.mark.parametrize("length", ["past-the-end", "shorter"])
def test_a_corrupt_length_field_mid_segment_is_corruption_not_a_torn_tail(tmp_path, caplog, length):
    """Frame 10 of 30 gets a wrong length: reported (verify, stats, a warning at run time) as the one record it
    loses, and the 19 frames after it are still read, instead of the rest of the file hidden as a 'torn tail'."""
    _, keys, path, frames = _segment_of(tmp_path, 30)
    at, size = frames[10][0], path.stat().st_size
    data = bytearray(path.read_bytes())
    struct.pack_into(">I", data, at + 4, size * 3 if length == "past-the-end" else 17)
    path.write_bytes(bytes(data))
    view = CallCache(tmp_path)
    with caplog.at_level(logging.WARNING, logger="judgebench.cache"):
        got = [view.get(k) for k in keys]
    assert got == [_rec(i) if i != 10 else None for i in range(30)]
    where = path.with_name(f"{path.name}@{at}")
    warned = [r.getMessage() for r in caplog.records if str(where) in r.getMessage()]
    assert len(warned) == 1 and "treated as a miss" in warned[0]
    assert maintenance.verify(view) == [where]
    reason = view.reasons[where]
    first_good = frames[11][0]
    assert reason.startswith(
        "frame length runs past the end of the file" if length == "past-the-end" else "frame checksum mismatch"
    )
    assert f"1 record lost in the {first_good - at} bytes up to the next good frame at byte {first_good}" in reason
    assert maintenance.stats(view).entries == 29 and maintenance.stats(view).corrupt == 1
    assert seg.scan_file(path).torn_tail is False


def test_verify_reports_what_a_torn_tail_cut_short(tmp_path, capsys):
    from judgebench.cache.cli import main

    _, keys, path, frames = _segment_of(tmp_path, 30)
    data = path.read_bytes()
    cut_at, cut_len, cut_key = frames[15]
    half = cut_at + 100  # about half of the segment, inside record 15's body
    path.write_bytes(data[:half])  # the segment truncated: record 15 cut short, the 14 records after it gone
    assert main(["verify", "--root", str(tmp_path)]) == 0  # nothing corrupt: a torn tail is what a killed writer leaves
    out = capsys.readouterr().out
    assert (
        f"torn tail: {path}@{cut_at} (the last record (key {cut_key[:16]}...) is cut short: {half - cut_at} of "
        f"its {cut_len} bytes are here"
    ) in out
    assert "any records written after it are gone too" in out and "0 corrupt entries found" in out
    assert "1 segment(s) end in a torn tail" in out
    view = CallCache(tmp_path)
    assert maintenance.stats(view).entries == 15 == sum(1 for k in keys if view.get(k) is not None)
    path.write_bytes(data[: cut_at + 20])  # cut inside the frame header: that is all it can say
    assert main(["verify", "--root", str(tmp_path)]) == 0
    assert f"torn tail: {path}@{cut_at} (20 bytes of an unfinished frame header" in capsys.readouterr().out


def test_verify_remove_on_a_young_segment_says_it_left_the_entry(tmp_path, capsys):
    from judgebench.cache.cli import main

    _, keys, path, frames = _segment_of(tmp_path, 5)
    data = bytearray(path.read_bytes())
    data[frames[2][0] + 60] ^= 0x01
    path.write_bytes(bytes(data))
    where = path.with_name(f"{path.name}@{frames[2][0]}")
    assert main(["verify", "--remove", "--root", str(tmp_path)]) == 1  # still there: not a success
    out = capsys.readouterr().out
    assert f"not removed: {where} (its segment changed in the last hour" in out
    assert f"1 corrupt entry found in {tmp_path}, 0 removed, 1 still there" in out
    assert maintenance.verify(CallCache(tmp_path)) == [where]
    old = time.time() - 2 * 3600
    os.utime(path, (old, old))
    assert main(["verify", "--remove", "--root", str(tmp_path)]) == 0
    assert f"1 corrupt entry found in {tmp_path}, 1 removed" in capsys.readouterr().out
    assert maintenance.verify(CallCache(tmp_path)) == []


def test_an_open_view_still_hits_after_verify_rewrote_its_segment(tmp_path):
    _, keys, path, frames = _segment_of(tmp_path, 8)
    view = CallCache(tmp_path)
    view.refresh()  # indexed where the records are now, no file opened yet
    data = bytearray(path.read_bytes())
    data[frames[3][0] + 60] ^= 0x01
    path.write_bytes(bytes(data))
    old = time.time() - 2 * 3600
    os.utime(path, (old, old))
    maintenance.verify(
        CallCache(tmp_path), remove_corrupt=True
    )  # another process rewrites the segment without record 3
    assert not path.exists()
    assert [view.get(k) for k in keys] == [_rec(i) if i != 3 else None for i in range(8)]
    assert view.hits == 7
