"""Thinking: what each Gemini family is sent, what the fake server does with it (thought tokens that eat into
maxOutputTokens, 404 for retired ids, models.get), and how thinking tokens reach the records, the usage and
the cost, for the judge, the PRP ranker and the rewriter alike. Every request is checked on what the fake
server received."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types
from hydra.utils import instantiate
from omegaconf import OmegaConf

from fake_gemini import server, small, srv  # noqa: F401  (the fake server's fixtures, a 12-pair dataset)
from judgebench.exceptions import ConfigError
from judgebench.judges.llm import LLMJudge
from judgebench.llm.remote.api import GeminiBackend, OpenAIBackend
from judgebench.llm.remote.call_results import CallFailed
from judgebench.llm.remote.gemini_models import replacement, thinking_request
from judgebench.rewriters.llm import REWRITE_PROMPT
from judgebench.testing.fake_app import FakeConfig, fake_answer, fake_rewrite

CONF = Path(__file__).resolve().parents[3] / "src" / "judgebench" / "conf"
THOUGHTS = FakeConfig().thoughts  # what the fake thinks at level high; low is a quarter of it


def _body(srv) -> dict:
    return srv.stats()["last_request"]["body"]


# ---------------------------------------------------------------- what each family is sent


@pytest.mark.parametrize(
    ("model", "thinking", "sent", "request_max"),
    [
        ("gemini-3.8-flash", "off", {"thinking_level": "low"}, 64 + 1024),  # no minimal on 3.7+ Flash
        ("gemini-3.5-flash-lite", False, {"thinking_level": "minimal"}, 64 + 1024),  # YAML's bare off
        ("gemini-3.1-pro-preview", "high", {"thinking_level": "high"}, 64 + 1024),
        ("gemini-2.5-flash-lite", "off", {"thinking_budget": 0}, 64),
        ("gemini-2.5-flash-lite", 600, {"thinking_budget": 600}, 664),
        ("gemini-2.5-pro", "off", {"thinking_budget": 128}, 192),  # 2.5 Pro cannot turn thinking off
        ("gemini-1.5-flash", "off", None, 64),  # does not think: nothing sent, the cache key as before
    ],
)
def test_thinking_setting_to_request(model, thinking, sent, request_max):
    assert thinking_request(model, thinking, 1024, 64) == (sent, request_max)


@pytest.mark.parametrize(
    ("model", "thinking", "message"),
    [
        ("gemini-2.5-pro", 0, "cannot turn thinking off; its least budget is 128"),
        ("gemini-2.5-flash-lite", -1, "dynamic thinking"),  # on with no bound: refused
        ("gemini-2.5-flash", None, "dynamic thinking"),  # left to a 2.5 model's default: unbounded, refused
        ("gemini-3.8-flash", None, "max_output_tokens=64 cannot bound"),
        ("gemini-3.8-flash", "minimal", "takes the levels low, medium, high"),
        ("gemini-3.8-flash", 512, "takes a thinking level"),
        ("gemini-2.5-flash-lite", "low", "takes a thinking budget"),
        ("gemini-2.5-flash-lite", 100, "512-24576"),
        ("gemini-2.0-flash", "low", "does not think"),
        ("gemini-3.8-flash", "lots", "expected off, a budget"),
    ],
)
def test_settings_a_model_cannot_take_are_refused(model, thinking, message):
    with pytest.raises(ConfigError, match=message):
        GeminiBackend(model, thinking=thinking)
    with pytest.raises(ConfigError, match="thinking_reserve=0"):
        GeminiBackend("gemini-3.8-flash", thinking="low", thinking_reserve=0)


def test_retired_ids_and_their_replacements():
    assert replacement("gemini-1.5-flash") == ("gemini-3.8-flash", "judge=gemini_flash")
    assert replacement("models/gemini-1.0-pro-001") == ("gemini-3.1-pro-preview", "judge=gemini_pro")
    assert replacement("gemini-1.5-flash-latest")[0] == "gemini-3.8-flash"
    assert replacement("gemini-3.8-flash") is None and replacement("gemini-2.5-flash-lite") is None


# ---------------------------------------------------------------- the fake server thinks


def _client(srv) -> genai.Client:
    return genai.Client(api_key="k", http_options=types.HttpOptions(base_url=srv.base_url))


def test_the_fake_thinks_by_default_and_thinking_eats_max_output_tokens(srv):
    g = _client(srv)
    prompt = "Query: x\nPassage: y\n##final score"
    # no thinking config on a model that thinks by default, and too few tokens: nothing left for the answer
    r = g.models.generate_content(
        model="gemini-3.8-flash", contents=prompt, config=types.GenerateContentConfig(max_output_tokens=10)
    )
    assert r.text is None and r.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    assert r.usage_metadata.thoughts_token_count == 10 and not r.usage_metadata.candidates_token_count
    # room for the 200 thought tokens and one word of the answer: cut to that word
    r = g.models.generate_content(
        model="gemini-3.8-flash", contents=prompt, config=types.GenerateContentConfig(max_output_tokens=THOUGHTS + 1)
    )
    assert r.text == fake_answer(prompt).split()[0] and r.candidates[0].finish_reason == types.FinishReason.MAX_TOKENS
    # a budget caps the thinking; budget 0 turns it off
    for budget, thought in ((40, 40), (0, None)):
        r = g.models.generate_content(
            model="gemini-2.5-flash-lite",
            contents=prompt,
            config=types.GenerateContentConfig(
                max_output_tokens=50, thinking_config=types.ThinkingConfig(thinking_budget=budget)
            ),
        )
        assert r.text == fake_answer(prompt) and r.usage_metadata.thoughts_token_count == thought
    # a level: low thinks a quarter of what high does
    r = g.models.generate_content(
        model="gemini-3.8-flash",
        contents=prompt,
        config=types.GenerateContentConfig(
            thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW)
        ),
    )
    assert r.usage_metadata.thoughts_token_count == THOUGHTS // 4
    assert srv.stats()["by_outcome"]["ok"] == 5


def test_the_fake_refuses_what_the_api_refuses_and_404s_retired_ids(srv):
    g = _client(srv)
    with pytest.raises(genai_errors.ClientError) as err:  # a level for a 2.5 model
        g.models.generate_content(
            model="gemini-2.5-flash-lite",
            contents="x",
            config=types.GenerateContentConfig(
                thinking_config=types.ThinkingConfig(thinking_level=types.ThinkingLevel.LOW)
            ),
        )
    assert err.value.code == 400 and "not supported" in err.value.message
    for call in (
        lambda: g.models.generate_content(model="gemini-1.5-flash", contents="x"),
        lambda: g.models.get(model="gemini-1.5-flash"),
        lambda: g.models.get(model="gemini-3.8-flsh"),
    ):  # unknown to models.get
        with pytest.raises(genai_errors.ClientError) as err:
            call()
        assert err.value.code == 404 and err.value.status == "NOT_FOUND"
    model = g.models.get(model="gemini-3.8-flash")
    assert model.name == "models/gemini-3.8-flash" and model.output_token_limit == 65536 and model.thinking is True
    stats = srv.stats()
    assert stats["by_outcome"]["not_found"] == 1 and stats["by_outcome"]["bad_request"] == 1
    assert stats["model_gets"] == {"openai": 0, "gemini": 3} and stats["by_kind"]["gemini"] == 2


# ---------------------------------------------------------------- the backend: usage, cost, a cut-off answer


def test_judge_thinking_tokens_reach_records_usage_and_cost(srv, small, tmp_path):
    backend = GeminiBackend(
        "gemini-3.8-flash", base_url=srv.base_url, price_input_per_mtok=0.75, price_output_per_mtok=3.75
    )
    judge = LLMJudge(
        name="g", family="gemini", model=backend.model, backend=backend, cache_dir=str(tmp_path), progress=False
    )
    pairs = small.label_set()[["query_id", "doc_id"]]
    result = judge.judge(pairs, small, small.corpus)
    assert result.failed.empty and len(result.labels) == len(pairs) == 12
    generation = _body(srv)["generationConfig"]
    assert generation["thinkingConfig"] == {"thinking_level": "LOW"} and generation["maxOutputTokens"] == 64 + 1024
    u = result.usage
    assert u.thinking_tokens == 12 * (THOUGHTS // 4) and u.output_tokens == 12 * 3  # "##final score: N": 3 words
    by_hand = (u.input_tokens * 0.75 + (u.output_tokens + u.thinking_tokens) * 3.75) / 1e6
    assert u.cost_usd == pytest.approx(by_hand) and u.cost_usd > (u.input_tokens * 0.75 + u.output_tokens * 3.75) / 1e6
    assert u.as_metrics()["thinking_tokens"] == u.thinking_tokens
    key = judge.key_for(judge.render(pairs.head(1), small, small.corpus)[0].prompt)
    assert judge.cache.get(key)["thinking_tokens"] == THOUGHTS // 4
    # the thinking setting is part of the call key: another level is another answer, asked again
    other = GeminiBackend("gemini-3.8-flash", base_url=srv.base_url, thinking="high")
    assert LLMJudge(name="g", family="gemini", model=other.model, backend=other, cache_dir=str(tmp_path)).key_for(
        "p"
    ) != judge.key_for("p")


def test_an_answer_cut_off_by_thinking_fails_at_once_without_reasks(srv):
    srv.configure(thoughts=2000)  # more than the reserve: nothing left of maxOutputTokens for the answer
    backend = GeminiBackend(
        "gemini-3.8-flash", base_url=srv.base_url, thinking="high", thinking_reserve=100, max_output_tokens=8
    )

    async def ask():
        async with backend:
            return await backend.complete("Query: q\nPassage: p\n##final score")

    with pytest.raises(CallFailed) as err:
        asyncio.run(ask())
    assert err.value.kind == "max_tokens" and "max_output_tokens=108 (108 of them spent thinking)" in str(err.value)
    assert srv.stats()["requests"] == 1 and _body(srv)["generationConfig"]["maxOutputTokens"] == 108


def test_a_budget_widens_the_request_by_itself(srv):
    """A 2.5 model thinking on a budget, with a small answer budget: the request asks for both."""
    backend = GeminiBackend("gemini-2.5-flash-lite", base_url=srv.base_url, thinking=600, max_output_tokens=8)

    async def ask():
        async with backend:
            return await backend.complete("Query: q\nPassage: p\n##final score")

    done = asyncio.run(ask())
    generation = _body(srv)["generationConfig"]
    assert generation["maxOutputTokens"] == 608 and generation["thinkingConfig"] == {"thinking_budget": 600}
    assert done.text == fake_answer("Query: q\nPassage: p\n##final score") and done.thinking_tokens == THOUGHTS
    assert backend.cost(1_000_000, 0, thinking_tokens=1_000_000) == backend.cost(
        1_000_000, 1_000_000
    )  # billed as output


def test_batch_lines_carry_the_thinking_config_and_their_thinking_is_paid(srv, small, tmp_path):
    srv.reset_batches()
    srv.configure_batches(polls_in_progress=0, seconds_in_progress=0, fail_share=0.0, expire=False)
    backend = GeminiBackend(
        "gemini-3.8-flash",
        base_url=srv.base_url,
        mode="batch",
        batch={"poll_interval_s": 0.02},
        price_input_per_mtok=1.0,
        price_output_per_mtok=4.0,
    )
    judge = LLMJudge(
        name="b", family="gemini", model=backend.model, backend=backend, cache_dir=str(tmp_path), progress=False
    )
    result = judge.judge(small.label_set()[["query_id", "doc_id"]], small, small.corpus)
    u = result.usage
    assert result.failed.empty and u.batches == 1 and srv.stats()["requests"] == 0
    assert u.thinking_tokens == 12 * (THOUGHTS // 4)  # the line's own thinking level (low), as online
    assert u.cost_usd == pytest.approx(0.5 * (u.input_tokens * 1.0 + (u.output_tokens + u.thinking_tokens) * 4.0) / 1e6)


def test_openai_reasoning_level_is_sent_as_reasoning_effort(srv):
    backend = OpenAIBackend(
        "o-fake", base_url=srv.openai_base_url, thinking="low", thinking_reserve=500, max_output_tokens=16
    )

    async def ask():
        async with backend:
            return await backend.complete("hello")

    assert asyncio.run(ask()).text == "OK"
    body = _body(srv)
    assert body["reasoning_effort"] == "low" and body["max_completion_tokens"] == 516 and "max_tokens" not in body
    assert "reasoning_effort" not in OpenAIBackend("gpt-4o-mini").generation_params()  # off: the key as before
    with pytest.raises(ConfigError, match="not a budget"):
        OpenAIBackend("o-fake", thinking=1000)


# ---------------------------------------------------------------- the PRP ranker and the rewriter configs


def _component(group: str, name: str, srv, tmp_path) -> object:
    node = OmegaConf.load(CONF / group / f"{name}.yaml")
    node.cache_dir, node.progress, node.base_url = str(tmp_path), False, srv.base_url
    return instantiate(node)


def test_prp_gemini_flash_thinks_at_its_least_with_room_for_it(srv, small, tmp_path):
    ranker = _component("ranker", "prp_gemini_flash", srv, tmp_path)
    ranker.rerank_depth = 3
    run = ranker.rank(small, small.corpus)
    assert ranker.failed == 0 and len(run) == 12
    generation = _body(srv)["generationConfig"]
    assert generation["thinkingConfig"] == {"thinking_level": "LOW"} and generation["maxOutputTokens"] == 8 + 1024
    assert srv.stats()["requests"] == 2 * 3 * 2  # 2 queries, 3 x 2 ordered pairs each
    records = [ranker.cache.get(k) for k in ranker.cache.keys()]
    assert len(records) == 12 and {r["thinking_tokens"] for r in records} == {THOUGHTS // 4}


def test_rewriter_gemini_flash_thinks_at_its_least_with_room_for_it(srv, small, tmp_path):
    rewriter = _component("rewriter", "gemini_flash", srv, tmp_path)
    texts = rewriter.rewrite(small, ["d0", "d1"])
    assert texts["d0"] == fake_rewrite(small.corpus["d0"]) and not rewriter.failed
    generation = _body(srv)["generationConfig"]
    assert generation["thinkingConfig"] == {"thinking_level": "LOW"} and generation["maxOutputTokens"] == 512 + 1024
    # d0 and d1 are rewritten concurrently: either may be the last request; each prompt was sent once
    prompts = [REWRITE_PROMPT.replace("{text}", small.corpus[d]) for d in ("d0", "d1")]
    assert _body(srv)["contents"][0]["parts"][0]["text"] in prompts
    assert sorted(srv.stats()["prompt_sha256"]) == sorted(hashlib.sha256(p.encode()).hexdigest() for p in prompts)
    assert {rewriter.cache.get(k)["thinking_tokens"] for k in rewriter.cache.keys()} == {THOUGHTS // 4}


def test_one_refusal_of_a_retired_model_for_the_dry_run_and_the_preflight(monkeypatch, capsys):
    """The dry run (offline) and the preflight refuse a retired id with the same line, from one function; a current
    id, or a retired name on another provider, passes both without a word."""
    from judgebench.checks import offline_checks, preflight
    from judgebench.exceptions import BackendRefused

    monkeypatch.setenv("JB_TEST_GEMINI_KEY", "k")
    lines = []
    for check in (lambda r, b: offline_checks.note([(r, b)]), preflight.check_backend):
        for role in ("judge", "rewriter"):
            backend = GeminiBackend("models/gemini-1.5-flash-001", api_key_env="JB_TEST_GEMINI_KEY")
            with pytest.raises(BackendRefused) as refused:
                check(role, backend)
            lines.append(str(refused.value))
    assert lines[:2] == lines[2:]  # offline and preflight: the same lines
    judge, rewriter = lines[:2]
    assert judge.startswith("judge.backend.model=models/gemini-1.5-flash-001: Google has retired this model")
    assert "use gemini-3.8-flash instead (judge=gemini_flash, or judge.backend.model=gemini-3.8-flash)" in judge
    assert "use gemini-3.8-flash instead (rewriter.backend.model=gemini-3.8-flash)" in rewriter  # no judge option
    other = OpenAIBackend("gemini-1.5-flash", base_url="http://127.0.0.1:9", api_key_env="JB_TEST_GEMINI_KEY")
    offline_checks.note([("judge", other)])
    assert "not checked: judge openai gemini-1.5-flash" in capsys.readouterr().out
