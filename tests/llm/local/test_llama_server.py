"""The llama.cpp server's command line (judgebench.llm.local.llama_server) and the one version pin its three places
share.

The server itself runs in tests/e2e/test_llama_cpp_server.py (-m slow); these checks need no model loaded.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from judgebench.llm.local import llama_server

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture
def gguf(tmp_path):
    path = tmp_path / "Tiny-Model.Q4_0.gguf"
    path.write_bytes(b"GGUF")
    return path


def test_the_pin_is_the_same_in_pyproject_the_launch_script_and_the_module():
    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    script = re.search(
        r"^XLLAMACPP_VERSION=(\S+)$", (REPO / "launch" / "llama_server.sh").read_text(encoding="utf-8"), re.M
    )
    assert extras["llama"] == [llama_server.XLLAMACPP_PIN] == [f"xllamacpp=={script.group(1)}"]
    assert "llama" in extras["all"][0]  # dev -> all -> llama: the README's install has the server


def test_server_params_are_what_llama_server_would_get(gguf):
    pytest.importorskip("xllamacpp", reason="the llama extra (pip install -e '.[llama]')")
    args = llama_server.parse_args(
        [
            "--model",
            str(gguf),
            "--port",
            "9123",
            "--ctx",
            "1024",
            "--parallel",
            "3",
            "--threads",
            "1",
            "--host",
            "0.0.0.0",
        ]
    )
    params = llama_server.server_params(args)
    assert params.model.path == str(gguf.resolve())
    assert params.model_alias == {"Tiny-Model.Q4_0"}  # the stem, whole (a str would be stored as its letters)
    assert params.hostnames == ["0.0.0.0"] and params.port == 9123
    assert params.n_parallel == 3 and params.n_ctx == 3 * 1024  # 1,024 tokens for each of the 3 slots
    assert params.cpuparams.n_threads == 1 and params.cpuparams_batch.n_threads == 1
    named = llama_server.server_params(llama_server.parse_args(["--model", str(gguf), "--alias", "judge-a"]))
    assert named.model_alias == {"judge-a"} and named.n_ctx == 2048 and named.port == 8080


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--model", "{dir}/missing.gguf"], "--model: no such file: {dir}/missing.gguf"),
        (["--model", "{dir}/notes.txt"], "--model: expected a .gguf file, got {dir}/notes.txt"),
        (["--model", "{gguf}", "--parallel", "0"], "--parallel must be at least 1, got 0"),
        (["--model", "{gguf}", "--port", "x"], "argument --port: invalid int value: 'x'"),
    ],
)
def test_bad_arguments_exit_2_with_a_message_that_names_them(argv, message, gguf, capsys):
    (gguf.parent / "notes.txt").write_text("not a model")
    fill = {"dir": gguf.parent, "gguf": gguf}
    with pytest.raises(SystemExit) as stop:
        llama_server.parse_args([a.format(**fill) for a in argv])
    assert stop.value.code == 2
    assert message.format(**fill) in capsys.readouterr().err
