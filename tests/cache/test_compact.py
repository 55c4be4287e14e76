"""The compacted index of a segments cache and the layout migration: the file format by hand, compaction while
a writer appends and while a reader reads, a damaged index, and ``migrate`` both ways."""

from __future__ import annotations

import json
import multiprocessing as mp
import struct
import zlib
from pathlib import Path

import pytest

from judgebench.cache import maintenance, packed
from judgebench.cache.cli import main
from judgebench.cache.compact import compact
from judgebench.cache.keys import call_key
from judgebench.cache.store import CallCache


def _key(i: int, kind: str = "cmp") -> str:
    return call_key(i=i, kind=kind)


def _rec(i: int) -> dict:
    return {"output": f"answer {i}", "n": i}


def _pack_of(root: Path) -> Path:
    (path,) = (root / "segments").glob("compact-*.jbc")
    return path


def test_the_compacted_file_is_laid_out_as_documented(tmp_path):
    c = CallCache(tmp_path)
    keys = [_key(i) for i in range(20)]
    c.put_many([(k, _rec(i), None) for i, k in enumerate(keys)])
    c.close()
    report = compact(CallCache(tmp_path))
    assert report.records == 20 and report.folded == 1 and report.kept == []
    assert [p.suffix for p in (tmp_path / "segments").iterdir() if p.suffix in (".seg", ".jbc")] == [".jbc"]
    data = _pack_of(tmp_path).read_bytes()
    # header: magic, version, data end, records, crc of the first 24 bytes
    magic, version, data_end, records, crc = struct.unpack_from(">4sIQQI", data, 0)
    assert (magic, version, records, crc) == (b"JBx1", 1, 20, zlib.crc32(data[:24]))
    # footer: magic, index offset, records, folded length, crc of index+folded, crc of the footer
    fmagic, index_at, frecords, folded_len, body_crc, fcrc = struct.unpack_from(">4sQQIII", data, len(data) - 32)
    assert (fmagic, index_at, frecords) == (b"JBxF", data_end, 20) and fcrc == zlib.crc32(data[-32:-4])
    folded_at = index_at + 20 * 44
    assert folded_at + folded_len == len(data) - 32 and body_crc == zlib.crc32(data[index_at : len(data) - 32])
    index = [struct.unpack_from(">32sQI", data, index_at + i * 44) for i in range(20)]
    assert [raw.hex() for raw, _, _ in index] == sorted(keys)  # sorted by key
    for raw, offset, n in index:  # each points at a frame of that key whose body is the stored envelope
        assert data[offset : offset + 4] == b"JBc1" and data[offset + 12 : offset + 44] == raw
        body = data[offset + 44 : offset + 44 + n]
        assert zlib.crc32(raw + body) == struct.unpack_from(">I", data, offset + 8)[0]
        assert json.loads(body)["payload"]["record"] == _rec(keys.index(raw.hex()))
    assert json.loads(data[folded_at : folded_at + folded_len])["segments"] and len(data) - 32 == folded_at + folded_len
    fresh = CallCache(tmp_path)
    assert [fresh.get(k) for k in keys] == [_rec(i) for i in range(20)] and fresh.get(_key(99)) is None
    assert sorted(fresh.keys()) == sorted(keys) and maintenance.verify(fresh) == []


def test_opening_reads_the_index_and_only_what_was_appended_since(tmp_path, monkeypatch):
    c = CallCache(tmp_path)
    c.put_many([(_key(i), _rec(i), None) for i in range(30)])
    c.close()
    compact(CallCache(tmp_path))
    later = CallCache(tmp_path)
    later.put_many([(_key(i), _rec(i), None) for i in range(30, 35)] + [(_key(3), {"newer": 1}, None)])
    later.close()
    scanned = []
    real = packed.seg.scan_file

    def spy(path, start=0, end=None):
        scanned.append((Path(path).suffix, start))
        return real(path, start, end)

    monkeypatch.setattr(packed.seg, "scan_file", spy)
    fresh = CallCache(tmp_path)
    assert fresh.get(_key(31)) == _rec(31) and fresh.get(_key(3)) == {"newer": 1}  # the newer write wins
    assert fresh.get(_key(4)) == _rec(4)
    assert scanned == [(".seg", 0)]  # the compacted file is not scanned; the one later segment is


def _appender(root: str, start, n: int) -> None:
    c = CallCache(root)
    start.wait()
    for i in range(n):
        c.put(_key(i, "live"), _rec(i))


def _compact_loop(root: str, start, times: int, out) -> None:
    start.wait()
    made = sum(compact(CallCache(root), min_age_s=0).path is not None for _ in range(times))
    out.put(made)


def test_compaction_while_a_writer_appends_loses_nothing(tmp_path):
    ctx = mp.get_context("fork")
    before = CallCache(tmp_path)
    before.put(_key(0, "before"), _rec(0))
    before.close()  # its writer is done: its segment can go
    start, out = ctx.Barrier(2), ctx.Queue()
    w = ctx.Process(target=_appender, args=(str(tmp_path), start, 3000))
    k = ctx.Process(target=_compact_loop, args=(str(tmp_path), start, 15, out))
    w.start(), k.start()
    assert out.get(timeout=120) == 15
    w.join(120), k.join(60)
    assert w.exitcode == 0 and k.exitcode == 0
    c = CallCache(tmp_path)
    assert [c.get(_key(i, "live")) for i in range(3000)] == [_rec(i) for i in range(3000)]
    assert c.get(_key(0, "before")) == _rec(0) and maintenance.verify(c) == []
    assert compact(c).kept == [] and [p.suffix for p in (tmp_path / "segments").glob("*.seg")] == []  # writer gone
    assert maintenance.stats(CallCache(tmp_path)).entries == 3001


