"""What a local model costs before it runs (dry run), how much memory a GPU cell asks SLURM for, and the GPU check's
CPU path. Token counts and parameter counts are checked against the real tokenizer and model, computed apart."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from itertools import permutations
from pathlib import Path

import pandas as pd
import pytest

import cli_runner
from judgebench.data.datasets import Dataset, load_toy
from judgebench.llm.estimate import work_estimate as we
from judgebench.llm.local.models import ModelSpec
from judgebench.rankers.prp import PRPRanker, comparisons_bound
from judgebench.rankers.rankt5 import RankT5Ranker
from tiny_models import tiny_seq2seq

REPO = Path(__file__).resolve().parents[3]
DOCS = {
    "d1": "cat good good good tree water",
    "d2": "cat dog",
    "d3": "good tree water sun moon river city",
    "d4": "sun",
}
A100 = we.GPUThroughput()


@pytest.fixture(scope="module")
def t5(tmp_path_factory) -> Path:
    return tiny_seq2seq(tmp_path_factory.mktemp("tiny"))


@pytest.fixture
def ds() -> Dataset:
    pool = pd.DataFrame({"query_id": "q1", "doc_id": list(DOCS), "score": [4.0, 3, 2, 1], "rank": [1, 2, 3, 4]})
    qrels = pd.DataFrame({"query_id": "q1", "doc_id": ["d1", "d2"], "relevance": [3, 0]})
    return Dataset("tiny", {"q1": "what cat"}, qrels, dict(DOCS), pool)


def real_counts(path: Path) -> tuple[float, float, float]:
    """(encoder, decoder, output layer) parameters of the saved model, by name, embeddings left out."""
    from transformers import AutoModelForSeq2SeqLM

    net = AutoModelForSeq2SeqLM.from_pretrained(path)
    named = dict(net.named_parameters())  # tied weights appear once, as shared.weight
    enc = sum(p.numel() for n, p in named.items() if n.startswith("encoder.") and "embed_tokens" not in n)
    dec = sum(p.numel() for n, p in named.items() if n.startswith("decoder.") and "embed_tokens" not in n)
    return float(enc), float(dec), float(net.lm_head.weight.numel())


def test_rankt5_work_is_its_prompts_tokens_and_encoder_flops(t5, ds, tmp_path):
    r = RankT5Ranker(
        name="RankT5", model_spec={"model": str(t5), "device": "cpu"}, cache_dir=str(tmp_path), progress=False
    )
    size = we.model_size(r.spec, str(t5))
    enc, dec, head = real_counts(t5)
    assert (size.encoder, size.decoder, size.head, size.source, size.seq2seq) == (enc, dec, head, "its config", True)
    counter = we.TokenCounter(str(t5))
    assert counter.source == "its tokenizer"
    work = we.estimate(r.planned_prompts(ds, ds.corpus), size, counter, 512, True, r.cache, A100)
    lm = r.load_model()
    tokens = sum(len(lm.encode(f"Query: what cat Document: {t}")[0]) for t in DOCS.values())
    assert (work.prompts, work.cached, work.input_tokens, work.decoder_tokens) == (4, 0, tokens, 4)
    assert work.cost.flops == pytest.approx(2 * (enc * tokens + dec * 4 + head * 4))
    assert work.gpu_hours == work.cost.gpu_hours == pytest.approx(work.cost.flops / (312e12 * 0.4) / 3600)
    r.rank(ds, ds.corpus)  # once scored, nothing is left to do
    after = we.estimate(r.planned_prompts(ds, ds.corpus), size, counter, 512, True, r.cache, A100)
    assert (after.prompts, after.cached, after.input_tokens, after.cost.flops) == (4, 4, 0, 0.0)


def test_prp_all_pairs_tokens_follow_the_per_passage_budget(t5, ds, tmp_path):
    """With a small max_input_tokens each passage is cut to half the budget, as PRP's _fit cuts it."""
    r = PRPRanker(
        name="PRP",
        model_spec={"model": str(t5), "device": "cpu", "max_input_tokens": 40},
        cache_dir=str(tmp_path),
        progress=False,
    )
    lm = r.load_model()
    work = we.estimate(
        r.planned_prompts(ds, ds.corpus),
        we.model_size(r.spec, str(t5)),
        we.TokenCounter(str(t5)),
        40,
        True,
        r.cache,
        A100,
    )
    fitted = [r._fit(lm, "what cat", DOCS[a], DOCS[b])[0] for a, b in permutations(DOCS, 2)]
    assert lm.truncated > 0  # the budget did cut passages
    assert work.prompts == 12 and work.input_tokens == sum(len(lm.encode(p, "Passage")[0]) for p in fitted)
    assert work.decoder_tokens == 12 * len(lm.encode("x", "Passage")[1])  # start token + the forced "Passage"


