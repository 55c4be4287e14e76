"""The local scoring layer: batching, exact log-probs and raw logits, memo, generation, SmolLM2, Gemma 3 (candidate
checks and safe truncation: tests/llm/local/test_prompt_encoding.py)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
import torch

from judgebench.judges.umbrela_scoring import UMBRELA_PREFIX, umbrela_digit_logprobs, umbrela_label_distribution
from judgebench.llm.local.gemma3 import gemma3_model_dir
from judgebench.llm.local.prefix_cache import text_before
from judgebench.llm.local.transformers_model import TransformersModel
from tiny_models import controlled_logits, log_softmax, tiny_causal, tiny_controlled_causal, tiny_seq2seq

PROMPTS = [
    "cat",
    "the dog is in the river and the sun is on the water",
    "what is music ?",
    "good good moon",
    "fire tree city",
    "a",
]


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tiny")


@pytest.fixture(scope="session")
def llama(tiny_dir) -> Path:
    return tiny_causal(tiny_dir, arch="llama")


@pytest.fixture(scope="session")
def gpt2(tiny_dir) -> Path:
    return tiny_causal(tiny_dir, arch="gpt2")


@pytest.fixture(scope="session")
def t5(tiny_dir) -> Path:
    return tiny_seq2seq(tiny_dir)


@pytest.fixture(scope="session")
def controlled(tiny_dir) -> Path:
    return tiny_controlled_causal(tiny_dir, bias={"yes": 0.0, "no": 1.0, "0": -2.0}, slope={"yes": 6.0, "no": -1.0})


# (1) batching ------------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_batched_matches_one_by_one_causal(arch, request):
    path = request.getfixturevalue(arch)
    batched = TransformersModel(path, batch_size=4, progress=True)
    single = TransformersModel(path, batch_size=1)
    assert batched.kind == "causal" and batched.use_chat_template
    cands = ["yes", "no", "0", "3"]
    a = batched.next_token_scores(PROMPTS, cands, forced_prefix="##final score: ")
    b = single.next_token_scores(PROMPTS, cands, forced_prefix="##final score: ")
    assert a.shape == (len(PROMPTS), len(cands)) and np.isfinite(a).all() and (a < 0).all()
    assert np.abs(a - b).max() < 1e-4
    assert np.ptp(a[:, 0]) > 1e-2  # the prompts really score differently: agreement is not trivial
    assert batched.usage.prompts == len(PROMPTS) and batched.usage.batches == 2 and single.usage.batches == len(PROMPTS)
    assert (
        batched.usage.input_tokens
        == single.usage.input_tokens
        == sum(len(batched.encode(p, "##final score: ")[0]) for p in PROMPTS)
    )
    if arch == "gpt2":  # negative control: absolute positions make the missing position ids visible
        batched._has_pos = False
        assert np.abs(batched.next_token_scores(PROMPTS, cands, forced_prefix="##final score: ") - b).max() > 1e-2


def test_batched_matches_one_by_one_seq2seq(t5):
    batched, single = TransformersModel(t5, batch_size=4), TransformersModel(t5, batch_size=1)
    assert batched.kind == "seq2seq" and not batched.use_chat_template
    for prefix in ("", "answer :"):
        a = batched.next_token_scores(PROMPTS, ["yes", "no", "<extra_id_10>"], forced_prefix=prefix)
        b = single.next_token_scores(PROMPTS, ["yes", "no", "<extra_id_10>"], forced_prefix=prefix)
        assert np.isfinite(a).all() and np.abs(a - b).max() < 1e-4 and np.ptp(a[:, 0]) > 1e-2
    ids, dec = batched.encode("cat dog", forced_prefix="answer :")
    assert ids[-1] == batched.tokenizer.eos_token_id and dec[0] == batched.model.config.decoder_start_token_id
    x10 = batched.token_id("<extra_id_10>")
    raw = batched.next_token_scores(PROMPTS, [x10], normalise=False)
    lp = batched.next_token_scores(PROMPTS, ["<extra_id_10>"])
    assert raw.shape == (len(PROMPTS), 1) and not np.allclose(raw, lp)  # raw logits, not log-probs
    assert np.abs(raw - single.next_token_scores(PROMPTS, [x10], normalise=False)).max() < 1e-4


# (2) a model whose answers are known -------------------------------------------------------------
def test_controlled_model_exact_logprobs(controlled):
    lm = TransformersModel(controlled, batch_size=3)
    prompts = [
        "cat dog",
        "good",
        "good good cat",
        "the good cat is a good dog and good",
        "moon sun tree river water fire",
    ]
    cands = ["yes", "no", "0", "cat"]
    got = lm.next_token_scores(prompts, cands)
    ids = [lm.token_id(c) for c in cands]
    want = np.array([log_softmax(controlled_logits(controlled, lm.encode(p)[0]))[ids] for p in prompts])
    assert np.abs(got - want).max() < 1e-4
    # yes wins exactly when the marker fraction f > 1/7 (6f > 1 - f); prompts 1-3 have f >= 0.2, 0 and 4 have f = 0
    assert got[:, :2].argmax(axis=1).tolist() == [1, 0, 0, 0, 1]
    raw = lm.next_token_scores(prompts, ids, normalise=False)
    assert np.abs(raw - np.array([controlled_logits(controlled, lm.encode(p)[0])[ids] for p in prompts])).max() < 1e-4


# (3) memo ------------------------------------------------------------------------------------------
def test_process_memo_shares_weights_not_counters(llama):
    a = TransformersModel(llama)
    b = TransformersModel(str(llama), batch_size=2, max_input_tokens=64)
    assert a.model is b.model and a.tokenizer is b.tokenizer
    assert (
        TransformersModel(llama, kind="causal", dtype="float32", device="cpu").model is a.model
    )  # "auto" resolved before keying
    a.next_token_scores(["cat"], ["yes"])
    assert a.usage.prompts == 1 and b.usage.prompts == 0 and b.batch_size == 2 and a.batch_size == 8


# (4) generation --------------------------------------------------------------------------------
@pytest.mark.parametrize("arch", ["gpt2", "t5"])
def test_generate_is_greedy_batched_and_bounded(arch, request):
    path = request.getfixturevalue(arch)
    batched, single = TransformersModel(path, batch_size=4), TransformersModel(path, batch_size=1)
    out = batched.generate(PROMPTS, max_new_tokens=5)
    assert out == batched.generate(PROMPTS, max_new_tokens=5) == single.generate(PROMPTS, max_new_tokens=5)
    assert all(isinstance(s, str) and len(s.split()) <= 5 for s in out) and any(out)
    assert batched.usage.output_tokens > 0


# (5) the real offline SmolLM2 ----------------------------------------------------------------------
UMBRELA = """Given a query and a passage, you must provide a score on an integer scale of 0 to 3 with the \
following meanings:
0 = represent that the passage has nothing to do with the query,
1 = represents that the passage seems related to the query but does not answer it,
2 = represents that the passage has some answer for the query, but the answer may be a bit unclear, or hidden \
amongst extraneous information and
3 = represents that the passage is dedicated to the query and contains the exact answer.

