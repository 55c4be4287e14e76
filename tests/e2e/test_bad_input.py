"""Bad input through the real entry points: every case gives ONE clear message and a non-zero exit code.

Each case runs ``python run.py ARGS`` (forked from the warm test process by tests/helpers/cli_runner.py: the same
code path as a new interpreter, ~0.3 s instead of ~4 s of imports; the plain-interpreter form is checked
too) or the compare CLI. A judgebench error is exactly one ``judgebench: error: <message>`` line on stderr
and exit code 2, with no traceback (an unknown group option too, listing the valid ones); Hydra's own
errors (bad override syntax) are Hydra's message and exit code 1. ``--verbose`` / JUDGEBENCH_VERBOSE=1 /
HYDRA_FULL_ERROR=1 show the traceback.

The dataset cases use the file-mode dataset (``dataset=dl19 dataset.data_dir=null dataset.topics=...
dataset.qrels=... dataset.pool=... dataset.passages=...``) on three toy queries written to tmp, one file
broken per case.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import cli_runner
from cli_runner import env_with, file_mode, write_dataset

STORE: dict[str, Path] = {}


_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]


def base_args(tmp: Path, args: list[str]) -> list[str]:
    """Case args first; defaults (oracle ranker: no index to build) only for keys the case leaves alone."""
    keys = {a.partition("=")[0].lstrip("+~") for a in args}
    defaults = {
        "ranker": "oracle",
        "progress": "false",
        "tracking_uri": f"sqlite:///{STORE['dir']}/mlflow.db",
        "artifact_root": f"{STORE['dir']}/artifacts",
        "cache_dir": f"{tmp}/cache",
        "hydra.run.dir": f"{tmp}/out",
        "hydra.sweep.dir": f"{tmp}/multirun",
    }
    return [*args, *(f"{k}={v}" for k, v in defaults.items() if k not in keys)]


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY")
        and k not in ("OPENAI_BASE_URL", "HYDRA_FULL_ERROR", "JUDGEBENCH_VERBOSE", "JUDGEBENCH_CACHE_DIR")
    }
    return {**env, **extra}


def assert_one_clear_error(res: cli_runner.Result, *phrases: str, rc: int = 2) -> str:
    """Exit code rc, no traceback; rc 2: exactly one `judgebench: error:` line holding every phrase."""
    assert res.rc == rc, str(res)
    assert "Traceback" not in res.err and "Traceback" not in res.out, str(res)
    assert "HYDRA_FULL_ERROR" not in res.err + res.out, str(res)  # Hydra's hint: no stray line after ours
    if rc == 2:
        assert len(res.error_lines) == 1, str(res)
        text = res.error_lines[0]
    else:
        text = res.err
    for phrase in phrases:
        assert phrase in text, f"{phrase!r} not in the message:\n{text}\n{res}"
    return text


# --------------------------------------------------------------------------- the table

Edit = Callable[[dict[str, Path], Path], list[str]]  # (dataset files, tmp) -> extra args; may rewrite a file


def _rewrite(name: str, fn: Callable[[str], str]) -> Edit:
    def edit(files: dict[str, Path], tmp: Path) -> list[str]:
        files[name].write_text(fn(files[name].read_text(encoding="utf-8")), encoding="utf-8")
        return file_mode(files)

    return edit


def _line(n: int, fn: Callable[[str], str]) -> Callable[[str], str]:
    def apply(text: str) -> str:
        lines = text.splitlines(keepends=True)
        lines[n - 1] = fn(lines[n - 1])
        return "".join(lines)

    return apply


def _args(*args: str) -> Edit:
    return lambda files, tmp: list(args)


def _prompt(text: str) -> Edit:
    def edit(files: dict[str, Path], tmp: Path) -> list[str]:
        path = tmp / "my_prompt.txt"
        path.write_text(text, encoding="utf-8")
        return ["judge=gpt_4o_mini", f"judge.prompt={path}"]

    return edit


def _non_utf8(files: dict[str, Path], tmp: Path) -> list[str]:
    data = files["passages"].read_bytes().splitlines(keepends=True)
    data[1] = data[1].replace(b"e", b"\xe9", 1)  # latin-1 'é'
    files["passages"].write_bytes(b"".join(data))
    return file_mode(files)


def _empty_passage(files: dict[str, Path], tmp: Path) -> list[str]:
    lines = files["passages"].read_text(encoding="utf-8").splitlines(keepends=True)
    doc = json.loads(lines[2])["docid"]
    lines[2] = json.dumps({"docid": doc, "text": "  "}) + "\n"
    files["passages"].write_text("".join(lines), encoding="utf-8")
    return file_mode(files)


def _ranks_scores_disagree(files: dict[str, Path], tmp: Path) -> list[str]:
    run = tmp / "system.run"
    run.write_text("q01 Q0 d005 1 3.0 sys\nq01 Q0 d008 2 1.0 sys\nq01 Q0 d028 3 2.0 sys\n", encoding="utf-8")
    return [*file_mode(files), "ranker=runfile", "ranker.name=MySystem", f"ranker.path={run}"]


def _drop_passage(files: dict[str, Path], tmp: Path) -> list[str]:
    lines = files["passages"].read_text(encoding="utf-8").splitlines(keepends=True)
    files["passages"].write_text("".join(lines[:3] + lines[4:]), encoding="utf-8")
    return file_mode(files)


def _missing(files: dict[str, Path], tmp: Path) -> list[str]:
    files["qrels"] = tmp / "no-such-qrels.txt"
    return file_mode(files)


def case(id: str, edit: Edit, *phrases: str, rc: int = 2, env: dict[str, str] | None = None):
    return pytest.param(edit, phrases, rc, env or {}, id=id)


CASES = [
    # ---- config
    case(
        "unknown-group-option",
        _args("judge=gpt5"),
        "judge=gpt5: no such judge",
        "valid options:",
        "gpt_4o_mini",
        "simulated",
    ),
    case(
        "unknown-dataset-name",
        _args("dataset=dl21"),
        "dataset=dl21: no such dataset",
        "dl19, dl20, irds, llmjudge, toy, trec",
    ),
    case("unknown-option-in-a-sweep", _args("-m", "judge=human,gpt5"), "judge=gpt5: no such judge"),
    case("unknown-experiment", _args("+experiment=dmeo"), "experiment=dmeo: no such experiment", "demo"),
    case("no-api-key-openai", _args("judge=gpt_4o_mini"), "needs an API key", "set OPENAI_API_KEY"),
    case("no-api-key-gemini", _args("judge=gemini_flash"), "needs an API key", "GEMINI_API_KEY or GOOGLE_API_KEY"),
    case(
        "negative-concurrency",
        _args("judge=gpt_4o_mini", "judge.backend.max_concurrency=-1"),
        "judge.backend",
        "max_concurrency=-1",
        "expected an integer >= 1",
        env={"OPENAI_API_KEY": "k"},
    ),
    case(
        "zero-requests-per-minute",
        _args("judge=gpt_4o_mini", "judge.backend.requests_per_minute=0"),
        "requests_per_minute=0",
        "positive number",
        env={"OPENAI_API_KEY": "k"},
    ),
    case(
        "unknown-backend-setting",
        _args("judge=gpt_4o_mini", "+judge.backend.temprature=0"),
        "+judge.backend.temprature=0: judge.backend takes no setting 'temprature'; did you mean "
        "judge.backend.temperature?",
        env={"OPENAI_API_KEY": "k"},
    ),
    # ---- misspelt keys and names: Hydra's own errors as one line, exit 2, with the key or option probably meant
    case(
        "misspelt-key",
        _args("judge=gpt_4o_mini", "judge.temprature=0"),
        "judge.temprature=0: judge (gpt_4o_mini) has no setting 'temprature'; did you mean judge.backend.temperature?",
    ),
    case(
        "misspelt-top-level-key",
        _args("progres=false"),
        "progres=false: the config has no setting 'progres'; did you mean progress?",
    ),
    case(
        "key-the-judge-lacks",
        _args("judge.temprature=0"),
        "judge.temprature=0: judge (human) has no setting 'temprature'; its settings: family, model, name",
    ),
    case(
        "misspelt-added-key",
        _args("judge=gpt_4o_mini", "+judge.promt=x"),
        "+judge.promt=x: judge (gpt_4o_mini) takes no setting 'promt'; did you mean judge.prompt?",
        env={"OPENAI_API_KEY": "k"},
    ),
    case(
        "misspelt-key-in-a-sweep",
        _args("-m", "judge=gpt_4o_mini,gpt_4o", "judge.temprature=0"),
        "judge.temprature: no judge of this sweep has that setting (judge gpt_4o, gpt_4o_mini); "
        "did you mean judge.backend.temperature?",
    ),
    case(
        "misspelt-added-key-in-a-sweep",
        _args("-m", "judge=gpt_4o_mini,gpt_4o", "+judge.backend.temprature=0"),
        "+judge.backend.temprature=0: judge.backend takes no setting 'temprature'; did you mean "
        "judge.backend.temperature?",
        "no cell was started",
        env={"OPENAI_API_KEY": "k"},
    ),
    case(
        "misspelt-judge-name",
        _args("judge=gpt4o_mini"),
        "judge=gpt4o_mini: no such judge; did you mean judge=gpt_4o_mini?",
    ),
    case("misspelt-dataset-name", _args("dataset=dl_19"), "dataset=dl_19: no such dataset; did you mean dataset=dl19?"),
    case("bad-override-syntax", _args("judge.name=["), "judge.name=[", "no viable alternative"),
    case(
        "perturbation-rank-beyond-pool",
        _args("perturbation=swap_1", "perturbation.swaps=[30]"),
        "rank 30 is beyond the ranking",
        "(25 documents)",
    ),
    case(
        "single-cell-with-zero-systems",
        _args("ranker=bm25", "perturbation=swap_1"),
        "BM25 x Swap[1] evaluates no system",
        "ranker.perturbable=true",
    ),
    case(
        "experiment-with-zero-systems",
        _args("-m", "ranker=bm25,simulated_llm", "perturbation=swap_1,swap_2"),
        "no cell of this sweep evaluates a system",
        "all 4 cells",
        "perturbations apply to oracle rankers only",
    ),
    case(
        "prompt-without-query",
        _prompt("Passage: {passage}\n##final score:"),
        "lacks the placeholder(s) {query}",
        "my_prompt.txt",
    ),
    case(
        "prompt-without-passage",
        _prompt("Query: {query}\n##final score:"),
        "lacks the placeholder(s) {passage}",
        "my_prompt.txt",
    ),
    case("runfile-without-path", _args("ranker=runfile", "ranker.name=X"), "Missing mandatory value: ranker.path"),
    case(
        "missing-model-directory",
        _args("judge=smollm2", "judge.model_spec.model=/nonexistent/model-dir"),
        "/nonexistent/model-dir",
        "no such file or directory",
    ),
    case(
        "content-bias-without-rewriter",
        _args("+experiment=content_bias", "rewriter=none", "judge=simulated"),
        "content_bias needs an LLM rewriter",
    ),
    case(
        "secret-as-override",
        _args("+judge.backend.api_key=sk-not-a-real-key"),
        "judge.backend.api_key",
        "environment only",
    ),
    # ---- values of the wrong type or range: checked before any work, one line naming the key
    case(
        "swaps-not-a-list",
        _args("perturbation=swap_1", "perturbation.swaps=3"),
        "perturbation.swaps=3",
        "expected a list of ranks (integers >= 1)",
    ),
    case(
        "concurrency-not-a-number",
        _args("judge=gpt_4o_mini", "judge.backend.max_concurrency=abc"),
        "judge.backend.max_concurrency='abc'",
        "expected an integer >= 1",
        env={"OPENAI_API_KEY": "k"},
    ),
    case(
        "timeout-not-a-number",
        _args("judge=gpt_4o_mini", "judge.backend.timeout_s=fast"),
        "judge.backend.timeout_s='fast'",
        "expected a positive number",
        env={"OPENAI_API_KEY": "k"},
    ),
    case("depth-not-a-number", _args("ranker.depth=ten"), "ranker.depth='ten'", "expected an integer >= 1 or null"),
    case(
        "parse-attempts-not-a-number",
        _args("judge=gpt_4o_mini", "judge.parse_attempts=many"),
        "judge.parse_attempts='many'",
        "expected an integer >= 1",
        env={"OPENAI_API_KEY": "k"},
    ),
    case(
        "noise-not-a-number",
        _args("judge=simulated", "judge.noise=loud"),
        "judge.noise='loud'",
        "expected a number >= 0",
    ),
    case("empty-experiment-name", _args("experiment_name="), "experiment_name=''", "expected a non-empty name"),
    case(
        "max-failed-share-negative",
        _args("max_failed_share=-1"),
        "max_failed_share=-1",
        "expected a number between 0 and 1",
    ),
    case(
        "max-failed-share-word",
        _args("max_failed_share=lots"),
        "max_failed_share='lots'",
        "expected a number between 0 and 1",
    ),
    case(
        "max-failed-share-above-1",
        _args("max_failed_share=2"),
        "max_failed_share=2",
        "expected a number between 0 and 1",
    ),
    case(
        "rewriter-max-failed-share",
        _args("rewriter=openai", "rewriter.max_failed_share=1.5"),
        "rewriter.max_failed_share=1.5",
        "between 0 and 1 or null",
        env={"OPENAI_API_KEY": "k"},
    ),
    case(
        "content-bias-per-level",
        _args("+experiment=content_bias", "content_bias.per_level=0"),
        "content_bias.per_level=0",
        "expected an integer >= 1",
    ),
    # ---- dataset files (file mode)
    case("pool-doc-without-passage", _drop_passage, "pool.trec:", "has no passage text in", "passages.jsonl"),
    case("empty-pool", _rewrite("pool", lambda t: ""), "pool.trec", "no run lines"),
    case(
        "qrels-of-another-dataset", _rewrite("qrels", lambda t: t.replace("q0", "90")), "qrels.txt", "another dataset"
    ),
    case(
        "qrels-line-with-3-fields",
        _rewrite("qrels", _line(2, lambda s: " ".join(s.split()[:3]) + "\n")),
        "qrels.txt:2",
        "expected 4 fields",
        "got 3",
    ),
    case(
        "qrels-non-integer-label",
        _rewrite("qrels", _line(3, lambda s: s.rsplit(" ", 1)[0] + " high\n")),
        "qrels.txt:3",
        "expected an integer relevance label",
        "'high'",
    ),
    case(
        "pool-duplicate-doc-id",
        _rewrite("pool", lambda t: t + t.splitlines(keepends=True)[4].replace(" 5 ", " 26 ")),
        "pool.trec:76",
        "duplicate doc",
        "also on line 5",
    ),
    case(
        "run-ranks-and-scores-disagree",
        _ranks_scores_disagree,
        "system.run:3",
        "rank and score disagree",
        'order_by="rank"',
    ),
    case(
        "pool-query-not-in-topics",
        _rewrite("pool", lambda t: t + "q99 Q0 d001 1 9.0 bm25\n"),
        "pool.trec",
        "1 query id(s) not in the topics: q99",
    ),
    case(
        "duplicated-topic-id",
        _rewrite("topics", lambda t: t + "q02\tanother text\n"),
        "topics.tsv:4",
        "duplicate query id q02",
        "also on line 2",
    ),
    case("empty-passage-text", _empty_passage, "passages.jsonl:3", "empty text"),
    case("non-utf8-byte", _non_utf8, "passages.jsonl:2", "invalid UTF-8 byte 0xe9"),
    case("missing-file", _missing, "no-such-qrels.txt", "file not found"),
    # no passages file: fine until a component reads a text (here BM25 re-indexing a pool that is not its own run)
    case(
        "texts-needed-but-no-passages",
        lambda f, t: [*file_mode(f)[:-1], "dataset.passages=null", "ranker=bm25"],
        "dataset dl19: passage texts are needed here but not available",
        "dataset.passages=FILE",
    ),
]


@pytest.mark.parametrize(("edit", "phrases", "rc", "env"), CASES)
def test_bad_input_gives_one_clear_message(tmp_path, edit, phrases, rc, env):
    files = write_dataset(tmp_path / "data")
    args = base_args(tmp_path, edit(files, tmp_path))
    res = cli_runner.run(args, cwd=tmp_path, env=clean_env(**env))
    assert_one_clear_error(res, *phrases, rc=rc)


def test_the_file_mode_dataset_itself_is_valid(tmp_path):
    """The unbroken files run: every failure above comes from its one edit."""
    files = write_dataset(tmp_path / "data")
    res = cli_runner.run(base_args(tmp_path, [*file_mode(files), "judge=simulated"]), cwd=tmp_path, env=clean_env())
    assert res.rc == 0, str(res)


def test_compare_over_an_experiment_without_runs(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlruns/mlflow.db"
    (tmp_path / "mlruns").mkdir()
    MlflowClient(uri).create_experiment("nothing_ran_yet")
    res = cli_runner.run(
        ["experiment=nothing_ran_yet", f"tracking_uri={uri}", "log=false", f"out={tmp_path}/cmp"],
        cwd=tmp_path,
        env=clean_env(),
        module="judgebench.compare",
    )
    assert res.rc == 2 and "Traceback" not in res.err, str(res)
    lines = [line for line in res.err.splitlines() if line.startswith("judgebench-compare:")]
    assert len(lines) == 1 and "'nothing_ran_yet' has no finished job runs" in lines[0], str(res)
    res = cli_runner.run(
        ["experiment=never_created", f"tracking_uri={uri}", "log=false"],
        cwd=tmp_path,
        env=clean_env(),
        module="judgebench.compare",
    )
    assert res.rc == 2 and "no MLflow experiment named 'never_created'" in res.err, str(res)


def test_plain_interpreter_gives_the_same_single_line(tmp_path):
    """No fork: `python run.py ...` in a new interpreter."""
    files = write_dataset(tmp_path / "data")
    files["topics"].write_text(files["topics"].read_text() + "q01\tagain\n")
    res = cli_runner.run(base_args(tmp_path, file_mode(files)), cwd=tmp_path, env=clean_env(), fresh=True)
    assert_one_clear_error(res, "topics.tsv:4", "duplicate query id q01")


@pytest.mark.parametrize("how", ["--verbose", "JUDGEBENCH_VERBOSE=1", "HYDRA_FULL_ERROR=1"])
def test_verbose_shows_the_traceback(tmp_path, how):
    files = write_dataset(tmp_path / "data")
    files["qrels"].write_text("q01 0 d005\n")
    args = base_args(tmp_path, file_mode(files))
    env = clean_env()
    if how.startswith("--"):
        args = [how, *args]
    else:
        key, _, value = how.partition("=")
        env[key] = value
    res = cli_runner.run(args, cwd=tmp_path, env=env)
    assert "Traceback" in res.err and "judgebench/data/trec.py" in res.err and "DataError" in res.err, str(res)
    if how.startswith("HYDRA"):  # Hydra's own behaviour: the exception as is
        assert res.rc == 1 and not res.error_lines, str(res)
    else:  # the full traceback, then the same line and exit code
        assert res.rc == 2 and len(res.error_lines) == 1 and "expected 4 fields" in res.error_lines[0], str(res)
        assert res.err.rstrip().splitlines()[-1] == res.error_lines[0]


def test_a_bad_cell_in_a_multirun_is_reported_and_the_sweep_goes_on(tmp_path):
    """Cell #1's run file names a query the dataset lacks (found only when it ranks: a cell's own problem, which the
    sweep's preflight leaves to it): it is logged and recorded as failed, the other cells run, the sweep exits 2 with
    one line. (A missing key is the sweep's problem: said once before any cell starts,
    tests/test_sweep_preflight.py.)"""
    from judgebench.data.datasets import load_toy

    pool = load_toy().pool
    lines = "".join(
        f"{q} Q0 {d} {r} {s!r} mine\n"
        for q, d, s, r in pool[["query_id", "doc_id", "score", "rank"]].itertuples(index=False)
    )
    (tmp_path / "good.run").write_text(lines, encoding="utf-8")
    (tmp_path / "bad.run").write_text(lines + "q_unknown Q0 d1 1 1.0 mine\n", encoding="utf-8")
    args = base_args(
        tmp_path,
        [
            "-m",
            "ranker=runfile",
            "ranker.name=Mine",
            f"ranker.path={tmp_path}/good.run,{tmp_path}/bad.run,{tmp_path}/good.run",
        ],
    )
    res = cli_runner.run(args, cwd=tmp_path, env=clean_env())
    text = assert_one_clear_error(res, "q_unknown")
    cell = text.partition("):")[0]  # the cell's overrides, a component's own settings after it (cli/sweep_settings.py)
    assert (
        cell.startswith("judgebench: error: cell #1 (ranker=runfile ")
        and "ranker.name=Mine" in cell
        and "bad.run" in cell
    ), text
    summary = json.loads((tmp_path / "multirun" / "sweep_summary.json").read_text())
    assert (summary["cells"], summary["failed"]) == (3, 1), summary
    assert [j["status"] for j in summary["jobs"]][:2] == ["finished", "failed"]
    assert "q_unknown" in summary["jobs"][1]["error"]


@pytest.mark.parametrize("where", ["job", "outside_the_job"])
def test_a_sweep_whose_cell_fails_otherwise_exits_2_with_one_line(tmp_path, monkeypatch, where):
    """A cell that fails with an exception that is no user error (a bug in the job, or outside the job as when a
    SLURM job is killed): the sweep goes on, then exits 2 with one line naming the cell, as for a CellError."""
    from judgebench.cli import run as run_module
    from judgebench.jobs import pipeline

    def killed(cfg):
        if cfg.judge.name == "human":
            raise RuntimeError("killed by the planted fault")
        return original(cfg)

    if where == "job":
        original = pipeline.run_job
        monkeypatch.setattr(pipeline, "run_job", killed)  # run.py imports it at each cell: the forked child sees this
    else:
        original = run_module._dispatch
        monkeypatch.setattr(run_module, "_dispatch", killed)  # fails before errors.reported() sees it
    res = cli_runner.run(base_args(tmp_path, ["-m", "judge=simulated,human"]), cwd=tmp_path, env=clean_env())
    assert res.rc == 2 and len(res.error_lines) == 1, str(res)
    assert res.error_lines[0].startswith("judgebench: error: cell #1 (judge=human"), str(res)
    assert "RuntimeError: killed by the planted fault" in res.error_lines[0], str(res)
    summary = json.loads((tmp_path / "multirun" / "sweep_summary.json").read_text())
    assert [j["status"] for j in summary["jobs"]][1:] == ["failed"] and summary["ran"] + summary["skipped"] == 1, (
        summary
    )


def test_a_passage_longer_than_the_context_is_truncated_warned_and_counted(tmp_path):
    """A local judge (a tiny causal LM, 512-token context) on a 900-word passage: cut, warned, `truncated` metric 1."""
    from tiny_models import tiny_causal

    model = tiny_causal(tmp_path / "models")
    files = write_dataset(tmp_path / "data")
    pairs = pd.read_csv(files["qrels"], sep=" ", names=["q", "i", "d", "r"], dtype=str)
    pool = pd.read_csv(files["pool"], sep=" ", names=["q", "z", "d", "rank", "s", "t"], dtype=str)
    label_set = pairs.merge(pool, on=["q", "d"])
    long_doc = label_set["d"].iloc[0]
    long_pairs = int((label_set["d"] == long_doc).sum())
    passages = [json.loads(line) for line in files["passages"].read_text(encoding="utf-8").splitlines()]
    for p in passages:
        if p["docid"] == long_doc:
            p["text"] = "the water of the river " * 180  # 900 words: the prompt is ~270 tokens without it
    files["passages"].write_text("".join(json.dumps(p) + "\n" for p in passages), encoding="utf-8")
    args = base_args(
        tmp_path, [*file_mode(files), "judge=smollm2", f"judge.model_spec.model={model}", "experiment_name=trunc"]
    )
    res = cli_runner.run(args, cwd=tmp_path, env=clean_env(), fresh=True)  # torch in the child: a new interpreter
    assert res.rc == 0, str(res)
    assert f"{long_pairs} of {len(label_set)} passages were truncated" in res.out + res.err, str(res)
    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    run = client.search_runs([client.get_experiment_by_name("trunc").experiment_id], "tags.`judgebench.kind` = 'job'")[
        0
    ]
    assert run.data.metrics["truncated"] == long_pairs
    summary = client.get_run(run.data.tags["judgebench.judge_summary"])
    assert summary.data.metrics["labelled_pairs"] == len(label_set)


def test_an_empty_cache_dir_variable_is_treated_as_unset(tmp_path):
    """JUDGEBENCH_CACHE_DIR= (empty) must not put calls/ and locks/ in the working directory."""
    args = [a for a in base_args(tmp_path, ["judge=gpt_4o_mini"]) if not a.startswith("cache_dir=")]
    res = cli_runner.run(args, cwd=tmp_path, env=clean_env(JUDGEBENCH_CACHE_DIR=""))
    assert_one_clear_error(res, "set OPENAI_API_KEY")  # the run got as far as the judge, which made its cache
    assert not (tmp_path / "calls").exists() and not (tmp_path / "locks").exists()
    assert (tmp_path / ".cache" / "judgebench" / "calls").is_dir()


def test_compare_sweep_id_with_a_quote_unusable_out_and_unreachable_server(tmp_path):
    """A sweep id holding an apostrophe (a home directory such as /home/o'brien) selects its runs; an out= that
    cannot be a directory and an unreachable tracking server are one line, exit 2, found before any work."""
    import socket
    import time

    sweep = "/home/o'brien/multirun/1"
    res = cli_runner.run(
        base_args(tmp_path, ["judge=human", "experiment_name=cmp_quote", f'sweep_id="{sweep}"']),
        cwd=tmp_path,
        env=clean_env(),
    )
    assert res.rc == 0, str(res)
    uri = f"sqlite:///{STORE['dir']}/mlflow.db"
    res = cli_runner.run(
        [
            "experiment=cmp_quote",
            f"sweep={sweep}",
            f"tracking_uri={uri}",
            "log=false",
            f"out={tmp_path}/cmp",
            "bootstrap=0",
        ],
        cwd=tmp_path,
        env=clean_env(),
        module="judgebench.compare",
    )
    assert res.rc == 0 and "Perfect" in res.out, str(res)

    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    res = cli_runner.run(
        ["experiment=cmp_quote", f"tracking_uri={uri}", "log=false", f"out={blocker}/cmp"],
        cwd=tmp_path,
        env=clean_env(),
        module="judgebench.compare",
    )
    lines = [x for x in res.err.splitlines() if x.startswith("judgebench-compare:")]
    assert res.rc == 2 and "Traceback" not in res.err and len(lines) == 1 and f"out={blocker}/cmp" in lines[0], str(res)
    assert "Table" not in res.out  # found before the report was built

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    started = time.monotonic()
    res = cli_runner.run(
        ["experiment=x", f"tracking_uri=http://u:pw-planted-77@127.0.0.1:{port}", "log=false"],
        cwd=tmp_path,
        env=clean_env(),
        module="judgebench.compare",
    )
    lines = [x for x in res.err.splitlines() if x.startswith("judgebench-compare:")]
    assert res.rc == 2 and len(lines) == 1 and "cannot be reached" in lines[0] and "Traceback" not in res.err, str(res)
    assert f"http://***@127.0.0.1:{port}" in lines[0] and "pw-planted" not in res.err
    assert time.monotonic() - started < 15


def test_a_read_only_mlflow_store_is_one_line_up_front(tmp_path):
    """A store the job may read but not write (a user without write permission on it; root ignores permissions,
    so as root the job runs as nobody): one line naming the store, at once, not sqlite3 tracebacks after retries."""
    import shutil
    import tempfile
    import time

    from mlflow.tracking import MlflowClient

    from judgebench.tracking import mlflow_store

    base = Path(tempfile.mkdtemp(prefix="jb-readonly-"))  # outside pytest's root-only tmp folder
    base.chmod(0o755)
    store, work = base / "store", base / "work"
    store.mkdir()
    work.mkdir()
    work.chmod(0o777)
    uri = f"sqlite:///{store}/mlflow.db"
    try:
        mlflow_store.ensure_sqlite_parent(uri)
        MlflowClient(uri).create_experiment("earlier")
        mlflow_store._READY_STORES.discard(uri)  # the job (a fork of this process) must look at the store itself
        (store / "mlflow.db").chmod(0o444)
        store.chmod(0o555)
        args = [
            "ranker=oracle",
            "judge=human",
            "progress=false",
            f"tracking_uri={uri}",
            f"artifact_root={work}/artifacts",
            f"cache_dir={work}/cache",
            f"hydra.run.dir={work}/out",
        ]
        started = time.monotonic()
        res = cli_runner.start(
            args, cwd=work, env={**env_with(), "HOME": str(work)}, uid=65534 if os.geteuid() == 0 else None
        ).wait(120)
        elapsed = time.monotonic() - started
        assert res.rc == 2 and "Traceback" not in res.err and len(res.error_lines) == 1, str(res)
        line = res.error_lines[0]
        assert f"tracking_uri={uri}: the MLflow store" in line and "point tracking_uri at a writable store" in line, (
            line
        )
        assert "not writable" in line or "readonly database" in line, line
        assert elapsed < 10, elapsed  # up front, not after MLflow's retries
    finally:
        store.chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)
