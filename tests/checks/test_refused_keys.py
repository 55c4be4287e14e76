"""A key the server refuses stops everything before any work, in one line naming the key's variable, never its value."""

from __future__ import annotations

from pathlib import Path

import cli_runner
from cli_runner import env_with
from judgebench.testing.fake_process import FakeLLMServer

PLANTED = "AIza-planted-refused-4b7e19"


def test_a_gemini_key_refused_on_the_model_lookup_is_one_line_naming_its_variable(tmp_path: Path):
    with FakeLLMServer(reject_keys=[PLANTED]) as srv:
        res = cli_runner.run(
            [
                "judge=gemini_flash",
                f"judge.base_url={srv.base_url}",
                "ranker=oracle",
                "progress=false",
                f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
                f"artifact_root={tmp_path}/artifacts",
                f"cache_dir={tmp_path}/cache",
                f"hydra.run.dir={tmp_path}/out",
            ],
            cwd=tmp_path,
            env=env_with(GEMINI_API_KEY=PLANTED),
        )
        stats = srv.stats()
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err + res.out, str(res)
    line = res.error_lines[0]
    assert "refused the API key in GEMINI_API_KEY" in line and "API key not valid" in line, line
    assert PLANTED not in res.out + res.err
    assert stats["model_gets"]["gemini"] == 1 and stats["requests"] == 0, stats  # nothing judged


def test_a_key_refused_on_every_pair_after_the_lookup_names_its_variable(tmp_path: Path):
    planted = "sk-planted-refused-every-pair-8d21"
    with FakeLLMServer(reject_keys=[planted], lookup_any_key=True) as srv:  # a public model list: only the chat refuses
        res = cli_runner.run(
            [
                "judge=gpt_4o_mini",
                f"judge.base_url={srv.openai_base_url}",
                "ranker=oracle",
                "progress=false",
                "judge.backend.max_retries=0",
                f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
                f"artifact_root={tmp_path}/artifacts",
                f"cache_dir={tmp_path}/cache",
                f"hydra.run.dir={tmp_path}/out",
            ],
            cwd=tmp_path,
            env=env_with(OPENAI_API_KEY=planted),
        )
        assert srv.stats()["by_outcome"]["unauthorized"] > 0
    assert res.rc == 2 and len(res.error_lines) == 1, str(res)
    line = res.error_lines[0]
    assert "have no label" in line and "refused the API key in OPENAI_API_KEY on every one of them (401)" in line, line
    assert planted not in res.out + res.err


def test_sentence_an_openai_key_refused_on_the_model_lookup_is_one_line_and_nothing_is_judged(tmp_path: Path):
    planted = "sk-planted-refused-lookup-5c03"
    with FakeLLMServer(reject_keys=[planted]) as srv:
        res = cli_runner.run(
            [
                "judge=gpt_4o_mini",
                f"judge.base_url={srv.openai_base_url}",
                "ranker=oracle",
                "progress=false",
                f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
                f"artifact_root={tmp_path}/artifacts",
                f"cache_dir={tmp_path}/cache",
                f"hydra.run.dir={tmp_path}/out",
            ],
            cwd=tmp_path,
            env=env_with(OPENAI_API_KEY=planted),
        )
        stats = srv.stats()
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err + res.out, str(res)
    assert "refused the API key in OPENAI_API_KEY (401" in res.error_lines[0], res.error_lines[0]
    assert planted not in res.out + res.err
    assert stats["model_gets"]["openai"] == 1 and stats["requests"] == 0, stats  # refused before any pair was sent


def test_sentence_a_credentialed_base_url_is_refused_not_blamed_on_the_key(tmp_path: Path):
    with FakeLLMServer() as srv:
        url = srv.openai_base_url.replace("://", "://someone:pw-planted-77@")
        res = cli_runner.run(
            [
                "judge=gpt_4o_mini",
                "ranker=oracle",
                "progress=false",
                f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
                f"artifact_root={tmp_path}/artifacts",
                f"cache_dir={tmp_path}/cache",
                f"hydra.run.dir={tmp_path}/out",
            ],
            cwd=tmp_path,
            env=env_with(OPENAI_API_KEY="sk-fine", OPENAI_BASE_URL=url),
        )
        stats = srv.stats()
    assert res.rc == 2 and len(res.error_lines) == 1, str(res)
    line = res.error_lines[0]
    assert (
        "OPENAI_BASE_URL=http://***@" in line and "holds credentials" in line and "refused the API key" not in line
    ), line
    assert "pw-planted-77" not in res.out + res.err
    assert stats["requests"] == 0 and stats["model_gets"]["openai"] == 0, stats
