"""Secrets never reach disk or the terminal: echoed by a server, typed as a variable name, named like a credential,
or inside a URL. Every case is a real run.py (tests/helpers/cli_runner.py) against the fake server; afterwards the
planted value is searched for in every file under the test's directory (Hydra's outputs and .hydra/, multirun/, the
cache) and the MLflow store, and in stdout/stderr."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import cli_runner
from cli_runner import env_with
from judgebench import secrets
from judgebench.testing.fake_process import FakeLLMServer

STORE: dict[str, Path] = {}


_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]


def cell(tmp: Path, *extra: str, base_url: str | None = None) -> list[str]:
    return [
        "ranker=oracle",
        "judge=gpt_4o_mini",
        *([f"judge.base_url={base_url}"] if base_url else []),
        "progress=false",
        f"tracking_uri=sqlite:///{STORE['dir']}/mlflow.db",
        f"artifact_root={STORE['dir']}/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.run.dir={tmp}/out",
        f"hydra.sweep.dir={tmp}/multirun",
        "experiment_name=secrets2",
        "judge.backend.max_retries=0",
        *extra,
    ]


def leaks(tmp: Path, needle: str, res: cli_runner.Result | None = None) -> list[str]:
    hits = []
    for root in (tmp, STORE["dir"]):
        for p in root.rglob("*"):
            if p.is_file() and needle.encode() in p.read_bytes():
                hits.append(str(p))
    if res is not None and needle in res.out + res.err:
        hits.append("stdout/stderr")
    return hits


def test_a_key_echoed_by_the_server_is_scrubbed_from_failures_logs_and_summary(tmp_path):
    planted = "sk-planted-echoed-9f3a2c71"
    with FakeLLMServer(
        reject_keys=[planted], lookup_any_key=True
    ) as srv:  # a public model list: the chat echoes the key
        res = cli_runner.run(
            ["-m", *cell(tmp_path, base_url=srv.openai_base_url)], cwd=tmp_path, env=env_with(OPENAI_API_KEY=planted)
        )
        assert srv.stats()["by_outcome"]["unauthorized"] > 0
    assert res.rc == 2 and len(res.error_lines) == 1, str(res)
    assert leaks(tmp_path, planted, res) == []
    failures = list(STORE["dir"].rglob("judge_failures.csv"))
    assert failures and any("Incorrect API key provided: ***" in p.read_text() for p in failures)
    assert (tmp_path / "multirun" / "sweep_summary.json").is_file()


@pytest.mark.parametrize(
    ("override", "phrase"),
    [
        (
            "judge.backend.api_key_env=sk-planted-typed-as-name-55e1",
            "judge.backend.api_key_env: expected the name of an environment variable",
        ),
        (
            "judge.backend.api_key_env=[OPENAI_API_KEY,sk-planted-typed-as-name-55e1]",
            "judge.backend.api_key_env: expected the name",
        ),
        ("+judge.backend.authorization=Bearer sk-planted-typed-as-name-55e1", "judge.backend.authorization"),
        ("+judge.backend.hf_token=sk-planted-typed-as-name-55e1", "judge.backend.hf_token"),
        (
            "judge.base_url=http://user:sk-planted-typed-as-name-55e1@127.0.0.1:9/v1",
            "judge.base_url: credentials inside a URL",
        ),
    ],
)
def test_a_secret_on_the_command_line_is_refused_before_hydra_writes_anything(tmp_path, override, phrase):
    res = cli_runner.run([*cell(tmp_path), override], cwd=tmp_path, env=env_with())
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
    assert phrase in res.error_lines[0], str(res)
    assert leaks(tmp_path, "sk-planted-typed-as-name-55e1", res) == []
    assert not (tmp_path / "out").exists()  # Hydra's .hydra/ never written


def test_credentials_in_a_base_url_from_the_environment_are_masked_everywhere(tmp_path):
    planted = "sk-planted-url-userinfo-0c4d"
    with FakeLLMServer() as srv:
        url = srv.openai_base_url.replace("http://", f"http://judge:{planted}@")
        res = cli_runner.run(
            [*cell(tmp_path), "max_failed_share=1", "--verbose"], cwd=tmp_path, env=env_with(OPENAI_BASE_URL=url)
        )
        stats = srv.stats()
    # userinfo in the URL would make httpx send Basic auth instead of the key, and the refusal would be blamed on a
    # key never sent: it is refused before any request, in one line that names the URL masked
    assert stats["model_gets"]["openai"] == 0 and stats["requests"] == 0, stats
    assert res.rc == 2 and len(res.error_lines) == 1, str(res)
    assert "OPENAI_BASE_URL=http://***@127.0.0.1" in res.error_lines[0] and "holds credentials" in res.error_lines[0], (
        str(res)
    )
    assert "refused the API key" not in res.error_lines[0]
    assert leaks(tmp_path, planted, res) == [], str(res)


def test_scrub_masks_known_values_and_userinfo_and_leaves_short_values(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abcdefgh12345")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-0123456789")
    monkeypatch.setenv("SOME_ENV_VAR_NAME", "sk-abcdefgh-not-secret-by-name")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    secrets.register_secret_env("CUSTOM_KEYVAR")
    monkeypatch.setenv("CUSTOM_KEYVAR", "custom-secret-value")
    text = "key sk-abcdefgh12345 tok-0123456789 custom-secret-value at https://u:p@h.example/v1 k kept"
    assert secrets.scrub(text) == "key *** *** *** at https://***@h.example/v1 k kept"
    assert secrets.is_secret_key("judge.backend.authorization") and secrets.is_secret_key("apiKey")
    assert not secrets.is_secret_key("judge.backend.api_key_env") and not secrets.is_secret_key("max_output_tokens")
    record = logging.LogRecord(
        "httpx", logging.INFO, __file__, 1, "HTTP Request: POST %s", ("http://a:sk-abcdefgh12345@h/v1",), None
    )
    secrets.ScrubFilter().filter(record)
    assert record.getMessage() == "HTTP Request: POST http://***@h/v1"
