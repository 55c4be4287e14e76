"""Batches by a token budget (judgebench.llm.local.token_batches), and labels that do not depend on batching.

The UMBRELA judge's labels are read from float32 log-probs with a tie tolerance (umbrela_scoring.grades_from_logprobs);
here the same prompts scored one by one, in batches of 3 rows, under a token budget, in reversed order and with and
without a shared prefix give identical labels, and log-probs equal to 1e-5."""

from __future__ import annotations

import numpy as np
import pytest

from judgebench.judges.umbrela_scoring import TIE_NATS, grades_from_logprobs, umbrela_label_distribution
from judgebench.llm.local.prefix_cache import text_before
from judgebench.llm.local.token_batches import batches, bytes_per_token, padding_waste
from judgebench.llm.local.transformers_model import TransformersModel, clear_memo
from judgebench.llm.prompts import fill, load_prompt
from tiny_models import tiny_controlled_causal

QUERIES = ["what is the cat of the moon", "how is the river"]
# the controlled model's digit logits grow with the share of "good" in the prompt: passages with more of it get
# higher grades, and lengths differ so that batches are padded
PASSAGES = [
    "cat",
    "dog is in the water good",
    "sun and moon and fire and the tree of the city is good " + "good " * 8,
    " ".join(["river music water fire tree city"] * 5),
    "the good dog " + "good " * 20,
    "good " * 45,
]


def test_batches_respect_the_budget_and_sort_by_length():
    rng = np.random.default_rng(3)
    lengths = [int(x) for x in rng.integers(5, 200, size=300)]
    got = batches(lengths, 64, 2000)
    assert sorted(i for b in got for i in b) == list(range(300))
    flat = [lengths[i] for b in got for i in b]
    assert flat == sorted(lengths)  # shortest first
    for b in got:
        assert len(b) <= 64 and (len(b) == 1 or len(b) * max(lengths[i] for i in b) <= 2000)
    # greedy: the next batch's first row would not have fitted into the previous batch
    for prev, nxt in zip(got, got[1:]):
        assert len(prev) == 64 or (len(prev) + 1) * lengths[nxt[0]] > 2000
    real = sum(lengths)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in got)
    assert padding_waste(real, padded) < 0.10  # sorted batches of similar lengths waste little
    assert batches([10, 5, 10, 5], 2, None) == [[1, 3], [0, 2]]  # row count only; ties keep input order
    assert batches([5000, 3], 8, 100) == [[1], [0]]  # a row over the budget goes alone
    capped = batches(lengths, 512, 10**9, 0.05)  # a budget that never binds: the padding share splits them
    for b in capped:
        sub = [lengths[i] for i in b]
        assert padding_waste(sum(sub), len(sub) * max(sub)) <= 0.05
    assert sum(map(len, capped)) == 300 and len(capped) < 40


def test_bytes_per_token_grows_with_the_model():
    from transformers import LlamaConfig

    small = LlamaConfig(
        hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2
    )
    big = LlamaConfig(
        hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28, num_key_value_heads=4
    )
    # Qwen2.5-7B shape in bf16: (6*3584 + 3*18944 + 2*28*4*128) * 2 bytes * 2 (safety)
    assert bytes_per_token(big, 2) == 2 * 2 * (6 * 3584 + 3 * 18944 + 2 * 28 * 4 * 128)
    assert bytes_per_token(small, 2) < bytes_per_token(big, 2)


def test_tie_rule_lowest_grade_within_tolerance():
    lp = np.log(np.array([[0.1, 0.4, 0.4, 0.1], [0.1, 0.2, 0.3, 0.4], [0.25, 0.25, 0.25, 0.25]]))
    lp[0, 2] += TIE_NATS / 2  # grade 2 ahead by less than the tolerance: tied with 1, the lower wins
    assert grades_from_logprobs(lp).tolist() == [1, 3, 0]
    lp[0, 2] += TIE_NATS  # now clearly ahead
    assert grades_from_logprobs(lp)[0] == 2


@pytest.fixture(scope="module")
def judge_path(tmp_path_factory):
    return tiny_controlled_causal(
        tmp_path_factory.mktemp("batching"),
        bias={"0": 0.0, "1": -1.0, "2": -2.5, "3": -4.0},
        slope={"1": 40.0, "2": 80.0, "3": 110.0},
    )


def test_labels_do_not_depend_on_batching(judge_path):
    template = load_prompt("umbrela_bing").text
    fields = [{"query": q, "passage": p} for q in QUERIES for p in PASSAGES]
    prompts = [fill(template, f) for f in fields]
    prefixes = [text_before(template, f, "passage") for f in fields]
    runs = {}
    for name, kw, order, shared in [
        ("one by one", {"batch_size": 1}, None, False),
        ("3 rows", {"batch_size": 3}, None, False),
        ("budget", {"batch_tokens": 700}, None, False),
        ("reversed, 5 rows", {"batch_size": 5}, slice(None, None, -1), False),
        ("shared, 2 rows", {"batch_size": 2}, None, True),
        ("shared, budget, reversed", {"batch_tokens": 400}, slice(None, None, -1), True),
    ]:
        clear_memo()
        model = TransformersModel(judge_path, device="cpu", dtype="float32", **kw)
        idx = list(range(len(prompts)))[order or slice(None)]
        labels, expected, _ = umbrela_label_distribution(
            model, [prompts[i] for i in idx], None, [prefixes[i] for i in idx] if shared else None
        )
        back = np.empty_like(labels)
        back[idx] = labels
        exp = np.empty_like(expected)
        exp[idx] = expected
        runs[name] = (back, exp, model.usage.batches)
    base_labels, base_expected, _ = runs["one by one"]
    assert len(set(base_labels.tolist())) >= 3, base_labels  # different labels: a constant would prove nothing
    for name, (labels, expected, n_batches) in runs.items():
        assert labels.tolist() == base_labels.tolist(), name
        assert np.abs(expected - base_expected).max() < 1e-5, name
    assert runs["3 rows"][2] < runs["one by one"][2]  # the batchings really differ
