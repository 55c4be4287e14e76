"""One prompt to the ids a local model scores (llm/local/prompt_encoding.py): a candidate must be one known token,
and rendering shortens the document only, no more than needed, with one renderer for every prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgebench.llm.local.transformers_model import TransformersModel
from tiny_models import tiny_causal


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Path:
    return tiny_causal(tmp_path_factory.mktemp("tiny"), arch="llama")


# candidates --------------------------------------------------------------------------------
def test_candidates_must_be_single_known_tokens(llama):
    lm = TransformersModel(llama)
    assert lm.token_id("yes") != lm.tokenizer.unk_token_id
    assert lm.token_id("<|assistant|>") == lm.tokenizer.convert_tokens_to_ids("<|assistant|>")
    with pytest.raises(ValueError, match=r"'yes no' is not a single token.*\['yes', 'no'\]"):
        lm.next_token_scores(["cat"], ["yes", "yes no"])
    with pytest.raises(ValueError, match=r"'zebra' is not in the vocabulary.*<unk>"):
        lm.next_token_scores(["cat"], ["zebra"])


# rendering and truncation ---------------------------------------------------------------------
def test_render_truncates_only_the_document(llama):
    lm = TransformersModel(llama, max_input_tokens=30)
    template = "Query : {query} ?\nPassage : {passage}\nAnswer :"
    query = "what is the cat of the moon"
    doc = " ".join(["water fire tree river city music sun moon dog"] * 10)
    prompt, cut = lm.render(template, {"query": query, "passage": doc}, "passage", forced_prefix="##final score: ")
    assert cut and lm.truncated == 1
    assert prompt.startswith(f"Query : {query} ?\nPassage : water fire") and prompt.endswith("\nAnswer :")
    kept = prompt.split("Passage : ")[1].rsplit("\nAnswer :", 1)[0]
    assert doc.startswith(kept) and len(kept) < len(doc)
    assert len(lm.encode(prompt, "##final score: ")[0]) <= 30
    assert (
        len(lm.encode(template.format(query=query, passage=kept + " water"), "##final score: ")[0]) > 29
    )  # cut no more than needed
    lm.next_token_scores([prompt], ["yes"], forced_prefix="##final score: ")  # fits
    short, cut = lm.render(template, {"query": query, "passage": "cat dog"}, "passage")
    assert not cut and short == template.format(query=query, passage="cat dog") and lm.truncated == 1
    with pytest.raises(ValueError, match="query or instructions are too long"):
        lm.render(template, {"query": " ".join(["cat"] * 40), "passage": doc}, "passage")
    with pytest.raises(ValueError, match="over max_input_tokens=30"):
        lm.next_token_scores([template.format(query=query, passage=doc)], ["yes"])


def test_a_template_with_other_braces_renders_as_the_api_judges_do(llama):
    """One renderer for every prompt: a custom template holding a JSON example (braces that are no field)
    used to crash the local path (str.format) while the API path rendered it."""
    from judgebench.llm.prompts import PromptTemplate, fill

    template = 'Answer as {"score": N}. Query: {query} Passage: {passage}'
    fields = {"query": "cat {x}", "passage": "moon"}
    expected = 'Answer as {"score": N}. Query: cat {x} Passage: moon'  # written out by hand
    assert fill(template, fields) == expected
    assert PromptTemplate("t", template).render(**fields) == expected
    assert TransformersModel(llama, max_input_tokens=64).render(template, fields, "passage") == (expected, False)
    # one pass: a value holding a placeholder is not filled again
    assert fill("{query}|{passage}", {"query": "{passage}", "passage": "p"}) == "{passage}|p"
