"""RG, PRP and RankT5: their scoring arithmetic on tiny models whose answers we can predict."""

import math
from itertools import permutations
from pathlib import Path

import pandas as pd
import pytest
import torch

from judgebench.data.datasets import Dataset
from judgebench.llm.remote.api import OpenAIBackend
from judgebench.rankers.prp import PRP_PROMPT, PRPRanker, parse_prp, points
from judgebench.rankers.rankt5 import RankT5Ranker
from judgebench.rankers.rg import RG_PROMPT, RGRanker, rg_score
from judgebench.testing.fake_process import FakeLLMServer
from tiny_models import controlled_logits, log_softmax, tiny_controlled_causal, tiny_seq2seq

DOCS = {  # share of the marker word "good" differs per passage
    "d1": "cat good good good good",
    "d2": "cat dog",
    "d3": "good good tree water",
    "d4": "sun moon good river",
    "d5": "bad bad city music",
}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    return {
        "controlled": tiny_controlled_causal(
            root, bias={"Yes": 0.0, "No": 0.5, "A": 0.0, "B": 0.2}, slope={"Yes": 6.0, "No": -2.0, "A": 3.0}
        ),
        # attention concentrated near the end of the prompt: says "B" when the SECOND passage holds "good"
        "recency": tiny_controlled_causal(
            root, bias={"A": 2.0, "B": 0.0}, slope={"B": 300.0}, recency=0.3, name="tiny-recency"
        ),
        "t5": tiny_seq2seq(root),
    }


@pytest.fixture
def ds() -> Dataset:
    pool = pd.DataFrame({"query_id": "q1", "doc_id": list(DOCS), "score": [5.0, 4, 3, 2, 1], "rank": [1, 2, 3, 4, 5]})
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": ["d1", "d2"], "relevance": [3, 0]})
    return Dataset("tiny", {"q1": "what cat"}, qrels, dict(DOCS), pool)


def spec(path: Path, **kw) -> dict:
    return {"model": str(path), "device": "cpu", "batch_size": kw.pop("batch_size", 2), "max_input_tokens": 256, **kw}


def test_rg_score_is_the_yes_no_softmax_of_the_model(models, ds, tmp_path):
    ranker = RGRanker(name="RG", model_spec=spec(models["controlled"]), cache_dir=str(tmp_path), progress=False)
    run = ranker.rank(ds, ds.corpus)
    model = ranker.load_model()
    yes, no = model.token_id("Yes"), model.token_id("No")
    expected = {}
    for d, text in DOCS.items():
        prompt = RG_PROMPT.format(query="what cat", passage=text)
        logits = controlled_logits(models["controlled"], model.encode(prompt)[0])
        lp = log_softmax(logits)
        expected[d] = 1 / (1 + math.exp(lp[no] - lp[yes]))
    got = dict(zip(run["doc_id"], run["score"]))
    assert got == pytest.approx(expected, abs=1e-5)
    assert list(run["doc_id"]) == sorted(DOCS, key=lambda d: -expected[d])
    assert list(run["doc_id"])[:2] == ["d1", "d3"]  # most "good" first: the slope on Yes is positive
    assert ranker.scored_now == 5
    # scored on top of one key/value cache of what every RG prompt starts with (chat template, "Passage:")
    assert (model.usage.prefix_shared, model.usage.prefix_fallbacks) == (5, 0)

    # a rerun is served by the cache: no model is even loaded
    again = RGRanker(name="RG", model_spec=spec(models["controlled"]), cache_dir=str(tmp_path), progress=False)
    assert again.rank(ds, ds.corpus).equals(run) and again.scored_now == 0 and again._model is None


def test_rg_score_formula():
    assert rg_score(math.log(0.6), math.log(0.2)) == pytest.approx(0.75)
    assert rg_score(0.0, 0.0) == pytest.approx(0.5)
    assert rg_score(-1e6, 0.0) == pytest.approx(0.0)


def test_rerank_depth_keeps_the_tail_in_pool_order(models, ds, tmp_path):
    ranker = RGRanker(
        name="RG", model_spec=spec(models["controlled"]), cache_dir=str(tmp_path), progress=False, rerank_depth=3
    )
    run = ranker.rank(ds, ds.corpus)
    assert set(run["doc_id"][:3]) == {"d1", "d2", "d3"} and list(run["doc_id"][3:]) == ["d4", "d5"]
    assert list(run["doc_id"][:3]) == ["d1", "d3", "d2"]


def test_prp_points_and_parsing():
    assert points("A", "B") == (1.0, 0.0) and points("B", "A") == (0.0, 1.0)
    assert points("A", "A") == (0.5, 0.5) and points(None, "B") == (0.5, 0.5)
    assert parse_prp("Passage A") == "A" and parse_prp("passage b.") == "B" and parse_prp("B") == "B"
    assert parse_prp("Passage A or Passage B") is None and parse_prp("I cannot tell") is None


