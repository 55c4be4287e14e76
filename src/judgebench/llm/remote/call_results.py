"""What a call to a remote model gives back, and what an API backend counts of its requests.

Why apart from the backends: the cached call loop (:mod:`judgebench.llm.remote.calls`), batch mode
(:mod:`judgebench.llm.batch_api.batch`) and the job's accounting read a :class:`Completion`, a :class:`CallFailed`
or the :class:`RequestStats` of every provider alike, without the SDK code of any.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


class CallFailed(Exception):
    """All attempts used up; the pair gets no label and is reported as failed."""

    def __init__(self, kind: str, message: str, attempts: int):
        super().__init__(f"{kind} after {attempts} attempt(s): {message}")
        self.kind, self.attempts = kind, attempts


@dataclass
class Completion:
    text: str
    input_tokens: int
    output_tokens: int  # the answer's tokens (thinking not included)
    latency_s: float
    attempts: int
    thinking_tokens: int = 0  # tokens the model spent thinking before the answer (billed as output)


@dataclass
class RequestStats:
    requests: int = 0  # HTTP requests sent, retries included
    ok: int = 0
    retries: int = 0
    reasks: int = 0  # answers without a parsable score asked again (each a new request)
    errors: Counter = field(default_factory=Counter)  # by kind: 429, 5xx, timeout, malformed, ...
    batches: int = 0  # batch jobs submitted (mode=batch; each of its lines counts as one request)
    # tokens of paid answers that became no record (cut off at max_output_tokens; the re-asked answers of a call
    # that then failed): spent all the same, so the job's tokens and cost count them
    unused_tokens: Counter = field(default_factory=Counter)  # "input", "output", "thinking"

    def spent_unused(self, n_in: int, n_out: int, n_think: int) -> None:
        self.unused_tokens.update({"input": n_in, "output": n_out, "thinking": n_think})
