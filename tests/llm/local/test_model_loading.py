"""Local models that fit and fail loudly: device_map loading, dtype choice, the fit check, one model per process,
non-finite scores as errors, and dtype/device in the score cache key. All on the CPU with tiny models."""

from __future__ import annotations

import gc
import math
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import cli_runner
from judgebench.cache import maintenance
from judgebench.cache.keys import call_key
from judgebench.data.datasets import Dataset
from judgebench.exceptions import ModelDoesNotFit, NonFiniteScores, UserError
from judgebench.llm.local import model_loading
from judgebench.llm.local.model_registry import REGISTRY, ModelRegistry
from judgebench.llm.local.transformers_model import TransformersModel
from judgebench.rankers.prp import PRPRanker
from judgebench.rankers.rankt5 import RankT5Ranker
from judgebench.rankers.rg import RGRanker
from tiny_models import tiny_causal, tiny_seq2seq

DOCS = {"d1": "cat good good good", "d2": "cat dog", "d3": "good tree water", "d4": "sun moon river"}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """A tiny T5 and Llama, and copies whose final norm is scaled by 1e5: their logits overflow float16 (inf, then
    NaN in the log-softmax) and stay finite in float32 and bfloat16, as T5 and UL2 do on V100s."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    root = tmp_path_factory.mktemp("tiny")
    out = {
        "t5": tiny_seq2seq(root),
        "llama": tiny_causal(root),
        "t5_hot": tiny_seq2seq(root, name="t5-hot"),
        "llama_hot": tiny_causal(root, name="llama-hot"),
    }
    for name, cls, norm in (
        ("t5_hot", AutoModelForSeq2SeqLM, "decoder.final_layer_norm"),
        ("llama_hot", AutoModelForCausalLM, "model.norm"),
    ):
        net = cls.from_pretrained(out[name])
        with torch.no_grad():
            net.get_submodule(norm).weight.mul_(1e5)
        net.save_pretrained(out[name])
    return out


@pytest.fixture
def ds() -> Dataset:
    pool = pd.DataFrame({"query_id": "q1", "doc_id": list(DOCS), "score": [4.0, 3, 2, 1], "rank": [1, 2, 3, 4]})
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": ["d1", "d2"], "relevance": [3, 0]})
    return Dataset("tiny", {"q1": "what cat"}, qrels, dict(DOCS), pool)


def spec(path: Path, **kw) -> dict:
    return {"model": str(path), "device": "cpu", "batch_size": 2, "max_input_tokens": 128, **kw}


# ---- dtype, device map, fit ------------------------------------------------------------------------
def test_auto_dtype_is_bf16_only_where_the_gpu_has_it_and_never_fp16(monkeypatch):
    assert model_loading.resolve_dtype("auto", "cpu") == "float32"
    monkeypatch.setattr(model_loading, "gpu_has_bf16", lambda device="cuda": False)  # a V100 / T4
    assert model_loading.resolve_dtype("auto", "cuda") == "float32"
    monkeypatch.setattr(model_loading, "gpu_has_bf16", lambda device="cuda": True)  # an A100 / H100
    assert model_loading.resolve_dtype("auto", "cuda:1") == "bfloat16"
    assert model_loading.resolve_dtype("float16", "cuda") == "float16"  # only when asked
    with pytest.raises(UserError, match="model_spec.dtype='fp8': expected one of auto, float32, bfloat16, float16"):
        model_loading.resolve_dtype("fp8", "cpu")
    assert model_loading.device_map_for("cuda") == "auto" and model_loading.device_map_for("cuda:1") == {"": "cuda:1"}
    assert model_loading.device_map_for("cpu") == {"": "cpu"}


def test_device_map_loading_matches_a_plain_forward(models, monkeypatch):
    """Loaded with device_map and low_cpu_mem_usage, the scores are those of a plain from_pretrained + forward."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    seen = []
    original = AutoModelForSeq2SeqLM.from_pretrained.__func__

    def spy(cls, *args, **kwargs):
        seen.append(kwargs)
        return original(cls, *args, **kwargs)

    monkeypatch.setattr(AutoModelForSeq2SeqLM, "from_pretrained", classmethod(spy))
    REGISTRY.release_all()
    lm = TransformersModel(models["t5"], device="cpu", dtype="auto", batch_size=3)
    assert seen and seen[0]["device_map"] == {"": "cpu"} and seen[0]["low_cpu_mem_usage"] is True
    assert seen[0]["dtype"] == torch.float32 and lm.dtype == "float32" and lm.device_name == "cpu"
    assert {t.device.type for t in lm.model.parameters()} == {"cpu"}
    prompts = ["Query: what cat Document: " + t for t in DOCS.values()]
    x10 = lm.token_id("<extra_id_10>")
    got = lm.next_token_scores(prompts, [x10], normalise=False)[:, 0]

    tok = AutoTokenizer.from_pretrained(models["t5"])
    plain = AutoModelForSeq2SeqLM.from_pretrained(models["t5"]).eval()  # no device map: built and kept on the CPU
    want = []
    for p in prompts:
        with torch.no_grad():
            out = plain(
                **tok(p, return_tensors="pt"), decoder_input_ids=torch.tensor([[plain.config.decoder_start_token_id]])
            )
        want.append(out.logits[0, 0, x10].item())
    assert np.abs(got - np.array(want)).max() < 1e-4 and np.ptp(want) > 1e-3


