"""RankT5: the first decoder step's logit of <extra_id_10> on "Query: {query} Document: {doc}"."""

from __future__ import annotations

from dataclasses import dataclass

from judgebench.llm.models import cached_scores, local_key
from judgebench.rankers.local_base import ModelRanker

RANKT5_PROMPT = "Query: {query} Document: {passage}"


@dataclass
class RankT5Ranker(ModelRanker):
    prompt: str = RANKT5_PROMPT
    score_token: str = "<extra_id_10>"

    def rank(self, dataset, texts):
        head, tail = self.head_and_tail(dataset)
        scores = self.score_pairs(list(zip(head["query_id"], head["doc_id"])), dataset, texts)
        return self.combine(head.assign(score=scores), tail)

    def score_pairs(self, pairs, dataset, texts) -> list[float]:
        """Pointwise scores, also used by the content-bias experiment (original vs rewritten text)."""
        items = []
        for q, d in pairs:
            query, passage = dataset.queries[q], texts[d]
            prompt = self.prompt.format(query=query, passage=passage)
            items.append((local_key(self.spec.model_id, "rankt5", "rankt5@1", prompt, token=self.score_token), (query, passage)))
        records, self.scored_now = cached_scores(
            self.cache, items, self._score, meta={"backend": "transformers", "model": self.spec.model_id},
            chunk=max(8, self.spec.batch_size * 4), progress=self.progress, desc=f"rankt5 ({self.name})",
        )
        return [records[k]["score"] for k, _ in items]

    def _score(self, payloads):
        model = self.local_model()
        if model.kind != "seq2seq":
            raise ValueError(f"RankT5 needs an encoder-decoder (T5) model; {self.spec.model} is {model.kind}")
        token = model.token_id(self.score_token)
        prompts = [model.render(self.prompt, {"query": q, "passage": p}, "passage")[0] for q, p in payloads]
        logits = model.first_step_logits(prompts, [token])
        return [{"score": float(v[0])} for v in logits]
