"""RankT5: the first decoder step's logit of <extra_id_10> on "Query: {query} Document: {doc}"."""

from __future__ import annotations

from dataclasses import dataclass

from judgebench.llm.models import local_key
from judgebench.rankers.local_base import PointwiseRanker

RANKT5_PROMPT = "Query: {query} Document: {passage}"


@dataclass
class RankT5Ranker(PointwiseRanker):
    method: str = "rankt5"
    prompt: str = RANKT5_PROMPT
    score_token: str = "<extra_id_10>"

    def key(self, query: str, passage: str) -> str:
        prompt = self.prompt.format(query=query, passage=passage)
        return local_key(self.spec.model_id, "rankt5", "rankt5@1", prompt, token=self.score_token)

    def score_batch(self, payloads):
        model = self.local_model()
        if model.kind != "seq2seq":
            raise ValueError(f"RankT5 needs an encoder-decoder (T5) model; {self.spec.model} is {model.kind}")
        token = model.token_id(self.score_token)
        prompts = [model.render(self.prompt, {"query": q, "passage": p}, "passage")[0] for q, p in payloads]
        logits = model.first_step_logits(prompts, [token])
        return [{"score": float(v[0])} for v in logits]
