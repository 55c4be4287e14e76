"""Progress of a job's stages (rewrite, rank, judge): one bar per stage on a terminal, a plain line every
few seconds anywhere else.

A SLURM log or a redirected stderr is not a terminal: a tqdm bar there writes thousands of carriage-return
states into one unreadable line. Where the stream is not a tty, a stage writes a line such as
``judge gpt_4o_mini: 1200/5116 pairs (23%), 41.2/s, ETA 1m35s`` at most every ``interval_s`` seconds, and a
last one when it ends.

The inner loops (cached API calls, cached local scoring, BM25 search) count through `counter()`. Inside a
`stage()` their counts go to that stage's one bar, so a stage shows one bar however many calls, rounds or
batches it makes; outside a stage (a library call) each loop gets a bar of its own. Work found in the cache
is counted as done but left out of the rate and the ETA, which would otherwise promise a rerun's speed.
"""

from __future__ import annotations

import functools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import IO

from tqdm import tqdm

DEFAULT_INTERVAL_S = 30.0


def format_duration(seconds: float) -> str:
    """'45s', '1m35s', '2h03m': short enough for a log line, exact enough for an ETA."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def _is_tty(stream: IO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


class Progress:
    """One counter shown as a tqdm bar on a terminal, as periodic log lines elsewhere, or not at all.

    Nothing is shown until something is counted (a stage with no work prints nothing). `clock` is injectable
    so that the timing of the log lines can be tested exactly.
    """

    def __init__(
        self,
        desc: str,
        total: int | None = None,
        unit: str | None = None,
        *,
        enabled: bool = True,
        interval_s: float = DEFAULT_INTERVAL_S,
        stream: IO | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.enabled, self.interval_s, self.clock = enabled, float(interval_s), clock
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _is_tty(self.stream)
        self.n = self.cached = 0
        self.started = self.last_line = clock()
        self._bar: tqdm | None = None
        self._closed = False

    # -- counting ---------------------------------------------------------------------------------
    def add_total(self, k: int, unit: str | None = None) -> None:
        """Announce k more units of work (a stage learns its size from the loops that run inside it)."""
        self.total = (self.total or 0) + k
        self.unit = self.unit or unit
        if self._bar is not None:
            self._bar.total = self.total
            self._bar.refresh()

    def skip(self, k: int) -> None:
        """k units found done (in the cache): counted, but not part of the rate."""
        if k <= 0:
            return
        if self._shown():
            self._bar.initial += k  # tqdm's average rate is (n - initial) / elapsed with smoothing=0
            self._bar.update(k)
        self.n += k
        self.cached += k

    def update(self, k: int = 1) -> None:
        if self._shown():
            self._bar.update(k)
        self.n += k
        if self.enabled and not self.tty:
            now = self.clock()
            if now - self.last_line >= self.interval_s:
                self.last_line = now
                self._write(self.line(now))

    def close(self, ended: str = "done") -> None:
        """End the counter: the bar is closed; in a log, a last line says how much was done and in what time
        (`ended="stopped"` when the stage raised)."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
        elif self.enabled and not self.tty and self.n:
            self._write(self.line(self.clock(), ended=ended))

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- showing ----------------------------------------------------------------------------------
    def rate(self, now: float) -> float:
        elapsed = now - self.started
        return (self.n - self.cached) / elapsed if elapsed > 0 else 0.0

    def line(self, now: float, ended: str | None = None) -> str:
        """e.g. 'judge gpt_4o_mini: 1200/5116 pairs (23%), 41.2/s, ETA 1m35s'."""
        unit = self.unit or "items"
        done = f"{self.n}/{self.total} {unit} ({100 * self.n // self.total}%)" if self.total else f"{self.n} {unit}"
        parts = [f"{self.desc}: {done}"]
        if self.cached:
            parts.append(f"{self.cached} cached")
        rate = self.rate(now)
        parts.append(f"{rate:.1f}/s")
        if ended:
            parts.append(f"{ended} in {format_duration(now - self.started)}")
        elif self.total and rate > 0:
            parts.append(f"ETA {format_duration((self.total - self.n) / rate)}")
        return ", ".join(parts)

    def _shown(self) -> bool:
        """On a terminal: the bar, started at the first count (so that empty stages print nothing)."""
        if self._bar is None and self.enabled and self.tty and not self._closed:
            self._bar = tqdm(
                total=self.total,
                desc=self.desc,
                unit=f" {self.unit or 'items'}",
                file=self.stream,
                smoothing=0,
                dynamic_ncols=True,
                initial=self.n,
            )
        return self._bar is not None

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()


class _Part:
    """An inner loop's view of the stage it runs in: counts go to the stage's bar; closing ends nothing."""

    def __init__(self, stage: Progress) -> None:
        self.stage = stage

    def skip(self, k: int) -> None:
        self.stage.skip(k)

    def update(self, k: int = 1) -> None:
        self.stage.update(k)

    def close(self) -> None:
        pass

    def __enter__(self) -> _Part:
        return self

    def __exit__(self, *exc) -> None:
        pass


_current: ContextVar[Progress | None] = ContextVar("judgebench_progress_stage", default=None)


@contextmanager
def stage(
    desc: str,
    *,
    enabled: bool = True,
    interval_s: float = DEFAULT_INTERVAL_S,
    stream: IO | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Progress]:
    """One stage of a job (e.g. 'judge gpt_4o_mini'): every `counter()` opened inside counts into its one bar.
    `enabled=False` (the `progress=false` setting) silences the stage and every loop inside it."""
    bar = Progress(desc, enabled=enabled, interval_s=interval_s, stream=stream, clock=clock)
    token = _current.set(bar)
    try:
        yield bar
    except BaseException:
        bar.close("stopped")
        raise
    finally:
        _current.reset(token)
        bar.close()


def counter(desc: str, total: int, unit: str = "items", *, enabled: bool = True, cached: int = 0) -> Progress | _Part:
    """A loop's counter of `total` units, `cached` of them already done: the open stage's bar, or a bar of its own
    outside any stage. Inside a stage the stage's setting decides what is shown."""
    current = _current.get()
    if current is not None:
        current.add_total(total, unit)
        part: Progress | _Part = _Part(current)
    else:
        part = Progress(desc, total, unit, enabled=enabled)
    part.skip(cached)
    return part


@dataclass(frozen=True)
class StageSettings:
    """How a job's stages show their progress: its config's `progress` (false: silent) and
    `progress_interval_s`, read once so that a stage receives these two values, not the config."""

    enabled: bool = True
    interval_s: float = DEFAULT_INTERVAL_S

    @classmethod
    def from_config(cls, cfg) -> StageSettings:
        return cls(bool(cfg.get("progress", True)), float(cfg.get("progress_interval_s", DEFAULT_INTERVAL_S)))

    def stage(self, desc: str):
        return stage(desc, enabled=self.enabled, interval_s=self.interval_s)


@contextmanager
def library_bars_off() -> Iterator[None]:
    """Silence transformers' own bars (GGUF conversion, weight loading, shard writing) while a model loads: a
    stage shows one bar, and a finished inner bar left behind in a log reads as work still going on."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        yield
        return
    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:  # its GGUF reader draws a plain tqdm that ignores the switch above
        import transformers.modeling_gguf_pytorch_utils as gguf_reader
    except ImportError:
        gguf_reader = None
    plain = getattr(gguf_reader, "tqdm", None)
    if plain is not None:
        gguf_reader.tqdm = functools.partial(plain, disable=True)
    try:
        yield
    finally:
        if plain is not None:
            gguf_reader.tqdm = plain
        if was:
            hf_logging.enable_progress_bar()