def test_prp_reuses_the_prompt_it_filled_for_the_key_only_where_no_passage_is_cut(t5, tmp_path):
    """ask() fills each prompt for its cache key; _fit_many takes it as it is where both passages fit, and fills
    the cut passages into a new one where they do not: the same prompts as filling them all again."""
    from judgebench.llm.prompts import fill
    from judgebench.rankers.prp import PRP_PROMPT

    r = PRPRanker(
        name="PRP",
        model_spec={"model": str(t5), "device": "cpu", "max_input_tokens": 48},
        cache_dir=str(tmp_path),
        progress=False,
    )
    lm = r.load_model()
    triples = [("what cat", DOCS[a], DOCS[b]) for a, b in permutations(DOCS, 2)]
    given = [fill(PRP_PROMPT, {"query": q, "doc1": a, "doc2": b}) for q, a, b in triples]
    fresh = r._fit_many(lm, triples)
    reused = r._fit_many(lm, triples, given)
    assert reused == fresh
    cut = [p != g for (p, _), g in zip(fresh, given)]
    assert any(cut) and not all(cut)  # some prompts had a passage cut, some kept the prompt as filled


@pytest.mark.parametrize("variant, n, top_k", [("sort", 8, 3), ("sort", 6, 6), ("sliding", 7, 10), ("sort", 2, 1)])
def test_the_comparison_bound_holds_for_sliding_and_sort(variant, n, top_k, tmp_path):
    class Counting(PRPRanker):
        def ask(self, triples):
            self.asked += len(triples)
            return ["A" if a < b else "B" for _, a, b in triples]  # any consistent order

    docs = {f"d{i}": f"doc {i:02d}" for i in range(n)}
    pool = pd.DataFrame({"query_id": "q", "doc_id": list(docs), "score": range(n, 0, -1), "rank": range(1, n + 1)})
    ds = Dataset("t", {"q": "query"}, pd.DataFrame({"query_id": ["q"], "doc_id": ["d0"], "relevance": [1]}), docs, pool)
    r = Counting(
        name="P",
        model_spec={"model": "unused"},
        cache_dir=str(tmp_path),
        variant=variant,
        passes=2,
        top_k=top_k,
        progress=False,
    )
    r.asked = 0
    r.rank(ds, ds.corpus)
    bound = comparisons_bound(variant, n, 2, top_k)
    assert 0 < r.asked <= 2 * bound and len(list(r.planned_prompts(ds, ds.corpus).prompts)) == 2 * bound
    if variant == "sliding":
        assert r.asked == 2 * bound  # exact: passes x (n-1) comparisons


def test_without_a_config_the_size_comes_from_params_b():
    ul2 = we.model_size(ModelSpec(model="google/flan-ul2", params_b=19.5), "google/flan-ul2-not-on-disk")
    assert (ul2.encoder, ul2.decoder, ul2.seq2seq) == (pytest.approx(7.8e9), pytest.approx(11.7e9), True)
    assert ul2.source == "model_spec.params_b=19.5, encoder 40%"
    llama = we.model_size(ModelSpec(model="meta/llama-x", params_b=7), "meta/llama-x")
    assert (llama.encoder, llama.decoder, llama.seq2seq) == (7e9, 0.0, False)
    assert we.model_size(ModelSpec(model="acme/unknown"), "acme/unknown") is None


def test_a_grid_dry_run_sums_each_local_models_work_once(t5, ds, tmp_path, capsys):
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    from judgebench.jobs import dry_run

    dry_run._GPU_PLANNED.clear()

    def cfg(model, peak):  # (the ranker, the GPU its hours are estimated on), as a cell resolves them
        ranker = instantiate(
            OmegaConf.create(
                {
                    "_target_": "judgebench.rankers.rankt5.RankT5Ranker",
                    "name": "RankT5",
                    "progress": False,
                    "model_spec": {"model": str(model), "device": "cpu"},
                    "cache_dir": str(tmp_path),
                }
            )
        )
        return ranker, {"gpu": "G", "peak_tflops": peak, "utilisation": 1.0}

    other = tiny_seq2seq(tmp_path, name="other-t5", seed=1)
    for model in (t5, t5, other):  # the second cell (same ranker, another judge) adds nothing
        ranker, gpu = cfg(model, 1e-12)
        dry_run.plan_ranking(ranker, ds, ds.corpus, "tiny / RankT5", gpu)
    lines = capsys.readouterr().out.splitlines()
    hours = [float(re.search(r", ~([0-9.e+-]+) GPU-hours on G", x).group(1)) for x in lines]
    totals = [float(re.search(r"grid so far: ~([0-9.]+) GPU-hours", x).group(1)) for x in lines]
    assert all(
        x.startswith(f"[dry run] tiny / RankT5 / ranker {m}: 4 prompts, 0 cached, 4 to score")
        for x, m in zip(lines, (t5, t5, other))
    )
    assert (
        "by its tokenizer; " in lines[0]
        and "params from its config" in lines[0]
        and "OVER slurm_gpu's timeout_min=240 min" in lines[0]
    )
    assert totals[1] == totals[0] == pytest.approx(hours[0], rel=0.01)
    assert totals[2] == pytest.approx(hours[0] + hours[2], rel=0.01)
    ranker, gpu = cfg(t5, 1e6)
    dry_run.plan_ranking(ranker, ds, ds.corpus, "tiny / RankT5", gpu)
    assert "OVER" not in capsys.readouterr().out


