"""Every paid answer counts, usable or not: answers cut off at max_output_tokens by thinking fail the pairs, and
their prompt and thinking tokens and their cost are still in the judge's usage (the fake Gemini server reports them)."""

from __future__ import annotations

import pytest

from fake_gemini import server, small, srv  # noqa: F401  (the fake Gemini server, a 12-pair dataset)
from judgebench.judges.llm import LLMJudge
from judgebench.llm.remote.api import GeminiBackend

PRICE_IN, PRICE_OUT = 0.75, 3.75


def _judge(srv, tmp, **kw):  # noqa: F811
    backend = GeminiBackend(
        "gemini-3.8-flash", base_url=srv.base_url, price_input_per_mtok=PRICE_IN, price_output_per_mtok=PRICE_OUT, **kw
    )
    return LLMJudge(name="g", family="gemini", model=backend.model, backend=backend, cache_dir=str(tmp), progress=False)


def test_answers_cut_off_by_thinking_count_their_tokens_and_cost(srv, small, tmp_path):  # noqa: F811
    pairs = small.label_set()[["query_id", "doc_id"]]
    # the same prompts answered in full: their input tokens, as the server reported them
    full = _judge(srv, tmp_path / "full").judge(pairs, small, small.corpus)
    assert full.failed.empty and full.usage.input_tokens > 0
    srv.configure(thoughts=2000)  # more than the reserve: every answer is cut off, finishReason MAX_TOKENS
    cut = _judge(srv, tmp_path / "cut", thinking="high", thinking_reserve=100, max_output_tokens=8).judge(
        pairs, small, small.corpus
    )
    u = cut.usage
    assert cut.labels.empty and len(cut.failed) == len(pairs) == 12 and u.errors.get("max_tokens") == 12
    limit = 8 + 100  # what each request allowed: thinking takes all of it
    assert u.input_tokens == full.usage.input_tokens
    assert u.thinking_tokens == 12 * limit and u.output_tokens == 0
    assert u.cost_usd == pytest.approx((u.input_tokens * PRICE_IN + 12 * limit * PRICE_OUT) / 1e6)
    assert u.as_metrics()["cost_usd"] == pytest.approx(u.cost_usd) and u.cost_usd > 0
