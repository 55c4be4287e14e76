"""The judge contract: labels for the label set, plus how many calls and tokens it cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import pandas as pd

from judgebench.label_scale import graded

LABEL_COLUMNS = ["query_id", "doc_id", "relevance", "raw"]


@dataclass
class JudgeUsage:
    calls_made: int = 0  # distinct prompts answered by the model in this job (retries and re-asks not counted)
    calls_cached: int = 0
    calls_failed: int = 0  # label-set pairs left without a label
    input_tokens: int = 0
    output_tokens: int = 0  # the answers' tokens
    thinking_tokens: int = 0  # tokens the model spent thinking before answering (billed at the output price)
    cost_usd: float = 0.0  # what this job paid (cached answers cost nothing now)
    cost_usd_labels: float = 0.0  # what the labels cost when they were first made
    requests: int = 0  # HTTP requests sent: calls + retries + re-asks
    retries: int = 0  # requests repeated after a transient error (429, 5xx, timeout)
    reasks: int = 0  # requests repeated because the answer had no parsable score
    batches: int = 0  # batch jobs submitted (judge.backend.mode=batch)
    answers_multiple_scores: int = 0  # answers holding more than one "final score" (they must agree, see parsing.py)
    truncated: int = 0  # passages cut to fit the model's context (local judges), counted from the labels' records
    errors: dict[str, int] = field(default_factory=dict)  # by kind: 429, 5xx, timeout, malformed, unparsable

    def as_metrics(self) -> dict[str, float]:
        out = {k: v for k, v in self.__dict__.items() if k != "errors"}
        out.update({f"errors_{k}": v for k, v in sorted(self.errors.items())})
        return out


@dataclass
class JudgeResult:
    labels: pd.DataFrame  # LABEL_COLUMNS; only pairs with a valid label
    failed: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["query_id", "doc_id", "raw", "error"]))
    usage: JudgeUsage = field(default_factory=JudgeUsage)

    @property
    def qrels(self) -> pd.DataFrame:
        return self.labels[["query_id", "doc_id", "relevance"]]


@dataclass
class Judge:
    name: str
    family: str
    model: str
    # False for judges that never read a passage (human qrels, simulated, labels from a file): they can
    # judge datasets that have no passage texts (labels-only experiments).
    reads_texts: ClassVar[bool] = True

    def judge(self, pairs: pd.DataFrame, dataset, texts: dict[str, str]) -> JudgeResult:
        """Label every (query_id, doc_id) in pairs; failures are reported, never turned into labels."""
        raise NotImplementedError

    def label_scale(self, relevant_from: int = 2):
        """The scale of its labels (label_scale.py): graded 0-3 unless the judge declares another (file judges:
        ``judge.scale``). LLM judges keep it: their prompts ask for a 0-3 final score, the only answer
        judges/parsing.py accepts."""
        return graded(relevant_from)

    def input_files(self) -> list:
        """Files it reads when it judges, not when it is built (those are recorded then, identity/files_read.py): their
        contents join the resume key, computed before any judging."""
        return []
