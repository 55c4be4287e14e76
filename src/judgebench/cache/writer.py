"""Store answers in groups, from a background thread or the event loop, never giving up "stored before it is used".

A coroutine hands its answer to :meth:`GroupWriter.put` and resumes only once the answer is on disk (page cache,
or fsync'd with ``fsync``), so a killed job still loses at most the answers in flight. What changes is who pays:
the event loop only serialises the record (CPU it would spend in any thread, under the GIL); one thread does
the file-system calls for everything queued while it wrote the previous group (one ``write`` per group in the
segments layout), and wakes the event loop once per group rather than once per answer, which is what an
executor job per answer (``asyncio.to_thread``) costs on a busy loop.

On the default cache (segments, no fsync) a group is one ``write`` of a few kilobytes into the page cache, cheaper
than handing it to a thread: a thread waits for the GIL (up to ``sys.getswitchinterval()``, 5 ms) while the loop
is busy, and a call holds its concurrency slot until its answer is stored, so that wait cost every slot ~15 ms
per answer (``benchmarks.versus``). There the loop writes the group itself, once per loop iteration, after every
callback that iteration ran: the answers that arrived together still go out in one ``write``. With fsync, or the
one-file-per-entry layout (a create, write and rename per entry), the thread keeps the loop free.
"""

from __future__ import annotations

import asyncio
import queue
import threading
import time

from judgebench.cache.keys import envelope_bytes, is_key
from judgebench.cache.store import CallCache
from judgebench.exceptions import CacheError

MAX_GROUP = 256


class GroupWriter:
    """``async with GroupWriter(cache) as w: await w.put(key, record, meta)``; leaving the block stores what is left."""

    def __init__(self, cache: CallCache, max_group: int = MAX_GROUP, inline: bool | None = None) -> None:
        self.cache, self.max_group = cache, max_group
        self.inline = cache.layout == "segments" and not cache.fsync if inline is None else inline
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="judgebench-cache-writer", daemon=True)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list = []  # inline: what this loop iteration handed over
        self.groups = 0  # groups written (how well answers were batched)

    async def __aenter__(self) -> GroupWriter:
        self._loop = asyncio.get_running_loop()
        if not self.inline:
            self._thread.start()
        return self

    async def __aexit__(self, *exc) -> None:
        if self.inline:
            self._flush()
            return
        self._queue.put(None)
        await asyncio.to_thread(self._thread.join)

    async def put(self, key: str, record: dict, meta: dict | None = None) -> None:
        """Return once ``record`` is stored; raise CacheError if it could not be."""
        if not isinstance(record, dict):
            raise TypeError("record must be a dict")
        if not is_key(key):  # a bad key fails here, in the caller
            self.cache.path_for(key)
        body = envelope_bytes(key, record, meta, time.time())[1]
        done = self._loop.create_future()
        if self.inline:
            if not self._pending:
                self._loop.call_soon(self._flush)
            self._pending.append((key, body, done))
        else:
            self._queue.put((key, body, done))
        await done

    def _flush(self) -> None:
        while self._pending:
            group, self._pending = self._pending[: self.max_group], self._pending[self.max_group :]
            _settle(group, *self._write(group))

    def _write(self, group: list) -> tuple[int, BaseException | None]:
        """(how many of ``group`` were stored, the error that stopped the rest)."""
        try:
            self.cache.write_group([(key, body) for key, body, _ in group])
        except CacheError as e:
            return getattr(e, "stored_before", 0), e
        except BaseException as e:  # never leave a caller waiting
            return 0, e
        finally:
            self.groups += 1
        return len(group), None

    def _run(self) -> None:
        closing = False
        while not closing:
            item = self._queue.get()
            if item is None:
                break
            group = [item]
            while len(group) < self.max_group:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    closing = True
                    break
                group.append(item)
            stored, error = self._write(group)
            try:
                self._loop.call_soon_threadsafe(_settle, group, stored, error)
            except RuntimeError:  # the loop is gone (interrupted run): nobody waits any more
                pass


def _settle(group: list, stored: int, error: BaseException | None) -> None:
    for i, (_key, _body, done) in enumerate(group):
        if done.done():  # its caller was cancelled; the answer was stored anyway
            continue
        if i < stored:
            done.set_result(None)
        elif i == stored:
            done.set_exception(error)
        else:
            done.set_exception(CacheError(str(error)))
