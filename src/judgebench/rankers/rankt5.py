"""RankT5: the first decoder step's logit of <extra_id_10> on "Query: {query} Document: {doc}"."""

from __future__ import annotations

from dataclasses import dataclass

from judgebench.exceptions import ConfigError
from judgebench.rankers.prompted import PromptedRanker


@dataclass
class RankT5Ranker(PromptedRanker):
    """Scores with an encoder-decoder's logit of one token; the token is part of the cache key."""

    score_token: str = "<extra_id_10>"
    method: str = "rankt5"
    prompt: str = "Query: {query} Document: {passage}"
    prompt_version: str = "rankt5@1"

    def key_params(self) -> dict:
        return {"token": self.score_token}

    def score_prompts(self, model, prompts, prefixes):  # an encoder reads the whole prompt: nothing to share
        if model.kind != "seq2seq":
            raise ConfigError(f"RankT5 needs an encoder-decoder (T5) model; {self.spec.model} is {model.kind}")
        logits = model.next_token_scores(prompts, [self.score_token], normalise=False)
        return [
            {"score": v} for v in logits[:, 0].tolist()
        ]  # Python floats, as float(v) gives, without a numpy scalar each
