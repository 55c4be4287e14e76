"""What a provider's batch API gives batch mode: the contract (``BatchProvider``) and its lines, answers
and states. The providers (batch_openai.py, batch_gemini.py) implement it;
batch.py drives it without knowing which one it has.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

from judgebench.llm.remote.api import APIBackend


@dataclass
class BatchLine:
    key: str  # the call-cache key, also the line's custom_id / metadata key
    prompt: str


@dataclass
class LineAnswer:
    text: str
    input_tokens: int
    output_tokens: int
    thinking_tokens: int = 0


@dataclass
class LineError:
    kind: str
    message: str


@dataclass
class BatchStatus:
    state: str  # running | succeeded | failed | expired | cancelled
    provider_state: str  # as the provider says it (in_progress, JOB_STATE_RUNNING, ...)
    done: int | None = None  # lines finished so far, where the provider tells
    message: str = ""


class BatchProvider(ABC):
    """One provider's batch API, through the backend's open SDK client."""

    def __init__(self, backend: APIBackend, system: str | None) -> None:
        self.backend, self.system = backend, system

    @abstractmethod
    def line_bytes(self, line: BatchLine) -> int:
        """The line's size in the upload, for the provider's per-batch byte limit."""

    @abstractmethod
    async def submit(self, lines: list[BatchLine]) -> str:
        """Creates one batch job of ``lines``; returns its id."""

    @abstractmethod
    async def poll(self, batch_id: str) -> BatchStatus: ...

    @abstractmethod
    async def results(self, batch_id: str) -> dict[str, LineAnswer | LineError]:
        """The answered and the failed lines of a finished batch, by key (lines never run are absent)."""