class OraclePRP(PRPRanker):
    """PRP whose answers come from a known quality (and a known position bias), to check aggregation."""

    quality = {"d1": 5, "d2": 1, "d3": 4, "d4": 3, "d5": 2}
    biased_pairs: set = set()

    def ask(self, triples):
        out = []
        by_text = {t: d for d, t in DOCS.items()}
        for _, a, b in triples:
            da, db = by_text[a], by_text[b]
            self.asked += 1
            out.append("A" if (da, db) in self.biased_pairs else ("A" if self.quality[da] > self.quality[db] else "B"))
        return out


@pytest.mark.parametrize("variant", ["allpairs", "sliding", "sort"])
def test_prp_variants_recover_a_consistent_order(ds, tmp_path, variant):
    r = OraclePRP(
        name="PRP",
        model_spec={"model": "unused"},
        cache_dir=str(tmp_path),
        variant=variant,
        passes=5,
        top_k=5,
        progress=False,
    )
    r.asked = 0
    run = r.rank(ds, ds.corpus)
    assert list(run["doc_id"]) == ["d1", "d3", "d4", "d5", "d2"]
    stats = r.ranking_metrics()  # a position-blind comparator: every pair it asked agrees across the orders
    assert stats["prp_order_consistency"] == 1.0 and stats["prp_first_position"] == 0.5
    assert stats["prp_pairs"] == (10 if variant == "allpairs" else len(r._pairs)) and stats["prp_pairs"] <= 10
    if variant == "allpairs":
        assert r.asked == 5 * 4  # every ordered pair once
        assert list(run["score"]) == [4.0, 3.0, 2.0, 1.0, 0.0]


def test_prp_inconsistent_answers_give_half_points(ds, tmp_path):
    r = OraclePRP(name="PRP", model_spec={"model": "unused"}, cache_dir=str(tmp_path), progress=False)
    r.asked = 0
    r.biased_pairs = {("d2", "d1")}  # asked with d2 first, the model says A: inconsistent with (d1, d2) -> A
    run = r.rank(ds, ds.corpus)
    scores = dict(zip(run["doc_id"], run["score"]))
    assert scores["d1"] == 3.5 and scores["d2"] == 0.5
    # order bias: 9 of the 10 pairs answered consistently (one "A" each); (d1, d2) got "A" in both orders: 11 of 20
    assert r.ranking_metrics() == {
        "prp_pairs": 10.0,
        "prp_failed_pairs": 0.0,
        "prp_order_consistency": 0.9,
        "prp_first_position": 0.55,
    }


def test_prp_local_model_with_position_blind_logits_learns_nothing(models, ds, tmp_path):
    """The controlled model sees only the share of marker words, the same in both orders: every pair
    is answered the same way in both orders, so every comparison is inconsistent (0.5 each)."""
    r = PRPRanker(name="PRP", model_spec=spec(models["controlled"]), cache_dir=str(tmp_path), progress=False)
    run = r.rank(ds, ds.corpus)
    assert set(run["score"]) == {2.0} and list(run["doc_id"]) == list(DOCS)  # ties keep pool order
    assert r.scored_now == 20


def test_prp_local_model_that_prefers_the_passage_with_the_marker(models, ds, tmp_path):
    """The recency model weighs the tokens near the end of the prompt, so it answers B exactly when the
    second passage holds the marker "good" (d1, d3, d4 do; d2, d5 do not).  By hand: a marker passage
    beats a plain one in both orders (1 point); two marker passages both get "B", two plain ones both "A":
    inconsistent, 0.5 each.  Marker passages: 2 x 1 + 2 x 0.5 = 3.0; plain ones: 0 + 1 x 0.5 = 0.5."""
    path = models["recency"]
    r = PRPRanker(name="PRP", model_spec=spec(path), cache_dir=str(tmp_path), progress=False)
    run = r.rank(ds, ds.corpus)
    assert dict(zip(run["doc_id"], run["score"])) == {"d1": 3.0, "d3": 3.0, "d4": 3.0, "d2": 0.5, "d5": 0.5}
    assert list(run["doc_id"]) == ["d1", "d3", "d4", "d2", "d5"]  # ties keep pool order
    model = r.load_model()
    a, b = model.token_id("A"), model.token_id("B")
    for x, y in permutations(DOCS, 2):  # every answer is the known model's, read from its closed form
        prompt = PRP_PROMPT.format(query="what cat", doc1=DOCS[x], doc2=DOCS[y])
        lp = log_softmax(controlled_logits(path, model.encode(prompt, "Passage")[0]))
        assert (lp[b] > lp[a]) == (y in {"d1", "d3", "d4"})  # the rule the hand count above uses
        rec = r.cache.get(r._key(prompt))
        assert abs(rec["lp_a"] - lp[a]) < 1e-4 and abs(rec["lp_b"] - lp[b]) < 1e-4
    assert model.usage.prefix_shared == 20 and model.usage.prefix_fallbacks == 0
    # order bias, counted by hand from the same rule: the 6 marker-vs-plain pairs agree across the two orders (one
    # "A" each), the 3 marker-vs-marker pairs are "B" twice, the plain pair (d2, d5) "A" twice: 6/10 consistent,
    # 8/20 "A"
    assert r.ranking_metrics() == {
        "prp_pairs": 10.0,
        "prp_failed_pairs": 0.0,
        "prp_order_consistency": 0.6,
        "prp_first_position": 0.4,
    }


