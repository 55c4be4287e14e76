"""The files layout of the call cache (cache/entry_files.py): where an entry lives, which names are entries, an
atomic write that leaves nothing behind when the disk fails, and stale temp files removed by age only."""

from __future__ import annotations

import errno
import os
import time

import pytest

from judgebench.cache import entry_files
from judgebench.exceptions import CacheError

KEY = "ab" + "0" * 62


def test_an_entry_lives_in_the_folder_of_its_first_two_hex_digits(tmp_path):
    assert entry_files.entry_path(tmp_path, KEY) == tmp_path / "ab" / f"{KEY}.json"
    for bad in ("AB" + "0" * 62, KEY[:-1], 42):
        with pytest.raises(ValueError, match="not a cache key"):
            entry_files.entry_path(tmp_path, bad)


def test_only_entry_files_in_their_own_shard_are_keys(tmp_path):
    other = "cd" + "1" * 62
    for key in (KEY, other):
        entry_files.write_entry(entry_files.entry_path(tmp_path, key), b"{}", tmp_path, fsync=False)
    (tmp_path / "ab" / f"{other}.json").write_bytes(b"{}")  # in the wrong shard
    (tmp_path / "ab" / "notes.json").write_bytes(b"{}")
    (tmp_path / "abc").mkdir()  # not a shard
    (tmp_path / "abc" / f"{KEY}.json").write_bytes(b"{}")
    assert sorted(entry_files.file_keys(tmp_path)) == [KEY, other]
    assert entry_files.read_entry(tmp_path / "ab" / f"{KEY}.json") == b"{}"
    assert entry_files.read_entry(tmp_path / "ef" / f"{KEY}.json") is None


class _FullDisk:
    """`os` whose writes fail with ENOSPC after `after` bytes-writing calls."""

    def __init__(self, after: int) -> None:
        self.after = after

    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        if self.after <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.after -= 1
        return os.write(fd, data[:3])  # short writes: the loop must finish the file


def test_a_write_is_whole_or_absent_and_names_the_entry(tmp_path):
    path = entry_files.entry_path(tmp_path, KEY)
    entry_files.write_entry(path, b'{"a": 1}', tmp_path, fsync=True, os_module=_FullDisk(after=10))
    assert path.read_bytes() == b'{"a": 1}'  # three short writes
    with pytest.raises(CacheError, match=rf"cannot write cache entry {path}: \[Errno {errno.ENOSPC}\]"):
        entry_files.write_entry(path, b'{"a": 2}', tmp_path, fsync=False, os_module=_FullDisk(after=1))
    assert path.read_bytes() == b'{"a": 1}' and entry_files.temp_files(tmp_path) == []


def test_clean_temp_removes_only_stale_temp_files(tmp_path):
    (tmp_path / "ab").mkdir()
    fresh, stale = tmp_path / "ab" / ".x.1.aa.tmp", tmp_path / "ab" / ".y.2.bb.tmp"
    fresh.write_bytes(b"")
    stale.write_bytes(b"")
    old = time.time() - entry_files.STALE_TEMP_S - 1
    os.utime(stale, (old, old))
    assert entry_files.temp_files(tmp_path) == [fresh, stale]
    assert entry_files.clean_temp(tmp_path) == [stale]
    assert entry_files.temp_files(tmp_path) == [fresh]
