"""Stage progress: periodic plain lines where stderr is not a terminal, one bar where it is, nothing when off."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from omegaconf import OmegaConf

import cli_runner
from judgebench import progress
from judgebench.checks.settings import problems


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_log_lines_at_the_interval_with_cached_work_out_of_the_rate():
    clock, out = Clock(), io.StringIO()
    with progress.stage("judge gpt_4o_mini", interval_s=30, stream=out, clock=clock):
        bar = progress.counter("judging (gpt_4o_mini)", 100, "pairs", cached=20)
        for _ in range(80):  # one pair a second
            clock.t += 1.0
            bar.update(1)
        bar.close()
        assert out.getvalue().count("\n") == 2  # closing the inner counter does not end the stage
    # t=30: 50 done, 30 of them now -> 1.0/s, 50 left -> 50s; t=60: 80 done, 60 now; t=80: the end
    assert out.getvalue().splitlines() == [
        "judge gpt_4o_mini: 50/100 pairs (50%), 20 cached, 1.0/s, ETA 50s",
        "judge gpt_4o_mini: 80/100 pairs (80%), 20 cached, 1.0/s, ETA 20s",
        "judge gpt_4o_mini: 100/100 pairs (100%), 20 cached, 1.0/s, done in 1m20s",
    ]


def test_a_stage_sums_the_loops_inside_it_into_one_line():
    """Two rounds of calls (as PRP makes) count into the stage's one total; no per-round lines."""
    clock, out = Clock(), io.StringIO()
    with progress.stage("rank prp", interval_s=10, stream=out, clock=clock):
        with progress.counter("prp (a)", 3, "pairs") as first:
            for _ in range(3):
                clock.t += 2.0
                first.update(1)  # t=2, 4, 6: under the interval, no line
        with progress.counter("prp (b)", 6, "pairs") as second:
            clock.t += 6.0
            second.update(4)  # t=12: 7 of 9 done, 7/12 s = 0.58/s, 2 left -> 3.43 s
            clock.t += 3.0
            second.update(2)  # t=15: under 10 s since the last line
    assert out.getvalue().splitlines() == [
        "rank prp: 7/9 pairs (77%), 0.6/s, ETA 3s",
        "rank prp: 9/9 pairs (100%), 0.6/s, done in 15s",
    ]


def test_a_stage_that_raises_says_it_stopped():
    clock, out = Clock(), io.StringIO()
    with pytest.raises(KeyboardInterrupt):
        with progress.stage("judge x", stream=out, clock=clock):
            bar = progress.counter("judging", 10, "pairs")
            clock.t += 4
            bar.update(2)
            raise KeyboardInterrupt
    assert out.getvalue() == "judge x: 2/10 pairs (20%), 0.5/s, stopped in 4s\n"


def test_a_stage_with_no_work_and_a_silenced_stage_print_nothing():
    out, tty = io.StringIO(), FakeTTY()
    with progress.stage("rewrite none", stream=out):
        pass
    for stream in (out, tty):
        clock = Clock()
        with progress.stage("judge x", enabled=False, interval_s=1, stream=stream, clock=clock):
            bar = progress.counter("judging", 5, "pairs", cached=1)
            for _ in range(4):
                clock.t += 5
                bar.update(1)
    assert out.getvalue() == "" and tty.getvalue() == ""


def test_a_terminal_gets_one_bar_redrawn_in_place():
    tty = FakeTTY()
    with progress.stage("judge x", interval_s=0.001, stream=tty):
        bar = progress.counter("judging", 200, "pairs", cached=50)
        for _ in range(150):
            bar.update(1)
    text = tty.getvalue()
    assert "\r" in text and text.count("\n") <= 1, repr(text[-300:])  # redrawn, not one line per update
    assert re.search(r"judge x: 100%.*200/200", text.rsplit("\r", 1)[-1]), repr(text[-300:])


def test_a_loop_outside_any_stage_has_its_own_counter():
    out = io.StringIO()
    bar = progress.counter("bm25: search", 4, "queries")
    assert isinstance(bar, progress.Progress) and bar.desc == "bm25: search" and bar.total == 4
    bar.stream, bar.tty = out, False
    for _ in range(4):
        bar.update(1)
    bar.close()
    assert re.fullmatch(r"bm25: search: 4/4 queries \(100%\), [\d.]+/s, done in 0s\n", out.getvalue())


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (59.4, "59s"), (95, "1m35s"), (3600 + 180 + 20, "1h03m")])
def test_format_duration(seconds, text):
    assert progress.format_duration(seconds) == text