@pytest.mark.slow  # ~25 s: a fresh interpreter through run.py
def test_the_dry_run_prints_a_local_rankers_gpu_hours_and_the_time_limit(tmp_path):
    toy = load_toy()
    depth = 4
    prompts = sum(min(depth, len(g)) * (min(depth, len(g)) - 1) for _, g in toy.pool.groupby("query_id"))
    args = [
        "dry_run=true",
        "dataset=toy",
        "ranker=prp_flan_t5_xl",
        f"ranker.rerank_depth={depth}",
        "judge=human",
        "progress=false",
        "gpu_estimate.peak_tflops=0.001",
        "gpu_estimate.utilisation=0.5",
        f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"artifact_root={tmp_path}/art",
        f"cache_dir={tmp_path}/cache",
        f"hydra.run.dir={tmp_path}/out",
    ]
    res = cli_runner.run(
        args, cwd=tmp_path, env=cli_runner.env_with(HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path / "hf")), fresh=True
    )
    assert res.rc == 0, str(res)
    line = next(
        x for x in res.out.splitlines() if x.startswith("[dry run] toy / PRP-FLAN-T5-XL / ranker google/flan-t5-xl:")
    )
    assert f": {prompts:,} prompts, 0 cached, {prompts:,} to score" in line, line
    assert (
        "~4 characters a token (tokenizer not on disk)" in line
        and "2.85B params from model_spec.params_b=2.85, encoder 40%" in line
    )
    flops, hours = re.search(
        r"~([0-9.e+]+) FLOPs, ~([0-9.]+) GPU-hours on A100-SXM4-80GB bf16 at 0.001 TFLOP/s x 0.50", line
    ).groups()
    assert float(hours) == pytest.approx(float(flops) / (0.001e12 * 0.5) / 3600, rel=0.01)
    suggested = int(
        re.search(r"OVER slurm_gpu's timeout_min=240 min: set hydra.launcher.timeout_min=(\d+) ", line).group(1)
    )
    assert suggested == pytest.approx(float(hours) * 60 * 1.25, rel=0.01)  # the estimate and a quarter more


# ---- memory of a GPU cell ------------------------------------------------------------------------------
def test_slurm_gpu_memory_follows_the_cells_models():
    from hydra import compose, initialize_config_dir

    from judgebench.config.config_dir import CONF_DIR

    def mem(*overrides):
        with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=["hydra/launcher=slurm_gpu", *overrides], return_hydra_config=True)
            return cfg.hydra.launcher.mem_gb, list(cfg.hydra.launcher.setup)

    assert mem("ranker=prp_ul2") == (56, ["export HF_HUB_OFFLINE=1"])
    assert (
        mem("ranker=rankt5_base")[0] == 16 and mem("ranker=prp_flan_t5_xxl")[0] == 40 and mem("ranker=rankt5")[0] == 24
    )
    assert mem("ranker=bm25", "judge=human")[0] == 32  # no local model: the profile's default
    assert (
        mem("ranker=rankt5_base", "judge=transformers", "judge.model_spec.model=x", "judge.model_spec.memory_gb=70.5")[
            0
        ]
        == 71
    )
    assert mem("ranker=prp_ul2", "hydra.launcher.mem_gb=100")[0] == 100  # a number overrides it


def test_jobs_are_grouped_by_the_settings_they_need():
    from hydra_plugins.judgebench_launcher import group_by_settings

    settings = [{"mem_gb": 56}, {"mem_gb": 16}, {"mem_gb": 56}, {"mem_gb": 16}, {"mem_gb": 24}]
    assert group_by_settings(settings) == [({"mem_gb": 56}, [0, 2]), ({"mem_gb": 16}, [1, 3]), ({"mem_gb": 24}, [4])]