def test_prp_through_the_api_parses_answers_and_records_failures(ds, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with FakeLLMServer(prefer=["good good good good", "good good tree", "sun moon", "bad bad"]) as srv:
        backend = OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url, backoff_base_s=0.01)
        r = PRPRanker(name="PRP-API", backend=backend, cache_dir=str(tmp_path), progress=False)
        run = r.rank(ds, ds.corpus)
        assert list(run["doc_id"])[:2] == ["d1", "d3"] and r.failed == 0
        assert srv.stats()["requests"] == 20
        srv.configure(fail_noscore=1.0)
        r2 = PRPRanker(
            name="PRP-API",
            backend=OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url, backoff_base_s=0.01),
            cache_dir=str(tmp_path / "fresh"),
            progress=False,
        )
        run2 = r2.rank(ds, ds.corpus)
        assert r2.failed == 20 and set(run2["score"]) == {2.0}  # no silent "A": every pair is 0.5 / 0.5


def test_rankt5_score_is_the_first_step_logit_of_extra_id_10(models, ds, tmp_path):
    r = RankT5Ranker(name="RankT5", model_spec=spec(models["t5"]), cache_dir=str(tmp_path), progress=False)
    run = r.rank(ds, ds.corpus)
    # independent computation with plain transformers calls
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(models["t5"])
    model = AutoModelForSeq2SeqLM.from_pretrained(models["t5"]).eval()
    target = tok.convert_tokens_to_ids("<extra_id_10>")
    assert target != tok.unk_token_id
    for d, text in DOCS.items():
        enc = tok(f"Query: what cat Document: {text}", return_tensors="pt")
        with torch.no_grad():
            out = model(**enc, decoder_input_ids=torch.tensor([[model.config.decoder_start_token_id]]))
        expected = out.logits[0, 0, target].item()
        assert dict(zip(run["doc_id"], run["score"]))[d] == pytest.approx(expected, abs=1e-4)


def test_rankt5_refuses_a_causal_model(models, ds, tmp_path):
    r = RankT5Ranker(name="RankT5", model_spec=spec(models["controlled"]), cache_dir=str(tmp_path), progress=False)
    with pytest.raises(ValueError, match="needs an encoder-decoder"):
        r.rank(ds, ds.corpus)


@pytest.mark.parametrize("kind", ["RG", "RankT5"])
def test_pointwise_scoring_takes_the_prompt_filled_for_the_key_and_does_not_fill_it_again(
    models, ds, tmp_path, monkeypatch, kind
):
    """score_pairs fills each prompt once, for its cache key, and hands it to scoring: the same records as scoring
    from (query, passage) alone, the same keys as key_maker's, and no second fill."""
    from judgebench.llm.local import encoding
    from judgebench.llm.prompts import fill

    cls, path = (RGRanker, models["controlled"]) if kind == "RG" else (RankT5Ranker, models["t5"])
    r = cls(name=kind, model_spec=spec(path), cache_dir=str(tmp_path), progress=False)
    pairs = [("what cat", text) for text in DOCS.values()]
    plain = r.score_batch(pairs)
    filled = [fill(r.prompt, {"query": q, "passage": p}) for q, p in pairs]
    calls = []
    monkeypatch.setattr(encoding, "fill", lambda *a: calls.append(a) or fill(*a))
    given = r.score_batch([(q, p, f) for (q, p), f in zip(pairs, filled)])
    assert given == plain and len(given) == len(DOCS)
    assert calls == []  # every prompt came filled
    r.score_batch(pairs)
    assert len(calls) == len(DOCS)  # the spy sees the fills when none is given
    key_of, make = r.key_maker(), r.prompt_key_maker()
    assert [key_of(q, p) for q, p in pairs] == [make(f) for f in filled]
