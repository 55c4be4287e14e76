"""Bulk encoding (judgebench.llm.encoding) gives exactly the ids of the one-prompt path (TransformersModel.encode),
with a chat template, a system text, a forced prefix whose trailing space the tokenizer drops, and on a T5;
and render_many gives render's prompts, the over-long ones shortened the same way."""

import pytest

from judgebench.llm.transformers_model import TransformersModel, clear_memo
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
    model.tokenizer.chat_template = "{% for m in messages %}<|user|> {{ m['content'] | trim }} {% endfor %}<|assistant|> "
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
    assert bulk == single and bulk_truncated == model.truncated == 1 and [t for _, t in bulk] == [False, True, False, False]
