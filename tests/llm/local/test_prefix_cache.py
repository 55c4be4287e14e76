"""Shared-prefix scoring gives the log-probs of a plain, unshared forward pass of each full prompt.

The reference values come from a freshly loaded transformers model run on one prompt at a time
(``model(input_ids)`` + log_softmax), with the ids built here from the tokenizer: no judgebench code.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from judgebench.data.datasets import Dataset
from judgebench.judges.transformers_judge import TransformersJudge
from judgebench.judges.umbrela_scoring import UMBRELA_PREFIX, umbrela_digit_logprobs
from judgebench.llm.local.prefix_cache import text_before
from judgebench.llm.local.transformers_model import TransformersModel
from judgebench.llm.prompts import fill, load_prompt
from tiny_models import tiny_causal

QUERIES = {"q1": "what is the cat of the moon", "q2": "how is the river"}
PASSAGES = {  # different first words (so a query's prompts share exactly the text before the passage), 1 to 30 words
    "p1": "cat",
    "p2": "dog is in the water",
    "p3": "sun and moon and fire and the tree of the city is good",
    "p4": " ".join(["river music water fire tree city"] * 5),
}
LABEL_SET = [(q, d) for q in QUERIES for d in PASSAGES]  # every pair: 2 queries x 4 passages


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-prefix")
    # gpt2: absolute positions; mistral: a sliding window, which the one-copy attention refuses (the fallback runs)
    return {arch: tiny_causal(root, arch=arch) for arch in ("llama", "gpt2", "mistral")}


@functools.cache
def plain_model(path: Path):
    """A fresh load (not judgebench's memo): the reference shares no code or state with the code under test."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path).eval()


def plain_logprobs(path: Path, prompt: str, tokens: list[str]) -> tuple[np.ndarray, list[int]]:
    """log P(token) after the chat-templated prompt + the forced UMBRELA prefix, one unpadded forward pass."""
    tok, net = plain_model(path)
    # the tiny tokenizer splits on whitespace and has no space token: the forced prefix's space adds nothing
    assert tok.convert_tokens_to_ids(" ") == tok.unk_token_id
    text = tok.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True)
    ids = tok(text + UMBRELA_PREFIX, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = net(torch.tensor([ids])).logits[0, -1].double()
    return torch.log_softmax(logits, -1)[tok.convert_tokens_to_ids(tokens)].numpy(), ids


def umbrela_prompts(pairs: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    template = load_prompt("umbrela_bing").text
    fields = [{"query": QUERIES[q], "passage": PASSAGES[d]} for q, d in pairs]
    return [fill(template, f) for f in fields], [text_before(template, f, "passage") for f in fields]


@pytest.mark.parametrize("last_hidden", [True, False], ids=["head-on-last-rows", "head-on-columns"])
@pytest.mark.parametrize("one_copy", [True, False], ids=["one-copy", "copied-per-row"])
@pytest.mark.parametrize("arch", ["llama", "gpt2", "mistral"])
def test_shared_prefix_logprobs_equal_a_plain_forward_of_every_pair(tiny, arch, one_copy, last_hidden):
    path = tiny[arch]
    prompts, prefixes = umbrela_prompts(LABEL_SET)
    model = TransformersModel(path, batch_size=4)  # one batch per query: 4 passages of 1, 5, 12 and 30 words
    if not one_copy:
        model.__dict__["_shared_attention"] = False  # as if the model's attention could not be swapped
    if not last_hidden:
        model.__dict__["_last_hidden_hook"] = False  # as if the base model's output could not be narrowed
    head_rows = []  # (rows, columns) of every hidden-state block the LM head received
    head = model.model.get_output_embeddings().register_forward_hook(
        lambda m, a, o: head_rows.append(tuple(a[0].shape[:2]))
    )
    try:
        got = umbrela_digit_logprobs(model, prompts, prefixes=prefixes)
    finally:
        head.remove()
    assert model.__dict__["_last_hidden_hook"] is last_hidden
    tails = [r for r in head_rows if r[0] == 4]  # the two batches of 4 tails (the prefixes run as batches of 1)
    assert len(tails) == 2
    # the head computed one row per tail, or (with logits_to_keep where the model has it) every column a tail ends at
    assert all(r == (4, 1) for r in tails) if last_hidden else all(r[1] > 1 for r in tails)

    want, ids = zip(*(plain_logprobs(path, p, ["0", "1", "2", "3"]) for p in prompts))
    assert np.abs(got - np.array(want)).max() <= 1e-4
    assert np.ptp(got[:, 0]) > 1e-2  # the pairs really score differently
    assert model.usage.prefix_shared == len(LABEL_SET) and model.usage.prefix_fallbacks == 0
    swapped = one_copy and arch != "mistral"
    assert model.__dict__["_shared_attention"] is swapped
    assert model.usage.prefix_copy_batches == (0 if swapped else 2)
    if one_copy and arch == "mistral":
        assert "sliding window" in model.__dict__["_shared_attention_why"]
    # tokens run: per query what its prefix does not share with the previous query's (the instruction), then
    # every prompt's own tail
    expected_tokens, previous = 0, []
    for q in QUERIES:
        rows = [list(i) for i, (qq, _) in zip(ids, LABEL_SET) if qq == q]
        common = next(
            k for k in range(min(map(len, rows)) + 1) if k == min(map(len, rows)) or len({r[k] for r in rows}) > 1
        )
        prefix = rows[0][:common]
        reused = next(
            k for k in range(len(prefix) + 1) if k == min(len(prefix), len(previous)) or prefix[k] != previous[k]
        )
        expected_tokens += common - reused + sum(len(r) - common for r in rows)
        previous = prefix
    assert reused > 40  # the second query's prefix ran only its query on top of the first's instruction
    assert model.usage.input_tokens == expected_tokens < sum(map(len, ids))
    assert model.usage.batches == 2 * 2  # per query: its prefix, then one batch of its 4 tails


def test_a_forward_that_fails_after_running_is_not_the_one_the_narrowed_head_is_judged_by(tiny, monkeypatch):
    """The one-copy attention can refuse a model after its forward ran (the layers' calls are counted after);
    the batch then runs again through the per-row cache.  Only that last forward's head input counts."""
    from judgebench.llm.local import shared_prefix_attention as spa

    def runs_then_refuses(net, kv, kw):
        ids = kw["input_ids"]  # a whole forward of the tails alone (the base model's hooks fire) ...
        net(input_ids=ids, attention_mask=kw["attention_mask"][:, -ids.shape[1] :], use_cache=False)
        raise spa.Unsupported("refused after the forward")  # ... then the refusal

    monkeypatch.setattr(spa, "run_tails", runs_then_refuses)
    path = tiny["llama"]
    prompts, prefixes = umbrela_prompts(LABEL_SET)
    model = TransformersModel(path, batch_size=4)
    got = umbrela_digit_logprobs(model, prompts, prefixes=prefixes)
    want = np.array([plain_logprobs(path, p, ["0", "1", "2", "3"])[0] for p in prompts])
    assert np.abs(got - want).max() <= 1e-4
    assert model.__dict__["_shared_attention"] is False and model.__dict__["_last_hidden_hook"] is True
    assert model.usage.prefix_copy_batches == 2  # both batches through the per-row cache


def test_a_hook_that_does_not_take_costs_its_first_batch_a_second_forward_but_no_second_count(tiny, monkeypatch):
    """A base model whose output cannot be narrowed (here: the hook never fires) is found out on the first batch of
    tails, which then runs again the columns way; the copied-per-row forward of the failed try is not counted."""
    from contextlib import contextmanager

    from judgebench.llm.local import prefix_cache

    @contextmanager
    def never_takes(net, last):
        yield []

    monkeypatch.setattr(prefix_cache, "_last_hidden_only", never_takes)
    path = tiny["llama"]
    prompts, prefixes = umbrela_prompts(LABEL_SET)
    model = TransformersModel(path, batch_size=4)
    model.__dict__["_shared_attention"] = False  # the per-row cache: the path that counts its forwards
    forwards = []
    counter = model.model.register_forward_hook(lambda m, a, o: forwards.append(1))
    try:
        got = umbrela_digit_logprobs(model, prompts, prefixes=prefixes)
    finally:
        counter.remove()
    want = np.array([plain_logprobs(path, p, ["0", "1", "2", "3"])[0] for p in prompts])
    assert np.abs(got - want).max() <= 1e-4
    assert model.__dict__["_last_hidden_hook"] is False
    assert len(forwards) == 2 + 2 + 1  # two prefixes, two batches of tails, the first of them once more
    assert model.usage.prefix_copy_batches == 2 and model.usage.batches == 4


def test_a_prefix_that_tokenizes_differently_falls_back_and_is_counted(tiny):
    path = tiny["llama"]
    prompts = ["the cat is in the river", "the cat is a dog", "the cat of the moon", "what is music ?"]
    prefixes = ["the cat is", "the ca", "the cat of the moon", "not a prefix"]  # ok, mid-word, the whole text, wrong
    model = TransformersModel(path, batch_size=4)
    got = model.next_token_scores(prompts, ["yes", "no"], forced_prefix=UMBRELA_PREFIX, prefixes=prefixes)
    want = np.array([plain_logprobs(path, p, ["yes", "no"])[0] for p in prompts])
    assert np.abs(got - want).max() <= 1e-4
    # 'the ca' is ['the', '<unk>'] alone and 'not a prefix' is none; the whole text still leaves the chat
    # template's assistant header and the forced prefix as its tail
    assert (model.usage.prefix_shared, model.usage.prefix_fallbacks) == (2, 2)


def test_the_judge_scores_from_the_shared_prefix_with_the_labels_of_a_plain_forward(tiny, tmp_path):
    path = tiny["gpt2"]
    pool = pd.DataFrame(
        [(q, d, 1.0, i + 1) for q in QUERIES for i, d in enumerate(PASSAGES)],
        columns=["query_id", "doc_id", "score", "rank"],
    )
    qrels = pd.DataFrame([(q, d, 0) for q, d in LABEL_SET], columns=["query_id", "doc_id", "relevance"])
    ds = Dataset("tiny", dict(QUERIES), qrels, dict(PASSAGES), pool)
    judge = TransformersJudge(
        name="tiny",
        family="open",
        model="tiny",
        cache_dir=str(tmp_path),
        progress=False,
        model_spec={"model": str(path), "batch_size": 3},
    )
    result = judge.judge(qrels[["query_id", "doc_id"]], ds, ds.corpus)
    template = load_prompt("umbrela_bing").text
    for (q, d), label, raw in zip(
        zip(result.labels["query_id"], result.labels["doc_id"]), result.labels["relevance"], result.labels["raw"]
    ):
        lp, _ = plain_logprobs(
            path, fill(template, {"query": QUERIES[q], "passage": PASSAGES[d]}), ["0", "1", "2", "3"]
        )
        probs = np.exp(lp - lp.max())
        probs /= probs.sum()
        assert np.abs(np.array(json.loads(raw)["probs"]) - probs).max() <= 1e-5  # stored rounded to 6 decimals
        assert label == int(probs.argmax())
    usage = judge.load_model().usage
    assert usage.prefix_shared == len(LABEL_SET) and usage.prefix_fallbacks == 0 and result.usage.calls_made == 8


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_the_tails_attend_one_copy_of_the_prefix_not_one_per_row(tiny, arch):
    """The key/value bytes one forward of 4 tails reads: the prefix once plus the tails, against the per-row
    cache's 4 x (prefix + tail); counted from the config and the token ids, and the log-probs agree to fp32."""
    from transformers import AutoConfig

    path = tiny[arch]
    prompts, prefixes = umbrela_prompts([("q1", d) for d in PASSAGES])
    ids = [plain_logprobs(path, p, ["0"])[1] for p in prompts]
    p = next(
        k for k in range(min(map(len, ids))) if len({r[k] for r in ids}) > 1
    )  # the passages differ from their first token
    width, b = max(map(len, ids)) - p, len(ids)
    cfg = AutoConfig.from_pretrained(path)
    per_token = (
        cfg.num_hidden_layers
        * 2
        * getattr(cfg, "num_key_value_heads", cfg.num_attention_heads)
        * (cfg.hidden_size // cfg.num_attention_heads)
        * 4
    )  # keys and values of every layer, float32
    got, usage = {}, {}
    for one_copy in (True, False):
        model = TransformersModel(path, batch_size=b)
        if not one_copy:
            model.__dict__["_shared_attention"] = False
        got[one_copy] = umbrela_digit_logprobs(model, prompts, prefixes=prefixes)
        usage[one_copy] = model.usage
    assert usage[True].prefix_kv_bytes == per_token * (p + b * width)
    assert usage[False].prefix_kv_bytes == per_token * b * (p + width)
    assert usage[False].prefix_kv_bytes - usage[True].prefix_kv_bytes == per_token * (b - 1) * p > 0
    assert np.abs(got[True] - got[False]).max() <= 1e-5


def test_the_judge_scores_the_prompt_it_filled_for_the_key_with_the_same_records(tiny, tmp_path, monkeypatch):
    """judge() fills each prompt once (its cache key) and hands it to scoring with the pair: the records equal
    scoring from (query, passage) alone, and scoring fills nothing again; the shared prefix is one per query."""
    from judgebench.llm.local import encoding, prefix_cache

    judge = TransformersJudge(
        name="tiny",
        family="open",
        model="tiny",
        cache_dir=str(tmp_path),
        progress=False,
        model_spec={"model": str(tiny["gpt2"]), "batch_size": 3},
    )
    pairs = [(QUERIES[q], PASSAGES[d]) for q, d in LABEL_SET]
    plain = judge._score(pairs)
    fills, befores = [], []
    monkeypatch.setattr(encoding, "fill", lambda *a: fills.append(a) or fill(*a))
    real_before = prefix_cache.text_before
    monkeypatch.setattr(
        "judgebench.judges.transformers_judge.text_before", lambda *a: befores.append(a) or real_before(*a)
    )
    given = judge._score([(q, p, judge.template.render(query=q, passage=p)) for q, p in pairs])
    assert given == plain
    assert fills == []
    assert len(befores) == len({q for q, _ in pairs})  # what precedes the passage: once a query
