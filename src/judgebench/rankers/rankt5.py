"""RankT5: the first decoder step's logit of <extra_id_10> on "Query: {query} Document: {doc}"."""

from __future__ import annotations

from dataclasses import dataclass

from judgebench.exceptions import ConfigError
from judgebench.rankers.model_ranker import PointwiseRanker

RANKT5_PROMPT = "Query: {query} Document: {passage}"


@dataclass
class RankT5Ranker(PointwiseRanker):
    method: str = "rankt5"
    prompt: str = RANKT5_PROMPT
    score_token: str = "<extra_id_10>"

    prompt_version: str = "rankt5@1"

    def key_params(self) -> dict:
        return {"token": self.score_token}

    def score_batch(self, payloads):
        model = self.load_model()
        if model.kind != "seq2seq":
            raise ConfigError(f"RankT5 needs an encoder-decoder (T5) model; {self.spec.model} is {model.kind}")
        token = model.token_id(self.score_token)
        prompts = [model.render(self.prompt, {"query": q, "passage": p}, "passage")[0] for q, p in payloads]
        logits = model.first_step_logits(prompts, [token])
        return [{"score": float(v[0])} for v in logits]