def _reader(root: str, keys: list[str], start, stop, out) -> None:
    c = CallCache(root)
    start.wait()
    missing = rounds = 0
    while not stop.is_set() or rounds < 3:
        missing += sum(c.get(k) is None for k in keys)
        rounds += 1
    out.put((missing, rounds))


def test_a_reader_during_compaction_sees_every_entry(tmp_path):
    keys = [_key(i, "r") for i in range(400)]
    for part in range(8):  # eight segments, as eight finished jobs leave
        c = CallCache(tmp_path)
        c.put_many([(k, _rec(i), None) for i, k in enumerate(keys) if i % 8 == part])
        c.close()
    ctx = mp.get_context("fork")
    start, stop, out = ctx.Barrier(2), ctx.Event(), ctx.Queue()
    r = ctx.Process(target=_reader, args=(str(tmp_path), keys, start, stop, out))
    r.start()
    start.wait()
    for _ in range(10):
        compact(CallCache(tmp_path))
    stop.set()
    missing, rounds = out.get(timeout=120)
    r.join(30)
    assert missing == 0 and rounds >= 3
    assert (
        len(list((tmp_path / "segments").glob("*.seg"))) == 0 and len(list((tmp_path / "segments").glob("*.jbc"))) == 1
    )


@pytest.mark.parametrize("damage", ["index byte", "footer", "header", "truncated"])
def test_a_damaged_index_is_reported_and_its_records_still_read(tmp_path, caplog, capsys, damage):
    keys = [_key(i, damage) for i in range(25)]
    c = CallCache(tmp_path)
    c.put_many([(k, _rec(i), None) for i, k in enumerate(keys)])
    c.close()
    compact(CallCache(tmp_path))
    path = _pack_of(tmp_path)
    data = bytearray(path.read_bytes())
    index_at = struct.unpack_from(">4sQ", data, len(data) - 32)[1]
    if damage == "index byte":
        data[index_at + 5] ^= 0xFF
    elif damage == "footer":
        data[-3] ^= 0xFF
    elif damage == "header":
        data[2] ^= 0xFF
    else:
        data = data[: index_at + 10]
    path.write_bytes(bytes(data))
    with pytest.raises(packed.PackCorrupt, match=rf"compacted cache index {path} is unusable: "):
        packed.Packed(path)
    with caplog.at_level("WARNING"):
        fresh = CallCache(tmp_path)
        assert [fresh.get(k) for k in keys] == [_rec(i) for i in range(25)]  # read by a scan of its data
    assert f"compacted cache index {path} is unusable" in caplog.text
    assert main(["verify", "--root", str(tmp_path)]) == 1
    assert f"corrupt: {path} (its index is unusable" in capsys.readouterr().out
    assert main(["verify", "--remove", "--root", str(tmp_path)]) == 0  # its records rewritten into a segment
    assert not path.exists() and main(["verify", "--root", str(tmp_path)]) == 0
    assert compact(CallCache(tmp_path)).records == 25
    assert [CallCache(tmp_path).get(k) for k in keys] == [_rec(i) for i in range(25)]


def test_a_live_writers_segment_is_kept_and_read_from_where_compaction_stopped(tmp_path):
    live = CallCache(tmp_path)
    live.put_many([(_key(i, "l"), _rec(i), None) for i in range(10)])  # its segment stays open (and locked)
    report = compact(CallCache(tmp_path), min_age_s=0)
    ((seg_path, why),) = report.kept
    assert "still running" in why and seg_path.exists()
    live.put_many([(_key(i, "l"), _rec(i), None) for i in range(10, 14)])
    fresh = CallCache(tmp_path)
    assert [fresh.get(_key(i, "l")) for i in range(14)] == [_rec(i) for i in range(14)]
    assert maintenance.stats(fresh).entries == 14
    live.close()
    assert compact(CallCache(tmp_path)).kept == [] and not seg_path.exists()


def test_migrate_both_ways_keeps_every_record_and_leaves_the_corrupt_one(tmp_path, capsys):
    keys = [_key(i, "m") for i in range(12)]
    files = CallCache(tmp_path, layout="files")
    for i, k in enumerate(keys):
        files.put(k, _rec(i))
    bad = files.path_for(keys[0])
    bad.write_bytes(bad.read_bytes()[:20])
    assert main(["migrate", "--to", "segments", "--root", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"corrupt, left in place: {bad}" in out and "migrated 11 entries to segments" in out
    assert [p for p in tmp_path.glob("??/*.json")] == [bad]
    c = CallCache(tmp_path)
    assert [c.get(k) for k in keys[1:]] == [_rec(i) for i in range(1, 12)]
    bad.unlink()
    assert main(["compact", "--root", str(tmp_path)]) == 0
    assert main(["migrate", "--to", "files", "--root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "migrated 11 entries to files" in out and "JUDGEBENCH_CACHE_LAYOUT=files" in out
    assert sorted(p.stem for p in tmp_path.glob("??/*.json")) == sorted(keys[1:])
    assert not list((tmp_path / "segments").glob("*.seg")) and not list((tmp_path / "segments").glob("*.jbc"))
    assert [CallCache(tmp_path).get(k) for k in keys[1:]] == [_rec(i) for i in range(1, 12)]
    assert main(["migrate", "--to", "files", "--root", str(tmp_path)]) == 0  # again: nothing to move
    assert "migrated 0 entries" in capsys.readouterr().out