@pytest.mark.slow  # ~40 s: two cells in subprocesses
def test_a_sweep_submits_one_array_per_memory_value(tmp_path):
    """Through submitit's local executor (the SLURM code path): mem_gb interpolating each cell's config is resolved
    per cell, and cells with different values are submitted separately."""
    from sweeps import explain, sweep

    done = sweep(
        tmp_path,
        "ranker=oracle",
        "perturbation=perfect",
        "judge=human,simulated",
        "+hydra.launcher.mem_gb=${oc.select:judge.seed,1}",
        launcher="local_parallel",
    )
    assert done.returncode == 0, explain(done)
    assert "judgebench sweep: 2 cells - 2 ran, 0 skipped, 0 failed" in done.stdout, explain(done)
    log = done.stdout + done.stderr
    assert "1 cells with mem_gb=1" in log and "1 cells with mem_gb=11" in log, explain(done)


# ---- the GPU check's CPU path --------------------------------------------------------------------------
def test_the_gpu_check_refuses_without_a_gpu():
    done = subprocess.run([str(REPO / "launch" / "gpu_check.sh")], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert done.stderr.startswith("gpu_check: no NVIDIA GPU here") and "--cpu --tiny" in done.stderr


def test_the_gpu_check_runs_its_code_path_on_tiny_models(tmp_path):
    out = tmp_path / "check.json"
    done = subprocess.run(
        [
            str(REPO / "launch" / "gpu_check.sh"),
            "--cpu",
            "--tiny",
            "--queries",
            "2",
            "--rankt5-depth",
            "6",
            "--prp-depth",
            "3",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={**os.environ, "PYTHON": sys.executable},
    )  # the interpreter running the tests, wherever its venv is
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(out.read_text())
    rows = {r["check"]: r for r in result["rows"]}
    assert result["failed"] == 0 and set(rows) == {"rankt5", "prp"}
    assert rows["rankt5"]["prompts"] == 2 * 6 and rows["prp"]["prompts"] == 2 * 3 * 2
    toy = load_toy()
    for r in rows.values():
        assert (
            r["weights"] == "stand-in"
            and not r["ndcg_meaningful"]
            and r["dtype"] == "float32"
            and r["prompts_per_s"] > 0
        )
        assert r["ndcg10"] == pytest.approx(ndcg10(r["run"], toy.qrels), abs=1e-4)
        assert f"  {r['check']}: random standin-tiny [stand-in" in done.stdout
    assert "gpu_check: after releasing every model: 0 loaded" in done.stdout
    # the decoder-judge check: TransformersJudge on the first 24 label-set pairs, budgets 512 and 4096, both paths
    judge = result["judge"]
    n_pairs = min(24, len(toy.label_set()))
    assert judge["pairs"] == n_pairs and judge["shape"] == "tiny" and judge["ceiling_tflops"] > 0
    assert [(r["batch_tokens"], r["path"]) for r in judge["rows"]] == [
        (512, "unshared"),
        (512, "shared"),
        (512, "shared-copy"),
        (4096, "unshared"),
        (4096, "shared"),
    ]
    for r in judge["rows"]:
        assert r["prompts"] == n_pairs and r["prompts_per_s"] > 0 and 0 <= r["padding_waste"] < 1
        assert r["share_of_ceiling"] == pytest.approx(r["tflops"] / judge["ceiling_tflops"], rel=0.02, abs=1e-3)
    unshared, shared = judge["rows"][0], judge["rows"][1]
    assert shared["tokens_per_prompt"] < unshared["tokens_per_prompt"]  # the prefix is run once per query
    assert unshared["forwards"] > judge["rows"][3]["forwards"]  # a larger budget: fewer, larger forwards
    # the tails attend one copy of the prefix; the fallback's per-row cache reads more keys/values a forward
    copied = judge["rows"][2]
    assert shared["prefix_copy_batches"] == 0 < copied["prefix_copy_batches"] and unshared["prefix_kv_mib"] == 0
    assert 0 < shared["prefix_kv_mib"] < copied["prefix_kv_mib"] and copied["prompts"] == n_pairs
    assert set(judge["equal_labels"]) == {"512", "4096"} and all(0 <= v <= 1 for v in judge["equal_labels"].values())
    assert "judge [budget 4096]: shared/unshared speed" in done.stdout


def ndcg10(run: list, qrels: pd.DataFrame) -> float:
    """nDCG@10 by hand: judged documents only, linear gains, the ideal from all of the query's qrels."""
    scores = []
    for qid in dict.fromkeys(q for q, _, _ in run):
        rel = dict(zip(*qrels[qrels["query_id"] == qid][["doc_id", "relevance"]].T.values))
        ranked = [d for q, d, _ in sorted((x for x in run if x[0] == qid), key=lambda x: x[2]) if d in rel][:10]
        dcg = sum(rel[d] / math.log2(i + 2) for i, d in enumerate(ranked))
        ideal = sum(g / math.log2(i + 2) for i, g in enumerate(sorted(rel.values(), reverse=True)[:10]))
        scores.append(dcg / ideal if ideal else 0.0)
    return sum(scores) / len(scores)
