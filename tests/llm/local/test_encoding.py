"""Bulk encoding (judgebench.llm.local.encoding) gives exactly the ids of the one-prompt path
(TransformersModel.encode), with a chat template, a system text, a forced prefix whose trailing space the tokenizer
drops, and on a T5; and render_many gives render's prompts, the over-long ones shortened the same way."""

import pytest

from judgebench.llm.local.transformers_model import TransformersModel, clear_memo
from tiny_models import tiny_causal, tiny_seq2seq

WORDS = ["river", "bank", "flood", "cat", "dog", "water", "final", "score"]
PROMPTS = ["what is the river bank ?", "cat dog water " * 30, "  leading and trailing space  ", "score : final"]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bulk")
    return tiny_causal(tmp, vocab_extra=WORDS), tiny_seq2seq(tmp, vocab_extra=WORDS)


def test_encode_many_equals_encode(dirs):
    clear_memo()
    model = TransformersModel(dirs[0], device="cpu", dtype="float32", max_input_tokens=64)
    assert model.use_chat_template
    for system in (None, "you judge passages"):
        for prefix in ("", "##final score: ", "Passage"):
            bulk = model.encode_many(PROMPTS, prefix, system)
            assert bulk == [model.encode(p, prefix, system) for p in PROMPTS], (system, prefix)
            assert model.encode_many(PROMPTS, prefix, system) == bulk  # the memo gives the same


def test_encode_many_seq2seq_and_no_template(dirs):
    clear_memo()
    t5 = TransformersModel(dirs[1], device="cpu", dtype="float32")
    assert t5.encode_many(PROMPTS, "Passage") == [t5.encode(p, "Passage") for p in PROMPTS]
    plain = TransformersModel(dirs[0], device="cpu", dtype="float32", use_chat_template=False)
    assert plain.encode_many(PROMPTS, "Passage", "sys") == [plain.encode(p, "Passage", "sys") for p in PROMPTS]


def test_template_that_edits_content_falls_back(dirs):
    clear_memo()
    model = TransformersModel(dirs[0], device="cpu", dtype="float32")
    model.tokenizer.chat_template = (
        "{% for m in messages %}<|user|> {{ m['content'] | trim }} {% endfor %}<|assistant|> "
    )
    model.__dict__.pop("_chat_frames", None)
    assert model.encode_many(PROMPTS) == [model.encode(p) for p in PROMPTS]


def test_render_many_equals_render(dirs):
    clear_memo()
    model = TransformersModel(dirs[0], device="cpu", dtype="float32", max_input_tokens=40)
    template = "query : {query} passage : {passage}"
    fields = [{"query": "river bank", "passage": p} for p in PROMPTS]
    model.truncated = 0
    bulk = model.render_many(template, fields, "passage", forced_prefix="##final score: ")
    bulk_truncated = model.truncated
    model.truncated = 0
    single = [model.render(template, f, "passage", forced_prefix="##final score: ") for f in fields]
    assert (
        bulk == single
        and bulk_truncated == model.truncated == 1
        and [t for _, t in bulk] == [False, True, False, False]
    )


def test_one_call_with_more_texts_than_the_memo_keeps(dirs, monkeypatch):
    """A scoring chunk may bring more prompts than the memo's floor: every one gets its ids (the memo used to evict
    the call's own first texts before reading them back, a KeyError), and the call's texts stay for the scoring."""
    from judgebench.llm.local import encoding

    clear_memo()
    model = TransformersModel(dirs[1], device="cpu", dtype="float32")
    monkeypatch.setattr(encoding, "MEMO_SIZE", 3)
    texts = [f"{w} {i}" for i, w in enumerate(WORDS * 2)]  # 16 texts, over the floor of 3
    want = [model.tokenizer(t)["input_ids"] for t in texts]
    assert encoding.ids_many(model, texts, True) == want
    memo = model.__dict__["_ids_memo"]
    assert all((t, True) in memo for t in texts)  # kept: the scoring that follows the length check reads them
    assert encoding.ids_many(model, texts[:2], True) == want[:2] and len(memo) == 4  # twice a small call's texts
    assert encoding.ids_many(model, ["one more"], True) == [model.tokenizer("one more")["input_ids"]]
    assert len(memo) == 3  # back to the floor once calls are small again