Query: {query}
Passage: {passage}

Final score must be an integer value only. Provide the score in the format of: ##final score: score without \
providing any reasoning."""
RG = (
    "For the following query and document, judge whether they are relevant. Output Yes or No.\nQuery: "
    "{query}\nDocument: {passage}\nOutput:"
)
PAIRS = [
    ("how long do cats live", "Indoor cats typically live 12 to 18 years, and some reach their early 20s."),
    ("how long do cats live", "The Treaty of Westphalia was signed in 1648, ending the Thirty Years' War."),
]


def _converted_once(tmp_path_factory, model_dir, folder: str, label: str) -> Iterator[TransformersModel]:
    """An offline GGUF alias converted once into $JUDGEBENCH_CACHE_DIR (kept) or a session temp dir (removed)."""
    cache = os.environ.get("JUDGEBENCH_CACHE_DIR") or tmp_path_factory.mktemp(f"judgebench-{folder}")
    t0 = time.perf_counter()
    path = model_dir(cache)
    assert path == Path(cache).expanduser() / "models" / folder
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # the atomic rename left no temp dir
    assert model_dir(cache) == path  # converted once
    lm = TransformersModel(path, batch_size=8)
    print(f"\n{label} ready in {time.perf_counter() - t0:.1f} s")
    yield lm
    if not os.environ.get("JUDGEBENCH_CACHE_DIR"):
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def smollm2(converted_smollm2) -> TransformersModel:
    """SmolLM2-135M-Instruct, from the session's one conversion (conftest.py: 540 MB, shared by the workers)."""
    return TransformersModel(converted_smollm2, batch_size=8)


