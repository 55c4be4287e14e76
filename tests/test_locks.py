"""locks.exclusive: jobs take turns on shared work; a dead holder blocks nobody; no lock means going on alone."""

import errno
import fcntl
import logging
import multiprocessing
import os
import signal
import threading
import time

from judgebench.locks import exclusive


def test_holders_take_turns_and_a_waiter_says_so(tmp_path, caplog):
    spans, lock = [], threading.Lock()

    def work(i):
        with exclusive(tmp_path / "locks", "label-set-x", f"job {i}: another job is labelling; waiting") as held:
            start = time.monotonic()
            time.sleep(0.2)
            with lock:
                spans.append((start, time.monotonic(), held))

    with caplog.at_level(logging.INFO, logger="judgebench"):
        threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    spans.sort()
    assert len(spans) == 3 and all(held for _, _, held in spans)
    assert all(a_end <= b_start for (_, a_end, _), (b_start, _, _) in zip(spans, spans[1:]))  # never two at once
    waits = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
    assert len(waits) == 2 and all(str(tmp_path / "locks" / "label-set-x.lock") in w for w in waits), waits


def _hold_forever(lock_dir, ready):
    with exclusive(lock_dir, "ranking-k"):
        ready.set()
        time.sleep(60)


def test_a_killed_holder_blocks_nobody(tmp_path):
    ctx = multiprocessing.get_context("fork")
    ready = ctx.Event()
    holder = ctx.Process(target=_hold_forever, args=(tmp_path, ready))
    holder.start()
    try:
        assert ready.wait(20)
        taken = []
        waiter = threading.Thread(target=lambda: taken.append(exclusive(tmp_path, "ranking-k").__enter__()))
        waiter.start()
        waiter.join(0.5)
        assert not taken  # held by the live process
        os.kill(holder.pid, signal.SIGKILL)
        waiter.join(10)
        assert taken == [True]
    finally:
        holder.kill()
        holder.join()


def test_no_lock_possible_means_going_on_without_it(tmp_path, caplog, monkeypatch):
    (tmp_path / "file").write_text("")
    with caplog.at_level(logging.WARNING, logger="judgebench"):
        with exclusive(tmp_path / "file" / "locks", "x") as held:  # the lock folder cannot be made
            assert held is False
        with exclusive(None, "x") as held:
            assert held is False

        def no_lockd(fd, op):  # NFS without lockd
            raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))

        monkeypatch.setattr(fcntl, "flock", no_lockd)
        with exclusive(tmp_path / "locks", "y") as held:
            assert held is False
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 2 and all("going on without it" in w for w in warned), warned
    assert str(tmp_path / "locks" / "y.lock") in warned[1] and os.strerror(errno.ENOLCK) in warned[1]
