"""An LLM judge = prompt template + backend + the persistent call cache.

Every answer is written to the cache before it is used, so a killed job loses only its
in-flight calls and a rerun of the same grid makes no call at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from judgebench.cache.store import CallCache
from judgebench.judges.base import Judge, JudgeResult, JudgeUsage
from judgebench.judges.parsing import parse_label, score_count
from judgebench.llm.batch_api.batch import run_batch
from judgebench.llm.batch_api.batch_store import BatchStore
from judgebench.llm.prompts import PromptTemplate, load_prompt
from judgebench.llm.remote.api import APIBackend
from judgebench.llm.remote.calls import Call, api_call_key, run_cached
from judgebench.locks import exclusive

log = logging.getLogger("judgebench")


@dataclass
class PlannedCall:
    query_id: str
    doc_id: str
    prompt: str
    key: str


@dataclass
class JudgePlan:
    """What judging the label set would cost now: printed by dry_run before anything is spent."""

    pairs: int
    cached: int
    to_call: list[PlannedCall]
    est_input_tokens: int
    est_output_tokens: int
    est_cost_usd: float
    in_batches: int = 0  # prompts in a saved batch (batch mode): a rerun resumes it and pays nothing for them
    unknown_batches: int = 0  # saved batches written by hand without their prompts: resumed first


@dataclass
class LLMJudge(Judge):
    backend: APIBackend = None
    prompt: str = "umbrela_bing"
    system: str | None = None
    cache_dir: str = ".cache/judgebench"
    parse_attempts: int = 3  # re-asks for an answer without a parsable score
    retry_unparsable: bool = False  # also re-ask cached answers that never gave a score
    progress: bool = True
    base_url: str | None = None  # copied into the backend by the config; here so `judge.base_url=` reads well
    _template: PromptTemplate | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self._template = load_prompt(self.prompt)
        self.cache = CallCache(Path(self.cache_dir) / "calls")

    @property
    def prompt_version(self) -> str:
        return self._template.version

    def key_for(self, prompt: str) -> str:
        return api_call_key(self.backend, self.prompt_version, prompt, self.system)

    def render(self, pairs: pd.DataFrame, dataset, texts: dict[str, str]) -> list[PlannedCall]:
        out = []
        for q, d in zip(pairs["query_id"], pairs["doc_id"]):
            prompt = self._template.render(query=dataset.queries[q], passage=texts[d])
            out.append(PlannedCall(q, d, prompt, self.key_for(prompt)))
        return out

    def plan(self, pairs: pd.DataFrame, dataset, texts: dict[str, str]) -> JudgePlan:
        calls = self.render(pairs, dataset, texts)
        todo = [c for c in calls if c.key not in self.cache]
        saved, unknown = (
            BatchStore(Path(self.cache_dir) / "batches").pending(self.backend.backend)
            if self.backend.mode == "batch"
            else (set(), 0)
        )
        in_batches = sum(1 for c in todo if c.key in saved)
        todo = [c for c in todo if c.key not in saved]
        n_in = sum(len(c.prompt) // 4 for c in todo)  # ~4 characters per token
        n_out = len(todo) * 8
        # thinking: at most its allowance per call (a budget, or the reserve of a level), an upper bound
        cost = self.backend.cost(
            n_in, n_out, batch=self.backend.mode == "batch", thinking_tokens=len(todo) * self.backend.thinking_allowance
        )
        return JudgePlan(len(calls), len(calls) - len(todo) - in_batches, todo, n_in, n_out, cost, in_batches, unknown)

    def _label_set_turn(self, calls: list[PlannedCall]):
        """Jobs about to call the API for the same label set take turns (``locks.exclusive``): the first one pays,
        the others wait and then find its answers in the cache, instead of all paying for every pair (8 jobs of
        one grid started together made 4x the calls)."""
        digest = hashlib.sha256("\n".join(sorted(c.key for c in calls)).encode()).hexdigest()[:32]
        return exclusive(
            Path(self.cache_dir) / "locks",
            f"label-set-{digest}",
            f"judge {self.name}: another job is judging this label set; waiting for it",
        )

    def refused_key(self, result: JudgeResult) -> str | None:
        """When every failed pair was the server refusing the key (401, 403, Gemini's 400 "API key not valid"), what to
        fix, naming the key's variable (never its value); None otherwise."""
        failed = result.failed
        if failed.empty:
            return None
        refused = failed["error"].isin(["401", "403"]) | (
            (failed["error"] == "400") & failed["message"].str.contains("API key")
        )
        if not refused.all():
            return None
        env = next((n for n in self.backend.key_envs if os.environ.get(n)), None) or " or ".join(self.backend.key_envs)
        return (
            f"the server refused the API key in {env} on every one of them "
            f"({', '.join(sorted(set(failed['error'])))}): "
            f"set a valid key in {' or '.join(self.backend.key_envs)} and rerun"
        )

    def judge(self, pairs: pd.DataFrame, dataset, texts: dict[str, str]) -> JudgeResult:
        calls = self.render(pairs, dataset, texts)
        usage = JudgeUsage()
        todo = [c for c in calls if c.key not in self.cache]
        with self._label_set_turn(calls) if todo else contextlib.nullcontext():
            self.cache.refresh()  # another job may have judged them while we waited
            todo = [c for c in todo if c.key not in self.cache]
            usage.calls_cached = len(calls) - len(todo)
            if todo:
                log.info(
                    "judge %s: %d of %d pairs not in the cache, calling %s/%s",
                    self.name,
                    len(todo),
                    len(calls),
                    self.backend.backend,
                    self.backend.model,
                )
            meta = {"backend": self.backend.backend, "model": self.backend.model, "prompt_version": self.prompt_version}
            jobs = [Call(c.key, c.prompt) for c in calls]
            if (
                self.backend.mode == "batch"
            ):  # one batch job per provider limit, resumed by a rerun (llm/batch_api/batch.py)
                records, failures = run_batch(
                    self.backend,
                    self.cache,
                    jobs,
                    meta=meta,
                    state_dir=Path(self.cache_dir) / "batches",
                    system=self.system,
                    parse=parse_label,
                    progress=self.progress,
                    desc=f"judging ({self.name})",
                    reask_unparsed=self.retry_unparsable,
                    grades=True,
                )
            else:
                records, failures = run_cached(
                    self.backend,
                    self.cache,
                    jobs,
                    meta=meta,
                    system=self.system,
                    parse=parse_label,
                    parse_attempts=self.parse_attempts,
                    progress=self.progress,
                    desc=f"judging ({self.name})",
                    reask_unparsed=self.retry_unparsable,
                    grades=True,
                )
        stats = self.backend.stats
        usage.requests, usage.retries, usage.reasks = stats.requests, stats.retries, stats.reasks
        usage.batches = stats.batches
        usage.calls_made = sum(1 for c in todo if c.key in records)
        errors = dict(stats.errors)

        rows, failed = [], []
        new = {c.key for c in todo}
        for c in calls:
            rec = records.get(c.key)
            if rec is None:
                kind, message = failures.get(c.key, ("missing", "no answer"))
                failed.append((c.query_id, c.doc_id, "", kind, message))
                continue
            thinking = rec.get("thinking_tokens", 0)
            cost = self.backend.cost(
                rec["input_tokens"], rec["output_tokens"], batch=bool(rec.get("batch_id")), thinking_tokens=thinking
            )
            usage.cost_usd_labels += cost
            if c.key in new:
                usage.cost_usd += cost
                usage.input_tokens += rec["input_tokens"]
                usage.output_tokens += rec["output_tokens"]
                usage.thinking_tokens += thinking
            usage.answers_multiple_scores += score_count(rec["text"]) > 1
            label = parse_label(rec["text"])  # the answer is the truth: a cached entry follows today's parsing rule
            if label is None:
                failed.append((c.query_id, c.doc_id, rec["text"], "unparsable", "no parsable score in the answer"))
                continue
            rows.append((c.query_id, c.doc_id, label, rec["text"]))
        unused = (
            stats.unused_tokens
        )  # paid answers that gave no record (cut off at max_output_tokens): spent all the same
        if unused:
            usage.input_tokens += unused["input"]
            usage.output_tokens += unused["output"]
            usage.thinking_tokens += unused["thinking"]
            usage.cost_usd += self.backend.cost(unused["input"], unused["output"], thinking_tokens=unused["thinking"])
        errors["unparsable_final"] = sum(1 for f in failed if f[3] == "unparsable")
        usage.errors = {k: v for k, v in errors.items() if v}
        usage.calls_failed = len(failed)
        labels = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "raw"])
        failed_df = pd.DataFrame(failed, columns=["query_id", "doc_id", "raw", "error", "message"])
        if failed:
            log.warning(
                "judge %s: %d of %d pairs have no label (%s)",
                self.name,
                len(failed),
                len(calls),
                failed_df["error"].value_counts().to_dict(),
            )
        return JudgeResult(labels=labels, failed=failed_df, usage=usage)