@pytest.mark.slow  # the real SmolLM2: its GGUF converted once (~20 s idle), then a 540 MB float32 model on the CPU
def test_smollm2_umbrela_reads_the_digit_after_the_space(smollm2):
    lm = smollm2
    assert lm.kind == "causal" and lm.use_chat_template and sum(p.numel() for p in lm.model.parameters()) > 130e6
    ids, _ = lm.encode("q", forced_prefix=UMBRELA_PREFIX)
    assert lm.tokenizer.convert_ids_to_tokens(ids[-2:]) == [":", "\u0120"] and lm.token_id(" ") == ids[-1]
    with pytest.raises(ValueError, match="not a single token"):  # " 0" is 'Ġ' '0': why the space is forced
        lm.token_id(" 0")
    prompts = [UMBRELA.format(query=q, passage=p) for q, p in PAIRS]
    got = umbrela_digit_logprobs(lm, prompts)
    labels, expected, probs = umbrela_label_distribution(lm, prompts)
    # by hand: the chat template, the forced prefix and its space token 'Ġ', one plain forward, log_softmax
    tok = lm.tokenizer
    digits = tok.convert_tokens_to_ids(["0", "1", "2", "3"])
    for i, prompt in enumerate(prompts):
        text = tok.apply_chat_template(
            [{"role": "user", "content": prompt}], tokenize=False, add_generation_prompt=True
        )
        ids = tok(text + "##final score:", add_special_tokens=False)["input_ids"] + [
            tok.convert_tokens_to_ids("\u0120")
        ]
        with torch.no_grad():
            lp = torch.log_softmax(lm.model(torch.tensor([ids])).logits[0, -1].double(), -1)[digits].numpy()
        assert np.abs(got[i] - lp).max() <= 1e-4
        p = np.exp(lp) / np.exp(lp).sum()
        assert np.abs(probs[i] - p).max() <= 1e-5 and labels[i] == p.argmax()
        assert expected[i] == pytest.approx(p[1] + 2 * p[2] + 3 * p[3], abs=1e-5)
        print(f"UMBRELA digit mass after the space {np.exp(lp).sum():.3f}; probs {p.round(3).tolist()}")
        assert np.exp(lp).sum() > 0.5  # the model does want to answer with a digit there
    # the shared-prefix path, on the real byte-level BPE: the instruction + query prefix is a token prefix
    prefixes = [text_before(UMBRELA, {"query": q, "passage": p}, "passage") for q, p in PAIRS]
    before = (lm.usage.prefix_shared, lm.usage.prefix_fallbacks)
    assert np.abs(umbrela_digit_logprobs(lm, prompts, prefixes=prefixes) - got).max() <= 1e-4
    assert (lm.usage.prefix_shared - before[0], lm.usage.prefix_fallbacks - before[1]) == (2, 0)


@pytest.mark.slow  # the real SmolLM2, as above
def test_smollm2_rg_yes_no(smollm2):
    lp = smollm2.next_token_scores([RG.format(query=q, passage=p) for q, p in PAIRS], ["Yes", "No", " Yes"])
    print(f"RG log P(Yes), P(No), P( Yes): relevant {lp[0].round(3)}, irrelevant {lp[1].round(3)}")
    assert lp.shape == (2, 3) and np.isfinite(lp).all()
    assert smollm2.token_id(" Yes") != smollm2.token_id("Yes")  # the leading-space form is its own token


@pytest.fixture(scope="session")
def gemma3(tmp_path_factory) -> Iterator[TransformersModel]:
    """Gemma 3 270M assembled from its package and converted once (~3 min on 2 loaded cores; 1.1 GB per copy)."""
    yield from _converted_once(tmp_path_factory, gemma3_model_dir, "gemma-3-270m", "Gemma 3 270M")


@pytest.mark.slow  # converts the real Gemma 3 GGUF once (~3 min), then scores a few prompts
def test_gemma3_is_a_plain_text_model_read_like_smollm2(gemma3):
    lm = gemma3
    assert (
        type(lm.model).__name__ == "Gemma3ForCausalLM" and 260e6 < sum(p.numel() for p in lm.model.parameters()) < 275e6
    )
    assert lm.kind == "causal" and not lm.use_chat_template  # a base model: prompts are plain text, BOS added
    ids, _ = lm.encode("q", forced_prefix=UMBRELA_PREFIX)
    assert ids[0] == lm.tokenizer.bos_token_id and lm.tokenizer.convert_ids_to_tokens(ids[-2:]) == [":", "\u2581"]
    prompts = [UMBRELA.format(query=q, passage=p) for q, p in PAIRS]
    got = umbrela_digit_logprobs(lm, prompts)
    tok = lm.tokenizer
    digits = tok.convert_tokens_to_ids(["0", "1", "2", "3"])
    for i, prompt in enumerate(prompts):  # by hand: BOS, the prompt, the forced prefix ending in its space piece
        full = tok(prompt + UMBRELA_PREFIX)["input_ids"]
        with torch.no_grad():
            lp = torch.log_softmax(lm.model(torch.tensor([full])).logits[0, -1].double(), -1)[digits].numpy()
        assert np.abs(got[i] - lp).max() <= 1e-4
        print(f"Gemma UMBRELA digit mass {np.exp(lp).sum():.3f}")
        assert np.exp(lp).sum() > 0.3  # it does answer with a digit there
    # RG as configured for it (conf/ranker/rg_gemma3.yaml): after the answer cue, " Yes" / " No" carry real mass
    from omegaconf import OmegaConf

    cfg = OmegaConf.load(Path(__file__).resolve().parents[3] / "conf" / "ranker" / "rg_gemma3.yaml")
    lp = lm.next_token_scores([cfg.prompt.format(query=q, passage=p) for q, p in PAIRS], [cfg["yes"], cfg["no"]])
    print(f"Gemma RG P( Yes), P( No): {np.exp(lp).round(3).tolist()}")
    assert (np.exp(lp).sum(axis=1) > 0.05).all()