@pytest.mark.parametrize("bad", [0, -5, "often"])
def test_the_interval_is_a_positive_number(bad):
    assert problems(OmegaConf.create({"progress_interval_s": bad})) == [
        f"progress_interval_s={bad!r}: expected a positive number"
    ]


def test_run_py_with_stderr_to_a_file_logs_stage_lines_and_no_carriage_return(tmp_path_factory):
    """A toy cell judged by gpt_4o_mini on the fake OpenAI server (every pair a call through llm/remote/calls.py)."""
    from judgebench.data.datasets import load_toy
    from judgebench.testing.fake_process import FakeLLMServer

    store = cli_runner.warm_store(tmp_path_factory)
    work = tmp_path_factory.mktemp("progress")
    toy = load_toy()
    n_pairs = len(toy.pool.merge(toy.qrels, on=["query_id", "doc_id"])[["query_id", "doc_id"]].drop_duplicates())
    with FakeLLMServer() as srv:
        env = {**os.environ, "OPENAI_API_KEY": "sk-test", "JUDGEBENCH_CACHE_DIR": str(work / "cache")}
        args = [
            "ranker=oracle",
            "judge=gpt_4o_mini",
            f"judge.base_url={srv.openai_base_url}",
            "progress_interval_s=0.000001",
            f"tracking_uri=sqlite:///{store}/mlflow.db",
            f"artifact_root={store}/artifacts",
            f"hydra.run.dir={work}/out",
        ]
        first = cli_runner.run(args, cwd=work, env=env)
        second = cli_runner.run([*args, "force=true"], cwd=work, env=env)
    for res in (first, second):
        assert res.rc == 0, str(res)
        assert "\r" not in res.err, repr(res.err[-500:])
        assert not re.search(r"^(rewrite|rank) ", res.err, re.M), (
            res.err
        )  # no rewriter, an oracle ranker: no work to show
    lines = re.findall(r"^judge gpt_4o_mini: .*$", first.err, re.M)
    assert len(lines) > 10, first.err  # a line at (nearly) every answer with a microsecond interval
    assert re.fullmatch(rf"judge gpt_4o_mini: 1/{n_pairs} pairs \(0%\), [\d.]+/s, ETA \S+", lines[0]), lines[0]
    assert re.fullmatch(rf"judge gpt_4o_mini: {n_pairs}/{n_pairs} pairs \(100%\), [\d.]+/s, done in \S+", lines[-1]), (
        lines[-1]
    )
    rerun = re.findall(r"^judge gpt_4o_mini: .*$", second.err, re.M)
    assert len(rerun) == 1 and rerun[0].startswith(
        f"judge gpt_4o_mini: {n_pairs}/{n_pairs} pairs (100%), {n_pairs} cached, 0.0/s, done in"
    ), rerun


def test_loading_a_model_leaves_no_transformers_bar_behind(tmp_path, capfd):
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from judgebench.llm.local.transformers_model import TransformersModel, clear_memo
    from tiny_models import tiny_causal

    path = tiny_causal(tmp_path)
    AutoModelForCausalLM.from_pretrained(path)  # loaded plainly, transformers draws its weight-loading bar
    plain = capfd.readouterr().err
    assert "Loading weights" in plain, plain
    clear_memo()
    TransformersModel(path).next_token_scores(["the cat"], ["dog"])
    ours = capfd.readouterr().err
    assert "Loading weights" not in ours and "it/s" not in ours, ours
    assert hf_logging.is_progress_bar_enabled()  # switched off only while judgebench loads


@pytest.mark.slow  # ~25 s: dequantizes the real SmolLM2 GGUF
def test_converting_the_smollm2_gguf_draws_no_bar_and_logs_one_line(tmp_path, capfd, caplog, monkeypatch):
    import gguf

    from judgebench.llm.local.smollm2 import smollm2_model_dir

    opened = []

    class CountingReader(gguf.GGUFReader):  # how often the file's metadata is parsed
        def __init__(self, path, *args, **kwargs):
            opened.append(Path(path).name)
            super().__init__(path, *args, **kwargs)

    monkeypatch.setattr(gguf, "GGUFReader", CountingReader)
    with caplog.at_level("INFO", logger="judgebench"):
        target = smollm2_model_dir(tmp_path)
    assert (target / "config.json").is_file()
    # transformers asks for a reader three times (tokenizer, config, weights); the file is parsed once
    assert len(opened) == 1 and opened[0].endswith(".gguf"), opened
    err = capfd.readouterr().err
    assert "GGUF tensors" not in err and "it/s" not in err, err[-500:]
    assert [r.getMessage() for r in caplog.records] == [f"converting the SmolLM2 GGUF once into {target}"]