def test_weight_bytes_and_the_fit_check(models, monkeypatch):
    from transformers import AutoModelForSeq2SeqLM

    config = model_loading.load_config(str(models["t5"]), None)
    real = AutoModelForSeq2SeqLM.from_pretrained(models["t5"])
    params = sum(p.numel() for p in real.parameters())
    assert model_loading.weight_bytes(config, "seq2seq", "bfloat16") == 2 * params
    assert model_loading.weight_bytes(config, "seq2seq", "float32") == 4 * params
    gib = 1024**3
    model_loading.check_fits("m", "bfloat16", 38 * gib, {"cuda:0": 80 * gib})  # 38 * 1.1 + 1 fits in 80
    with pytest.raises(
        ModelDoesNotFit, match=r"model google/flan-ul2 needs ~44.7 GiB of GPU memory in bfloat16 .*cuda:0 40.0 GiB free"
    ):
        model_loading.check_fits("google/flan-ul2", "bfloat16", int(39.7 * gib), {"cuda:0": 40 * gib})
    # on a GPU that is too small the load stops before any weight is read, instead of offloading to the CPU
    loaded = []
    monkeypatch.setattr(model_loading, "gpu_free_bytes", lambda device: {"cuda:0": 1000})
    monkeypatch.setattr(AutoModelForSeq2SeqLM, "from_pretrained", classmethod(lambda cls, *a, **k: loaded.append(1)))
    with pytest.raises(ModelDoesNotFit, match="it is not offloaded to the CPU"):
        model_loading.load_weights("tiny", str(models["t5"]), None, "seq2seq", "cuda", "bfloat16")
    assert not loaded


# ---- one model per process ------------------------------------------------------------------------
def test_a_second_model_releases_the_first_and_the_first_reloads_when_used(models):
    REGISTRY.release_all()
    first = TransformersModel(models["t5"], device="cpu")
    scores = first.next_token_scores(["cat dog"], ["<extra_id_10>"], normalise=False)
    first.next_token_scores(["cat"], ["yes"])
    ref = weakref.ref(first.model)
    second = TransformersModel(models["llama"], device="cpu")
    second.next_token_scores(["cat dog"], ["yes"], prefixes=["cat"])
    gc.collect()
    assert ref() is None  # the first model's weights are gone, though `first` still exists
    assert len(REGISTRY) == 1 and REGISTRY.keys()[0][0] == str(Path(models["llama"]).resolve())
    assert "_prefix_memo" in second.__dict__
    again = first.next_token_scores(["cat dog"], ["<extra_id_10>"], normalise=False)  # loads again, releasing `second`
    assert np.array_equal(again, scores) and len(REGISTRY) == 1
    assert "_prefix_memo" not in second.__dict__  # its prefix key/value caches went with its weights


def test_a_ranker_and_a_judge_on_the_same_weights_share_one_copy(models, tmp_path):
    from judgebench.judges.transformers_judge import TransformersJudge

    REGISTRY.release_all()
    ranker = RGRanker(name="RG", model_spec=spec(models["llama"]), cache_dir=str(tmp_path), progress=False)
    judge = TransformersJudge(
        name="j", family="open", model="m", model_spec=spec(models["llama"], batch_size=4), cache_dir=str(tmp_path)
    )
    assert ranker.load_model().model is judge.load_model().model and len(REGISTRY) == 1


