"""Pairwise ranking prompting (PRP). Every comparison is asked in both orders:
a consistent answer gives the winner 1 point, an inconsistent (or failed) one 0.5 to each.

Variants: all pairs (the paper's, n(n-1) prompts a query), a sliding window of k bottom-up
passes, and sorting-based top-k (a comparison sort / heap on the same cached comparator).
Local models compare the log-probs of " A" and " B" after the forced prefix "Passage"; API models
generate, and an answer naming neither passage is a recorded failure, never a silent "A".

Because both orders are asked, every ranking also measures the model's order bias (:func:`order_statistics`):
the share of pairs whose two answers prefer the same passage, and the share of answers naming the first one.
"""

from __future__ import annotations

import functools
import heapq
import logging
import math
import re
from collections import Counter
from dataclasses import dataclass
from itertools import permutations
from typing import Any

import pandas as pd

from judgebench.exceptions import ConfigError
from judgebench.llm.local.models import cached_model_scores, transformers_key_maker
from judgebench.llm.local.prefix_cache import text_before
from judgebench.llm.prompts import fill
from judgebench.llm.remote.calls import Call, api_call_key, run_cached
from judgebench.rankers.model_ranker import ModelRanker

PRP_PROMPT = (
    'Given a query "{query}", which of the following two passages is more relevant to the query?\n\n'
    'Passage A: "{doc1}"\n\nPassage B: "{doc2}"\n\nOutput Passage A or Passage B:'
)
PRP_VERSION = "prp@1"
log = logging.getLogger("judgebench")
ANSWER = re.compile(r"passage\s*([AB])\b", re.IGNORECASE)


def parse_prp(text: str | None) -> str | None:
    """ "A" or "B" when the answer names exactly one of them."""
    found = {m.upper() for m in ANSWER.findall(text or "")}
    if len(found) == 1:
        return found.pop()
    bare = (text or "").strip().strip(".*\"' ").upper()
    return bare if bare in ("A", "B") else None


def points(pref_ij: str | None, pref_ji: str | None) -> tuple[float, float]:
    """Points for (i, j) from the answers to (i first) and (j first)."""
    if pref_ij == "A" and pref_ji == "B":
        return 1.0, 0.0
    if pref_ij == "B" and pref_ji == "A":
        return 0.0, 1.0
    return 0.5, 0.5


@dataclass
class PRPRanker(ModelRanker):
    variant: str = "allpairs"  # allpairs | sliding | sort
    passes: int = 1  # sliding: bottom-up passes (k)
    top_k: int = 10  # sort: how many to bring to the top
    prompt: str = PRP_PROMPT
    candidates: tuple[str, str] = (" A", " B")
    forced_prefix: str = "Passage"
    backend: Any = None  # an API backend instead of a local model
    max_passage_chars: int = 2000  # API prompts: each passage cut to this many characters
    base_url: str | None = None  # copied into the backend by the config

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.variant not in ("allpairs", "sliding", "sort"):
            raise ConfigError(f"ranker.variant={self.variant!r}: expected allpairs, sliding or sort")
        if (self.spec is None) == (self.backend is None):
            raise ConfigError("PRP needs exactly one of ranker.model_spec (local model) or ranker.backend (API)")
        self.failed = 0
        self._prefs: dict[str, str | None] = {}
        self._pairs: dict[
            tuple, tuple[str | None, str | None]
        ] = {}  # (query, x, y), x < y: answers with x first, y first
        self._local_key = None  # prompt -> key of a local model's score (made at first use; settings are fixed by then)

    # -- asking -----------------------------------------------------------------------------------
    def _prompt(self, query: str, doc1: str, doc2: str) -> str:
        return fill(
            self.prompt, {"query": query, "doc1": doc1, "doc2": doc2}
        )  # PromptTemplate.render, without one per prompt

    def _key(self, prompt: str) -> str:
        if self.backend is not None:
            return api_call_key(self.backend, PRP_VERSION, prompt, None)
        if self._local_key is None:
            self._local_key = transformers_key_maker(
                self.spec, "prp", PRP_VERSION, candidates=list(self.candidates), prefix=self.forced_prefix
            )
        return self._local_key(prompt)

    def ask(self, triples: list[tuple[str, str, str]]) -> list[str | None]:
        """Preferences ("A", "B" or None) for (query, doc1, doc2) triples, batched and cached."""
        prompts = []
        for q, a, b in triples:
            if self.backend is not None:
                a, b = a[: self.max_passage_chars], b[: self.max_passage_chars]
            prompts.append(self._prompt(q, a, b))
        keys = [self._key(p) for p in prompts]
        missing = [(k, t, p) for k, t, p in zip(keys, triples, prompts) if k not in self._prefs]
        if missing:
            if self.backend is not None:
                records, failures = run_cached(
                    self.backend,
                    self.cache,
                    [Call(k, p) for k, _, p in missing],
                    meta={"backend": self.backend.backend, "model": self.backend.model},
                    parse=parse_prp,
                    progress=self.progress,
                    desc=f"prp ({self.name})",
                )
                self.scored_now += len(missing)
                for k, _, _ in missing:
                    rec = records.get(k)
                    self._prefs[k] = rec["parsed"] if rec else None
                    if rec is None or rec["parsed"] is None:
                        self.failed += 1
            else:
                items = [(k, (*t, p)) for k, t, p in missing]
                records, now = cached_model_scores(
                    self.spec, self.cache, items, self._score_local, self.progress, f"prp ({self.name})"
                )
                self.scored_now += now
                if now:
                    log.info("ranker %s: %s", self.name, self.load_model().batching_summary())
                for k, _, _ in missing:
                    rec = records[k]
                    self._prefs[k] = "A" if rec["lp_a"] > rec["lp_b"] else "B" if rec["lp_b"] > rec["lp_a"] else None
        return [self._prefs[k] for k in keys]

    def _score_local(self, asked: list[tuple[str, str, str, str]]) -> list[dict]:
        """Log-probs of "A" and "B" for (query, doc1, doc2, the prompt :meth:`ask` filled for its key) items."""
        model = self.load_model()
        fitted = self._fit_many(model, [a[:3] for a in asked], [a[3] for a in asked])
        # Every prompt of a query shares the instruction and the query; the n-1 prompts of a query that put
        # the same passage first share it too: score each from the key/value cache of what they share.
        prefixes: list[str | None] = [None] * len(fitted)
        if model.kind == "causal":  # an encoder reads the whole prompt: nothing to share
            firsts = Counter((f["query"], f["doc1"]) for _, f in fitted)
            prefixes = [
                text_before(self.prompt, f, "doc2" if firsts[(f["query"], f["doc1"])] > 1 else "doc1")
                for _, f in fitted
            ]
        lp = model.next_token_scores(
            [p for p, _ in fitted], list(self.candidates), forced_prefix=self.forced_prefix, prefixes=prefixes
        )
        return [{"lp_a": x, "lp_b": y} for x, y in lp.tolist()]  # Python floats, as float() gives them

    def _fit(self, model, query: str, doc1: str, doc2: str) -> tuple[str, dict[str, str]]:
        """Give both passages the same token budget (never cutting the query) so the prompt fits: (prompt, fields)."""
        return self._fit_many(model, [(query, doc1, doc2)])[0]

    def _fit_many(
        self, model, triples: list[tuple[str, str, str]], prompts: list[str] | None = None
    ) -> list[tuple[str, dict[str, str]]]:
        """:meth:`_fit` of many triples: each query's budget found once, each passage tokenised once (in bulk).
        ``prompts``: the triples' prompts as filled already (:meth:`ask`), reused where no passage is cut."""
        from judgebench.llm.local.encoding import ids_many

        per_doc: dict[str, int] = {}
        for query in dict.fromkeys(q for q, _, _ in triples):
            empty = model.render(
                self.prompt, {"query": query, "doc1": "", "doc2": ""}, "doc1", forced_prefix=self.forced_prefix
            )[0]
            budget = model.max_input_tokens - len(model.encode(empty, self.forced_prefix)[0]) - 4
            per_doc[query] = max(1, budget // 2)
        docs = list(dict.fromkeys(d for _, a, b in triples for d in (a, b)))
        doc_ids = dict(zip(docs, ids_many(model, docs, False)))
        cuts: dict[tuple[str, int], str] = {}

        def cut(text: str, limit: int) -> str:
            ids = doc_ids[text]
            if len(ids) <= limit:
                return text
            model.truncated += 1
            if (text, limit) not in cuts:
                cuts[(text, limit)] = model.tokenizer.decode(ids[:limit])
            return cuts[(text, limit)]

        fields = [{"query": q, "doc1": cut(a, per_doc[q]), "doc2": cut(b, per_doc[q])} for q, a, b in triples]
        if prompts is not None:  # a prompt whose passages are both uncut is the one already filled
            prompts = [
                p if f["doc1"] is a and f["doc2"] is b else None for p, f, (_, a, b) in zip(prompts, fields, triples)
            ]
        rendered = model.render_many(self.prompt, fields, "doc2", forced_prefix=self.forced_prefix, prompts=prompts)
        return [(r[0], f) for r, f in zip(rendered, fields)]

    def planned_prompts(self, dataset, texts):
        """What ranking would score, for the dry run's estimate: every ordered pair (all pairs), else an upper
        bound of the comparisons (sliding: passes x (n-1); sort: the heap's), not looked up in the cache."""
        from judgebench.llm.estimate.work_estimate import FIELD_MARK, PromptPlan

        head, _ = self.head_and_tail(dataset)

        def prompts():
            for qid, group in head.groupby("query_id", sort=False):
                query, docs = dataset.queries[qid], [texts[d] for d in group["doc_id"]]
                if self.variant == "allpairs":
                    for i, j in permutations(range(len(docs)), 2):
                        yield self._key(self._prompt(query, docs[i], docs[j])), query, (docs[i], docs[j])
                    continue
                for c in range(comparisons_bound(self.variant, len(docs), self.passes, self.top_k)):
                    x, y = docs[c % len(docs)], docs[(c + 1) % len(docs)]
                    yield None, query, (x, y)
                    yield None, query, (y, x)

        note = (
            ""
            if self.variant == "allpairs"
            else f"{self.variant}: an upper bound of its comparisons, not looked up in the cache"
        )
        return PromptPlan(
            prompts(),
            self._prompt(FIELD_MARK, FIELD_MARK, FIELD_MARK),
            self.forced_prefix,
            split_budget=True,
            note=note,
        )

    def compare(self, query: str, x: str, y: str, texts: dict[str, str]) -> tuple[float, float]:
        ij, ji = self.ask([(query, texts[x], texts[y]), (query, texts[y], texts[x])])
        self._record(query, x, y, ij, ji)
        return points(ij, ji)

    def _record(self, query: str, x: str, y: str, ij: str | None, ji: str | None) -> None:
        """Keep the two answers of a pair once (sliding passes and sorts ask some pairs again)."""
        self._pairs[(query, x, y) if x < y else (query, y, x)] = (ij, ji) if x < y else (ji, ij)

    def ranking_metrics(self) -> dict[str, float]:
        """Order bias of the ranking just computed: see :func:`order_statistics`."""
        return order_statistics(list(self._pairs.values()))

    # -- ranking ----------------------------------------------------------------------------------
    def rank(self, dataset, texts):
        self._pairs = {}
        head, tail = self.head_and_tail(dataset)
        if self.variant == "allpairs":
            scores = self._all_pairs(head, dataset, texts)
        else:
            scores = []
            for qid, group in head.groupby("query_id", sort=False):
                order = (
                    self._sliding(group, dataset, texts)
                    if self.variant == "sliding"
                    else self._sorted(group, dataset, texts)
                )
                rank_of = {d: i for i, d in enumerate(order)}
                scores += [float(len(order) - rank_of[d]) for d in group["doc_id"]]
        return self.combine(head.assign(score=scores), tail)

    def _all_pairs(self, head: pd.DataFrame, dataset, texts) -> list[float]:
        triples, index = [], []
        for qid, group in head.groupby("query_id", sort=False):
            docs = list(group["doc_id"])
            for i, j in permutations(range(len(docs)), 2):
                triples.append((dataset.queries[qid], texts[docs[i]], texts[docs[j]]))
                index.append((qid, docs[i], docs[j]))
        prefs = dict(zip(index, self.ask(triples)))
        total: dict[tuple[str, str], float] = {(q, d): 0.0 for q, d in zip(head["query_id"], head["doc_id"])}
        for (qid, di, dj), pref in prefs.items():
            if di < dj:
                self._record(qid, di, dj, pref, prefs[(qid, dj, di)])
                pi, pj = points(pref, prefs[(qid, dj, di)])
                total[(qid, di)] += pi
                total[(qid, dj)] += pj
        return [total[(q, d)] for q, d in zip(head["query_id"], head["doc_id"])]

    def _sliding(self, group: pd.DataFrame, dataset, texts) -> list[str]:
        order, query = list(group["doc_id"]), dataset.queries[group["query_id"].iloc[0]]
        for _ in range(self.passes):
            for i in range(len(order) - 2, -1, -1):
                upper, lower = self.compare(query, order[i], order[i + 1], texts)
                if lower > upper:
                    order[i], order[i + 1] = order[i + 1], order[i]
        return order

    def _sorted(self, group: pd.DataFrame, dataset, texts) -> list[str]:
        docs, query = list(group["doc_id"]), dataset.queries[group["query_id"].iloc[0]]

        def cmp(x: str, y: str) -> int:
            px, py = self.compare(query, x, y, texts)
            return -1 if px > py else 1 if py > px else 0

        top = heapq.nsmallest(min(self.top_k, len(docs)), docs, key=functools.cmp_to_key(cmp))
        return top + [d for d in docs if d not in set(top)]


def order_statistics(pairs: list[tuple[str | None, str | None]]) -> dict[str, float]:
    """Order bias from the answers (first order, swapped order) of each pair, "A" = the passage shown first.

    ``prp_order_consistency``: share of pairs whose two answers prefer the same passage ("A" then "B", or "B"
    then "A"); ``prp_first_position``: share of answers that pick the first position. A position-blind model
    has consistency 1 and first position 0.5; one that always says "A", 0 and 1 (over answered pairs,
    first = consistency / 2 + share of pairs answered "A" twice). Pairs with a failed answer are left out of
    both and counted (``prp_failed_pairs``). The same two shares as the position-consistency and
    position-bias measures of pairwise LLM judges (Zheng et al., "Judging LLM-as-a-Judge with MT-Bench and
    Chatbot Arena", NeurIPS 2023 Datasets and Benchmarks)."""
    answered = [(a, b) for a, b in pairs if a is not None and b is not None]
    consistent = sum(1 for a, b in answered if a != b)
    firsts = sum((a == "A") + (b == "A") for a, b in answered)
    n = len(answered)
    return {
        "prp_pairs": float(n),
        "prp_failed_pairs": float(len(pairs) - n),
        "prp_order_consistency": consistent / n if n else math.nan,
        "prp_first_position": firsts / (2 * n) if n else math.nan,
    }


def comparisons_bound(variant: str, n: int, passes: int, top_k: int) -> int:
    """Most comparisons a query's ranking asks (each is two prompts): sliding passes x (n-1); sort,
    heapq.nsmallest's."""
    if n < 2:
        return 0
    if variant == "sliding":
        return passes * (n - 1)
    k = min(top_k, n)
    log_k = max(1, math.ceil(math.log2(max(2, k))))
    if k >= n:  # nsmallest sorts the whole list
        return n * max(1, math.ceil(math.log2(n)))
    return 2 * k + (n - k) * (1 + 2 * log_k) + k * log_k