def test_the_registry_keeps_as_many_models_as_it_is_told(monkeypatch):
    loads = []
    reg = ModelRegistry()
    monkeypatch.setenv("JUDGEBENCH_MAX_LOADED_MODELS", "2")
    for name in ("a", "b", "a", "c"):
        reg.acquire((name, None, "causal", "cpu", "float32"), lambda name=name: (loads.append(name), object())[::-1])
    assert loads == ["a", "b", "c"] and [k[0] for k in reg.keys()] == ["a", "c"]  # b was the least recently used


# ---- non-finite scores --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "ranker_cls, model", [(RankT5Ranker, "t5_hot"), (PRPRanker, "t5_hot"), (RGRanker, "llama_hot")]
)
def test_a_float16_overflow_is_an_error_naming_model_dtype_and_device(ranker_cls, model, models, ds, tmp_path):
    r = ranker_cls(
        name="R", model_spec=spec(models[model], dtype="float16"), cache_dir=str(tmp_path / "fp16"), progress=False
    )
    with pytest.raises(NonFiniteScores) as err:
        r.rank(ds, ds.corpus)
    message = str(err.value)
    assert f"model {Path(models[model]).resolve()} (float16 on cpu) gave non-finite" in message
    assert "set model_spec.dtype=bfloat16" in message and "or float32" in message
    assert maintenance.stats(r.cache).entries == 0  # nothing non-finite was stored
    # the same weights in float32 and bfloat16 score (finite values): the overflow is float16's
    for dtype in ("float32", "bfloat16"):
        ok = ranker_cls(
            name="R", model_spec=spec(models[model], dtype=dtype), cache_dir=str(tmp_path / dtype), progress=False
        )
        assert np.isfinite(ok.rank(ds, ds.corpus)["score"]).all()


def test_the_error_is_one_line_on_the_command_line(models, tmp_path):
    args = [
        "ranker=rankt5_base",
        f"ranker.model_spec.model={models['t5_hot']}",
        "ranker.model_spec.dtype=float16",
        "ranker.model_spec.device=cpu",
        "ranker.rerank_depth=3",
        "judge=human",
        "progress=false",
        f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"artifact_root={tmp_path}/art",
        f"cache_dir={tmp_path}/cache",
        f"hydra.run.dir={tmp_path}/out",
    ]
    res = cli_runner.run(args, cwd=tmp_path, env=cli_runner.env_with(), fresh=True)
    assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
    assert (
        "(float16 on cpu) gave non-finite logits" in res.error_lines[0]
        and "model_spec.dtype=bfloat16" in res.error_lines[0]
    )


# ---- dtype and device in the cache key -------------------------------------------------------------
def test_a_float32_score_is_not_served_to_a_bfloat16_request(models, ds, tmp_path):
    def ranker(dtype):
        return RankT5Ranker(
            name="RankT5", model_spec=spec(models["t5"], dtype=dtype), cache_dir=str(tmp_path), progress=False
        )

    fp32 = ranker("float32")
    s32 = dict(zip(*fp32.rank(ds, ds.corpus)[["doc_id", "score"]].T.values))
    assert fp32.scored_now == 4
    bf16 = ranker("bfloat16")
    s16 = dict(zip(*bf16.rank(ds, ds.corpus)[["doc_id", "score"]].T.values))
    assert bf16.scored_now == 4  # not served from the float32 entries
    assert s16 != s32 and all(math.isclose(s16[d], s32[d], rel_tol=0.05, abs_tol=0.05) for d in DOCS)
    again = ranker("float32")
    assert dict(zip(*again.rank(ds, ds.corpus)[["doc_id", "score"]].T.values)) == s32 and again.scored_now == 0
    prompt = "Query: what cat Document: cat dog"
    assert fp32.key("what cat", "cat dog") != bf16.key("what cat", "cat dog")
    assert fp32.spec.cache_meta() == {
        "backend": "transformers",
        "model": str(models["t5"]),
        "dtype": "float32",
        "device": "cpu",
    }
    # an entry written under the key of before (no dtype, no device) stays readable and is not used
    old = call_key(
        backend="transformers",
        model=str(models["t5"]),
        method="rankt5",
        prompt_version="rankt5@1",
        prompt=prompt,
        params={"token": "<extra_id_10>"},
    )
    fresh = RankT5Ranker(name="RankT5", model_spec=spec(models["t5"]), cache_dir=str(tmp_path / "old"), progress=False)
    fresh.cache.put(old, {"score": 999.0}, {"backend": "transformers", "model": str(models["t5"])})
    run = fresh.rank(ds, ds.corpus)
    assert fresh.scored_now == 4 and 999.0 not in set(run["score"]) and fresh.cache.get(old) == {"score": 999.0}
