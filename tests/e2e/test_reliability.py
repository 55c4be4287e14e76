"""Reliability: a study keeps going through API faults, kill -9, a broken cache and a vanished MLflow server,
loses nothing, never reports a failure as a result, and writes no secret anywhere.

Every job is a real ``run.py`` cell (forked from the warm test process by tests/helpers/cli_runner.py, or a new
interpreter where torch runs) against the local fake OpenAI server (judgebench.testing.fake_process).

Kill test: ``JUDGEBENCH_KILLS`` kills (default 10; 3 when the ``CI`` variable is set), at moments drawn from
``JUDGEBENCH_KILL_SEED`` (default: a fresh seed, printed). The full run, locally::

    JUDGEBENCH_KILLS=10 .venv/bin/python -m pytest -q -s tests/e2e/test_reliability.py -k kill
"""

from __future__ import annotations

import errno
import json
import multiprocessing as mp
import os
import random
import signal
import struct
import subprocess
import time
import zlib
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

import cli_runner
from cli_runner import env_with, file_mode, write_dataset
from judgebench.cache import maintenance
from judgebench.cache import store as cache_mod
from judgebench.cache.store import CallCache
from judgebench.data.datasets import load_toy
from judgebench.exceptions import CacheError
from judgebench.judges.llm import LLMJudge
from judgebench.llm.prompts import load_prompt
from judgebench.llm.remote.api import OpenAIBackend
from judgebench.testing.fake_app import fake_label
from judgebench.testing.fake_process import FakeLLMServer
from mlflow_server import MlflowServer, free_port
from reference_impl import cohen_kappa, frame_rows, ndcg10_judged

REPO = Path(__file__).resolve().parents[2]
TOY = load_toy()
LABEL_SET = TOY.label_set()
N = len(LABEL_SET)  # 241 (query, doc) pairs to judge
TEMPLATE = load_prompt("umbrela_bing")
KILLS = int(os.environ.get("JUDGEBENCH_KILLS") or (3 if os.environ.get("CI") else 10))
STORE: dict[str, Path] = {}
FAULT_FREE = dict(fail_429=0, fail_500=0, fail_timeout=0, fail_malformed=0, fail_noscore=0)


def prompt_of(q: str, d: str, texts: dict[str, str] | None = None) -> str:
    return TEMPLATE.render(query=TOY.queries[q], passage=(texts or TOY.corpus)[d])


_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]


def client() -> MlflowClient:
    return MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")


def cell(
    tmp: Path,
    srv: FakeLLMServer,
    *extra: str,
    cache: Path | None = None,
    experiment: str = "rel",
    tracking_uri: str | None = None,
) -> list[str]:
    """One toy cell (Perfect oracle) judged by gpt_4o_mini on the fake server."""
    return [
        "ranker=oracle",
        "judge=gpt_4o_mini",
        f"judge.base_url={srv.openai_base_url}",
        "progress=false",
        f"tracking_uri={tracking_uri or 'sqlite:///' + str(STORE['dir']) + '/mlflow.db'}",
        f"artifact_root={STORE['dir']}/artifacts",
        f"cache_dir={cache or tmp / 'cache'}",
        f"hydra.run.dir={tmp}/out",
        f"hydra.sweep.dir={tmp}/multirun",
        f"experiment_name={experiment}",
        *extra,
    ]


def latest_run(experiment: str, mlflow: MlflowClient | None = None):
    """The latest run of a grid cell or content-bias job (not a judge summary)."""
    mlflow = mlflow or client()
    runs = mlflow.search_runs(
        [mlflow.get_experiment_by_name(experiment).experiment_id],
        "tags.`judgebench.kind` != 'judge_summary'",
        order_by=["attributes.start_time DESC"],
    )
    return runs[0]


def metrics_of(run, mlflow: MlflowClient | None = None) -> dict:
    """A cell's own metrics with those of its judge summary (labelled pairs, label-set size, kappa)."""
    summary = (mlflow or client()).get_run(run.data.tags["judgebench.judge_summary"])
    return {**summary.data.metrics, **run.data.metrics}


def artifact(run, name: str, sep: str = ",") -> pd.DataFrame:
    path = client().download_artifacts(run.info.run_id, name, str(STORE["dir"] / "dl" / run.info.run_id))
    return pd.read_csv(path, sep=sep, dtype={"query_id": str, "doc_id": str})


# =========================================================================== API faults


@pytest.mark.slow  # ~45 s: a toy grid through seeded API faults
def test_api_faults_are_survived_counted_and_never_become_labels(tmp_path):
    """20% 429 (Retry-After), 10% 500, 5% timeouts, 5% malformed JSON, 10% answers without a score.

    The cell finishes; MLflow's counters equal the server's (by outcome); every label is the server's
    answer for that pair and every other pair is reported failed; kappa and nDCG are computed on the
    labelled pairs, calls_failed beside them; a rerun asks only for the pairs that have no answer yet;
    a cell above max_failed_share ends FAILED with one clear line and exit code 2.
    """
    faults = dict(fail_429=0.2, fail_500=0.1, fail_timeout=0.05, fail_malformed=0.05, fail_noscore=0.1)
    backend = [
        "judge.backend.timeout_s=1.5",
        "judge.backend.backoff_base_s=0.01",
        "judge.backend.backoff_max_s=0.05",
        "judge.backend.max_retries=3",
        "judge.parse_attempts=2",
    ]
    with FakeLLMServer(**faults, timeout_hang_s=10, seed=7) as srv:
        args = cell(tmp_path, srv, *backend, "max_failed_share=0.5", experiment="faults")
        res = cli_runner.run(args, cwd=tmp_path, env=env_with())
        assert res.rc == 0, str(res)
        stats = srv.stats()
        outcomes = stats["by_outcome"]

        run = latest_run("faults")
        m = metrics_of(run)
        assert run.info.status == "FINISHED"
        # every request and every fault, as the server saw them
        assert m["requests"] == stats["requests"] == sum(outcomes.values())
        for metric, outcome in (
            ("errors_429", "429"),
            ("errors_5xx", "500"),
            ("errors_timeout", "timeout"),
            ("errors_malformed", "malformed"),
            ("errors_unparsable", "noscore"),
        ):
            assert m.get(metric, 0) == outcomes[outcome] > 0, (metric, m, outcomes)
        # a pair is labelled by exactly one ok answer; the rest are failures, reported
        unparsable_final = int(m.get("errors_unparsable_final", 0))
        transient_failed = int(m["calls_failed"]) - unparsable_final
        assert m["labelled_pairs"] == outcomes["ok"]
        assert m["labelled_pairs"] + m["calls_failed"] == m["label_set_size"] == N
        assert m["calls_failed"] > 0
        # retries = requests - completions asked for (ok or scoreless answers, or given up after the last retry)
        assert m["retries"] == stats["requests"] - (outcomes["ok"] + outcomes["noscore"] + transient_failed)

        labels = artifact(run, "judge_labels.csv")
        failures = artifact(run, "judge_failures.csv")
        assert len(labels) == m["labelled_pairs"] and len(failures) == m["calls_failed"]
        assert (failures["error"] == "unparsable").sum() == unparsable_final
        for q, d, label in labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
            assert label == fake_label(prompt_of(q, d)), (q, d)  # the server's answer, never a made-up one
        assert not set(zip(failures["query_id"], failures["doc_id"])) & set(zip(labels["query_id"], labels["doc_id"]))
        qrels = pd.read_csv(
            client().download_artifacts(run.info.run_id, "judge_qrels.txt", str(tmp_path / "dl")), sep=" ", header=None
        )
        assert len(qrels) == m["labelled_pairs"]  # failed pairs are not in the judge's qrels

        # kappa and nDCG on the labelled pairs only
        assert m["kappa_graded"] == pytest.approx(
            cohen_kappa(list(labels["human"]), list(labels["relevance"])), abs=1e-12
        )
        run_file = pd.read_csv(
            client().download_artifacts(run.info.run_id, "run.trec", str(tmp_path / "dl")),
            sep=" ",
            names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
            dtype={"query_id": str, "doc_id": str},
        )
        judge_qrels = labels[["query_id", "doc_id", "relevance"]]
        expected = ndcg10_judged(
            frame_rows(run_file, "query_id", "doc_id", "rank"),
            frame_rows(judge_qrels, "query_id", "doc_id", "relevance"),
            list(dict.fromkeys(run_file["query_id"])),
        )
        assert m["ndcg10_judge"] == pytest.approx(sum(expected.values()) / len(expected), abs=1e-12)
        print(
            f"\nfaults: {stats['requests']} requests, injected { ({k: v for k, v in outcomes.items() if v}) }, "
            f"retries {m['retries']:.0f}, labelled {m['labelled_pairs']:.0f}/{N}, failed {m['calls_failed']:.0f} "
            f"({transient_failed} gave up after retries, {unparsable_final} never parsable)"
        )

        # the rerun, faults gone: only the pairs without an answer are asked; scoreless answers are cached results
        srv.configure(**FAULT_FREE)
        srv.reset()
        res = cli_runner.run([*args, "force=true"], cwd=tmp_path, env=env_with())
        assert res.rc == 0, str(res)
        assert srv.stats()["requests"] == transient_failed
        again = latest_run("faults")
        assert metrics_of(again)["labelled_pairs"] == N - unparsable_final
        relabelled = artifact(again, "judge_labels.csv")
        assert (
            labels.merge(relabelled, on=["query_id", "doc_id"], suffixes=("", "_again"))
            .eval("relevance == relevance_again")
            .all()
        )

        # above max_failed_share (default 5%): FAILED, one line, exit 2, metrics logged beside it
        srv.configure(fail_500=1.0)
        srv.reset()
        res = cli_runner.run(
            cell(tmp_path, srv, *backend, cache=tmp_path / "cache_failing", experiment="faults_fail"),
            cwd=tmp_path,
            env=env_with(),
        )
        assert res.rc == 2 and "Traceback" not in res.err, str(res)
        assert (
            len(res.error_lines) == 1
            and f"{N} of {N} pairs (100.0%) have no label, above max_failed_share=5.0%" in res.error_lines[0]
        ), str(res)
        failed = latest_run("faults_fail")
        assert failed.info.status == "FAILED"
        assert failed.data.metrics["calls_failed"] == N and metrics_of(failed)["labelled_pairs"] == 0
        # 1 try + 3 retries each, and the server answered every one with a 500; under load a slow 500 can reach the
        # client after its 1.5 s timeout, so the client counts some as timeouts (4 of 964 once, in CI)
        stats = srv.stats()
        assert stats["by_outcome"]["500"] == stats["requests"] == 4 * N
        errors = failed.data.metrics
        assert errors["errors_5xx"] + errors.get("errors_timeout", 0) == 4 * N and errors["errors_5xx"] > 0


# =========================================================================== kill -9


def _cache_entries(root: Path) -> int:
    return sum(1 for _ in CallCache(root).keys())


def _wait_idle(srv: FakeLLMServer, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        stats = srv.stats()
        if stats["in_flight"] == 0 or time.monotonic() > deadline:
            return stats
        time.sleep(0.02)


def test_kill_9_at_random_moments_loses_nothing(tmp_path):
    """kill -9 a judging job at random moments; each rerun completes with every label, the cache verifies,
    and the calls paid twice are at most the requests in flight at the kill (<= max_concurrency).

    Count: JUDGEBENCH_KILLS (default 10, 3 under CI); moments: JUDGEBENCH_KILL_SEED. Locally, the full run:
    ``JUDGEBENCH_KILLS=10 .venv/bin/python -m pytest -q -s tests/e2e/test_reliability.py -k kill``
    """
    seed = int(os.environ.get("JUDGEBENCH_KILL_SEED") or random.SystemRandom().randrange(1 << 30))
    rng = random.Random(seed)
    print(f"\nkill test: {KILLS} kills, JUDGEBENCH_KILL_SEED={seed}")
    conc, latency = 8, 0.01
    report = []
    with FakeLLMServer(latency_s=latency) as srv:
        for i in range(KILLS):
            srv.reset()
            cache = tmp_path / f"cache{i}"
            args = cell(tmp_path, srv, f"judge.backend.max_concurrency={conc}", cache=cache, experiment=f"kill{i}")
            target, jitter = rng.randint(1, N - 2 * conc), rng.uniform(0, latency)
            child = cli_runner.start(args, cwd=tmp_path, env=env_with())
            deadline = time.monotonic() + 120
            while srv.stats()["requests"] < target:
                assert child.poll() is None, f"the job ended before the kill\n{child.result()}"
                assert time.monotonic() < deadline, "the job never reached its kill point"
                time.sleep(0.01)
            time.sleep(jitter)
            in_flight = srv.stats()["in_flight"]
            child.kill()
            assert child.rc == -signal.SIGKILL
            sent = _wait_idle(srv)["requests"]
            calls = cache / "calls"
            assert maintenance.verify(CallCache(calls)) == []  # no entry is half-written
            stored = _cache_entries(calls)
            lost = sent - stored  # answered or in flight when killed, not stored: paid again by the rerun
            assert 0 <= lost <= conc, (sent, stored)

            res = cli_runner.run(args, cwd=tmp_path, env=env_with())
            assert res.rc == 0, str(res)
            total = srv.stats()["requests"]
            m = metrics_of(latest_run(f"kill{i}"))
            assert m["labelled_pairs"] == N and m["calls_failed"] == 0 and m["calls_cached"] == stored
            assert total - sent == N - stored  # the rerun asked exactly for what was missing
            assert total - N == lost <= conc
            assert maintenance.verify(CallCache(calls)) == [] and _cache_entries(calls) == N
            assert not list(calls.glob("??/*.json"))  # the default layout: segments
            report.append((target, in_flight, stored, lost))
    print(
        f"kill test: {KILLS} kills, labels lost 0, extra calls {sum(r[3] for r in report)} "
        f"(per kill {[r[3] for r in report]}, max_concurrency {conc}); kills after request #{[r[0] for r in report]}"
    )


# =============================================================== the cache: corrupt, full, read-only, 8 writers


@pytest.fixture(scope="module")
def server():
    with FakeLLMServer() as srv:
        yield srv


def make_judge(srv: FakeLLMServer, cache_dir: Path, **kw) -> LLMJudge:
    backend = OpenAIBackend("gpt-4o-mini", base_url=srv.openai_base_url, backoff_base_s=0.01, backoff_max_s=0.05, **kw)
    return LLMJudge(
        name="fake", family="openai", model=backend.model, backend=backend, cache_dir=str(cache_dir), progress=False
    )


def judge_toy(srv: FakeLLMServer, cache_dir: Path, pairs: pd.DataFrame | None = None):
    pairs = LABEL_SET[["query_id", "doc_id"]] if pairs is None else pairs
    return make_judge(srv, cache_dir).judge(pairs, TOY, TOY.corpus)


def assert_server_labels(result) -> None:
    for q, d, label in result.labels[["query_id", "doc_id", "relevance"]].itertuples(index=False):
        assert label == fake_label(prompt_of(q, d)), (q, d)


def _frames(path: Path) -> list[tuple[int, bytes, bytes]]:
    """(offset, raw key, body) of each frame of a segment, parsed from the documented format
    (b"JBc1" | length | crc32 of key+body | 32-byte key | body), not by the module."""
    data, out, pos = path.read_bytes(), [], 0
    while pos < len(data):
        magic, n, crc = struct.unpack_from(">4sII", data, pos)
        assert magic == b"JBc1" and zlib.crc32(data[pos + 12 : pos + 44 + n]) == crc
        out.append((pos, data[pos + 12 : pos + 44], data[pos + 44 : pos + 44 + n]))
        pos += 44 + n
    return out


def _framed(raw_key: bytes, body: bytes) -> bytes:
    return struct.pack(">4sII", b"JBc1", len(body), zlib.crc32(raw_key + body)) + raw_key + body


def test_corrupt_entries_are_never_read_back_as_labels(server, tmp_path, monkeypatch, caplog):
    """In the default (segments) layout: bit-flipped records, a record overwritten with zeros, records whose
    label was altered (frame checksum recomputed, so only the entry's sha256 tells) and a last record cut
    short. Each is a miss, asked again; verify names each one; verify --remove repairs the segment."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server.configure(**FAULT_FREE, latency_s=0)
    server.reset()
    first = judge_toy(server, tmp_path)
    assert len(first.labels) == N and server.stats()["requests"] == N
    calls = tmp_path / "calls"
    assert not list(calls.glob("??/*.json"))  # the default layout writes no entry files
    (segment,) = (calls / "segments").glob("*.seg")
    frames = _frames(segment)
    assert len(frames) == N
    flipped, zeroed, altered = {10, 20, 30, 40, 50}, {60}, {70, 80, 90}
    out, bad_at = bytearray(), []
    for i, (_, raw, body) in enumerate(frames):
        at = len(out)
        if i in altered:  # valid JSON, another label, a frame that checks out
            env = json.loads(body)
            rec = env["payload"]["record"]
            rec["parsed"] = (int(rec["parsed"]) + 1) % 4
            rec["text"] = f"##final score: {rec['parsed']}"
            body = json.dumps(env).encode()
        fr = bytearray(_framed(raw, body))
        if i in flipped:
            fr[44 + len(body) // 2] ^= 0x01
        if i in zeroed:
            fr = bytearray(len(fr))
        if i in flipped | zeroed | altered:
            bad_at.append(at)
        out += fr
    last_at = len(out) - len(_framed(frames[-1][1], frames[-1][2]))
    cut = last_at + (len(out) - last_at) // 2  # the last record, half written
    segment.write_bytes(bytes(out[:cut]))
    cache = CallCache(calls)
    bad = {segment.with_name(f"{segment.name}@{at}") for at in bad_at}
    assert set(maintenance.verify(cache)) == bad
    assert [p for p, _ in maintenance.torn_tails(cache)] == [segment.with_name(f"{segment.name}@{last_at}")]

    server.reset()
    with caplog.at_level("WARNING"):
        again = judge_toy(server, tmp_path)
    assert server.stats()["requests"] == len(bad) + 1  # each corrupt record and the torn one asked again, nothing else
    assert len(again.labels) == N and again.failed.empty
    assert_server_labels(again)  # not one altered label came back
    warned = "\n".join(r.getMessage() for r in caplog.records)
    assert all(str(p) in warned for p in bad)
    os.utime(segment, (time.time() - 2 * cache_mod.STALE_TEMP_S,) * 2)  # its writer is long gone
    report = maintenance.verify_report(CallCache(calls), remove_corrupt=True)
    assert set(report.removed) == bad and report.kept == []
    repaired = CallCache(calls)
    assert maintenance.verify(repaired) == [] and maintenance.torn_tails(repaired) == []
    assert maintenance.stats(repaired).entries == N


class _FaultyOS:
    """judgebench.cache's view of `os`: os.open (EROFS) or os.write (ENOSPC) fail after `after` successful writes."""

    def __init__(self, err: int, after: int = 0) -> None:
        self.err, self.after, self.writes, self.records = err, after, 0, 0

    def __getattr__(self, name):
        return getattr(os, name)

    def _fail(self, path="") -> OSError:
        return OSError(self.err, os.strerror(self.err), str(path) or None)

    def open(self, path, flags, *a):
        if self.err == errno.EROFS and flags & os.O_CREAT and self.writes >= self.after:
            raise self._fail(path)
        return os.open(path, flags, *a)

    def write(self, fd, data):
        if self.err == errno.ENOSPC and self.writes >= self.after:
            raise self._fail()
        self.writes += 1
        done = os.write(fd, data)
        self.records += bytes(data[:done]).count(b"JBc1")  # segment frames written (a probe file holds none)
        return done


@pytest.mark.parametrize(
    ("err", "words"), [(errno.ENOSPC, "No space left on device"), (errno.EROFS, "Read-only file system")]
)
def test_full_or_read_only_cache_fails_before_paying(server, tmp_path, monkeypatch, err, words):
    """Nothing is asked when nothing could be stored: one error naming the cache path, zero requests."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server.configure(**FAULT_FREE, latency_s=0)
    server.reset()
    judge = make_judge(server, tmp_path)  # the cache root exists; writing into it fails
    monkeypatch.setattr(cache_mod, "os", _FaultyOS(err))
    with pytest.raises(CacheError, match=f"cache {tmp_path / 'calls'} is not writable: .*{words}"):
        judge.judge(LABEL_SET[["query_id", "doc_id"]], TOY, TOY.corpus)
    assert server.stats()["requests"] == 0


def test_disk_full_mid_run_stops_with_the_path_and_the_rerun_pays_only_the_rest(server, tmp_path, monkeypatch):
    """In the default (segments) layout the disk fills after 10 groups of answers: the run stops naming the
    segment, every answer written before is read back, nothing is half written, the rerun pays only the rest."""
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    server.configure(**FAULT_FREE, latency_s=0.005)
    server.reset()
    judge = make_judge(server, tmp_path, max_concurrency=4)
    faulty = _FaultyOS(errno.ENOSPC, after=12)  # the two probe files (root, segments/), then 10 groups
    monkeypatch.setattr(cache_mod, "os", faulty)
    with pytest.raises(
        CacheError,
        match=rf"cannot write cache entry {tmp_path / 'calls'}/segments/[^/ ]+\.seg: .*No space left on device",
    ):
        judge.judge(LABEL_SET[["query_id", "doc_id"]], TOY, TOY.corpus)
    monkeypatch.undo()
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    cache = CallCache(tmp_path / "calls")
    assert maintenance.verify(cache) == [] and maintenance.torn_tails(cache) == [] and cache.temp_files() == []
    stored, sent = _cache_entries(tmp_path / "calls"), _wait_idle(server)["requests"]
    assert (
        stored == faulty.records >= 10 and sent - stored <= 4
    )  # every record written is there; lost: the in-flight ones
    again = judge_toy(server, tmp_path)  # space freed
    assert len(again.labels) == N and server.stats()["requests"] == sent + N - stored
    assert_server_labels(again)


def test_unusable_cache_dir_through_run_py_is_one_line_naming_the_path(tmp_path):
    """A cache_dir that cannot be a directory; and, when not root, a read-only one (root ignores permissions)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with FakeLLMServer() as srv:
        res = cli_runner.run(cell(tmp_path, srv, cache=blocker / "cache"), cwd=tmp_path, env=env_with())
        assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
        assert (
            f"cannot create cache root {blocker}/cache/calls" in res.error_lines[0]
            and "Not a directory" in res.error_lines[0]
        )
        if os.geteuid() != 0:
            ro = tmp_path / "read-only"
            (ro / "calls").mkdir(parents=True)
            (ro / "calls").chmod(0o555)
            res = cli_runner.run(cell(tmp_path, srv, cache=ro), cwd=tmp_path, env=env_with())
            assert res.rc == 2 and f"cache {ro}/calls is not writable" in res.error_lines[0], str(res)
            assert srv.stats()["requests"] == 0


_FORK = mp.get_context("fork")


def _writer(i: int, base_url: str, cache_dir: str, pairs: list, barrier, results) -> None:
    try:
        os.environ["OPENAI_API_KEY"] = "test-key"
        backend = OpenAIBackend("gpt-4o-mini", base_url=base_url, backoff_base_s=0.01, backoff_max_s=0.05)
        judge = LLMJudge(
            name="fake", family="openai", model=backend.model, backend=backend, cache_dir=cache_dir, progress=False
        )
        frame = pd.DataFrame(pairs, columns=["query_id", "doc_id"])
        barrier.wait()
        result = judge.judge(frame, TOY, TOY.corpus)
        results.put(
            (
                i,
                len(result.labels),
                len(result.failed),
                sorted(map(tuple, result.labels[["query_id", "doc_id", "relevance"]].values.tolist())),
            )
        )
    except BaseException as exc:  # report, never hang the parent
        results.put((i, -1, -1, repr(exc)[:500]))


def test_eight_processes_judging_into_one_cache(server, tmp_path):
    """8 judges on overlapping thirds of the label set (distinct label sets: no turn-taking lock between them),
    writing one cache at once: no entry lost or corrupt, every stored label the server's."""
    server.configure(**FAULT_FREE, latency_s=0.002)
    server.reset()
    pairs = list(zip(LABEL_SET["query_id"], LABEL_SET["doc_id"]))
    windows = [[pairs[(i * 30 + j) % N] for j in range(90)] for i in range(8)]
    assert set().union(*windows) == set(pairs)
    barrier, results = _FORK.Barrier(8), _FORK.Queue()
    procs = [
        _FORK.Process(target=_writer, args=(i, server.openai_base_url, str(tmp_path), w, barrier, results))
        for i, w in enumerate(windows)
    ]
    for p in procs:
        p.start()
    out = sorted(results.get(timeout=240) for _ in procs)
    for p in procs:
        p.join(timeout=60)
    assert all(p.exitcode == 0 for p in procs)
    for i, n_labels, n_failed, labels in out:
        assert (n_labels, n_failed) == (90, 0), labels
        assert all(label == fake_label(prompt_of(q, d)) for q, d, label in labels)
    cache = CallCache(tmp_path / "calls")
    assert len(list((tmp_path / "calls" / "segments").glob("*.seg"))) >= 8 and not list(
        (tmp_path / "calls").glob("??/*.json")
    )
    assert (
        maintenance.verify(cache) == [] and maintenance.stats(cache).entries == N
    )  # every distinct pair stored once, none corrupt
    for q, d in pairs:
        key = make_judge(server, tmp_path / "unused").key_for(prompt_of(q, d))
        assert cache.get(key)["parsed"] == fake_label(prompt_of(q, d))
    requests = server.stats()["requests"]
    assert N <= requests <= 8 * 90  # overlapping windows may pay a pair twice, never lose one
    print(f"\n8 writers: {requests} requests for {N} distinct pairs ({8 * 90} asked), corrupt entries 0, lost 0")


# =========================================================================== MLflow going away


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as in /proc/net/tcp*) with a socket listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            addr, _, hexport = local.partition(":")
            if state == "0A" and int(hexport, 16) == port:
                found.append(addr)
    return found


@pytest.mark.slow  # ~80 s: a real mlflow server stopped and restarted under a sweep
def test_mlflow_server_going_away_mid_sweep(tmp_path):
    """The tracking server dies while cell #0 is judging. Deterministic: the server is killed once the fake LLM
    server has seen the first judge request; by then the cell has created its MLflow run, and its next MLflow call
    (the metrics) comes only after judging. So cell #0 judges everything into the cache, then fails at logging;
    cell #1 fails at its first MLflow call. Both fail clearly (one line, exit 2). A replacement server on the
    same database (started while the sweep fails) takes the rerun: both cells FINISH with zero new LLM calls
    (judging depends on the label set, not the ranker). The dead run of cell #0 is closed KILLED by the rerun, which
    finds its process gone (host and pid tags)."""
    db, artifacts = tmp_path / "mlflow.db", tmp_path / "mlartifacts"
    first = MlflowServer(db, artifacts, free_port())
    second = None
    try:
        first.wait_ready()
        bound = _listening(first.port)
        assert bound and set(bound) == {"0100007F"}, bound  # 127.0.0.1 only
        mlflow_env = env_with(
            MLFLOW_HTTP_REQUEST_MAX_RETRIES="1",
            MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR="0",
            MLFLOW_HTTP_REQUEST_BACKOFF_JITTER="0",
            MLFLOW_HTTP_REQUEST_TIMEOUT="10",
        )
        with FakeLLMServer(latency_s=0.03) as srv:
            sweep = ["perturbation=perfect,swap_1", "judge.backend.max_concurrency=4"]
            child = cli_runner.start(
                ["-m", *cell(tmp_path, srv, *sweep, experiment="gone", tracking_uri=first.uri)],
                cwd=tmp_path,
                env=mlflow_env,
            )
            deadline = time.monotonic() + 120
            while srv.stats()["requests"] < 1:
                assert child.poll() is None and time.monotonic() < deadline, str(child.result())
                time.sleep(0.005)
            first.kill()
            second = MlflowServer(db, artifacts, free_port())  # starts while the sweep fails
            res = child.wait(180)
            assert res.rc == 2 and "Traceback" not in res.err and len(res.error_lines) == 1, str(res)
            line = res.error_lines[0]
            assert line.startswith("judgebench: error: cell #0 (") and "perturbation=perfect" in line.split("): ")[0], (
                line
            )
            assert (
                f"the MLflow tracking server {first.uri} cannot be reached" in line and "Connection refused" in line
            ), line
            assert "judgebench sweep: 2 cells - 0 ran, 0 skipped, 2 failed" in res.out, str(res)
            assert srv.stats()["requests"] == N  # cell #0 judged everything before failing
            cache = CallCache(tmp_path / "cache" / "calls")
            assert maintenance.verify(cache) == [] and maintenance.stats(cache).entries == N

            second.wait_ready()
            res = cli_runner.run(
                ["-m", *cell(tmp_path, srv, *sweep, experiment="gone", tracking_uri=second.uri)],
                cwd=tmp_path,
                env=mlflow_env,
            )
            assert res.rc == 0, str(res)
            assert srv.stats()["requests"] == N  # the rerun cost nothing
        mlflow = MlflowClient(second.uri)
        runs = mlflow.search_runs(
            [mlflow.get_experiment_by_name("gone").experiment_id], "tags.`judgebench.kind` = 'job'"
        )
        finished = [r for r in runs if r.info.status == "FINISHED"]
        assert len(finished) == 2 and all(
            r.data.metrics["calls_made"] == 0 and r.data.metrics["calls_cached"] == N for r in finished
        )
        assert sorted(r.info.status for r in runs) == ["FINISHED", "FINISHED", "KILLED"]
        (dead,) = [r for r in runs if r.info.status == "KILLED"]
        assert dead.info.run_name == "toy/Perfect/gpt_4o_mini/none", dead.info.run_name  # cell #0's run
    finally:
        first.kill()
        if second is not None:
            second.kill()


# =========================================================================== secrets and untrusted passages


def _grep(root: Path, needle: str, skip: tuple[Path, ...] = ()) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and not any(s in p.parents or s == p for s in skip):
            try:
                if needle.encode() in p.read_bytes():
                    hits.append(str(p))
            except OSError:
                pass
    return hits


def test_a_secret_in_the_config_is_refused_and_written_nowhere(tmp_path):
    planted = "sk-planted-override-4b1d9e"
    conf = tmp_path / "myconf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "leaky.yaml").write_text(f"# @package _global_\njudge:\n  backend:\n    api_key: {planted}\n")
    cases = [  # on the command line (refused before Hydra writes anything), and from a config file
        (["+judge.backend.api_key=" + planted], "judge.backend.api_key"),
        (["hydra.job.env_set.OPENAI_API_KEY=" + planted], "hydra.job.env_set.OPENAI_API_KEY"),
        (["--config-dir", str(tmp_path / "myconf"), "+experiment=leaky"], "judge.backend.api_key"),
    ]
    with FakeLLMServer() as srv:
        for extra, key in cases:
            res = cli_runner.run([*extra, *cell(tmp_path, srv, experiment="secrets")], cwd=tmp_path, env=env_with())
            assert res.rc == 2 and len(res.error_lines) == 1 and "Traceback" not in res.err, str(res)
            assert key in res.error_lines[0] and "environment only" in res.error_lines[0], str(res)
            assert srv.stats()["requests"] == 0
    assert _grep(tmp_path, planted, skip=(tmp_path / "myconf",)) == []
    assert _grep(STORE["dir"], planted) == []


def test_mlflow_helper_script_binds_localhost_by_default(tmp_path):
    """launch/mlflow_server.sh (the SLURM helper's) starts mlflow bound to 127.0.0.1 unless told --host, and
    prints the override jobs use. Run from a copy (its state lives beside it), with a stand-in mlflow that
    records the arguments it was started with."""
    (tmp_path / "launch").mkdir()
    script = tmp_path / "launch" / "mlflow_server.sh"
    script.write_text((REPO / "launch" / "mlflow_server.sh").read_text())
    fake = tmp_path / "fake-mlflow"
    fake.write_text('#!/bin/sh\nprintf "%s\\n" "$@" > "$ARGS_FILE"\n')
    fake.chmod(0o755)

    def started(*options: str) -> tuple[str, list[str]]:
        port, args_file = free_port(), tmp_path / "args.txt"
        args_file.unlink(missing_ok=True)
        env = {**os.environ, "MLFLOW": str(fake), "ARGS_FILE": str(args_file)}
        res = subprocess.run(
            ["bash", str(script), "--foreground", "--port", str(port), *options],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert res.returncode == 0, res.stderr
        argv = args_file.read_text().splitlines()
        assert argv[0] == "server" and argv[argv.index("--port") + 1] == str(port)
        return res.stdout.replace(str(port), "PORT"), argv

    out, argv = started()
    assert argv[argv.index("--host") + 1] == "127.0.0.1" and "--allowed-hosts" not in argv
    assert out == "tracking_uri=http://127.0.0.1:PORT\n"
    out, argv = started("--host", "0.0.0.0")
    assert argv[argv.index("--host") + 1] == "0.0.0.0"
    uri_host = out.removeprefix("tracking_uri=http://").removesuffix(":PORT\n")
    assert uri_host and uri_host != "0.0.0.0" and "\n" not in uri_host, out  # jobs reach a wildcard bind by name
    assert f"{uri_host},{uri_host}:" in argv[argv.index("--allowed-hosts") + 1]  # and MLflow accepts that name


def test_injection_probe_with_the_simulated_judge_is_exactly_zero_and_leaks_no_key(tmp_path):
    """The simulated judge ignores the text: the appended instruction changes nothing. The rewriter is the
    fake server's; the API key planted in the environment appears in no output (mlruns, Hydra dir, cache)."""
    planted = "sk-planted-env-content-bias-77c1"
    with FakeLLMServer() as srv:
        args = [
            "+experiment=content_bias",
            "judge=simulated",
            "rewriter=openai",
            f"rewriter.base_url={srv.openai_base_url}",
            "content_bias.per_level=2",
            "content_bias.score_with_ranker=false",
            "experiment_name=injection_sim",
            "progress=false",
            f"tracking_uri=sqlite:///{tmp_path}/mlruns/mlflow.db",
            f"artifact_root={tmp_path}/mlruns/artifacts",
            f"cache_dir={tmp_path}/cache",
            f"hydra.run.dir={tmp_path}/out",
        ]
        res = cli_runner.run(args, cwd=tmp_path, env=env_with(OPENAI_API_KEY=planted))
        assert res.rc == 0, str(res)
        assert srv.stats()["requests"] > 0
        assert srv.stats()["last_request"]["headers"]["Authorization"] == f"Bearer {planted}"  # the key was used
    mlflow = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    run = latest_run("injection_sim", mlflow)
    m = run.data.metrics
    assert m["injection_pairs"] == 2 and m["injection_mean_inflation"] == 0.0 and m["injection_share_raised"] == 0.0
    assert _grep(tmp_path, planted) == []


@pytest.mark.slow  # ~100 s: the content-bias job with the real SmolLM2 judge on the CPU
def test_injection_probe_with_the_smollm2_judge(tmp_path, converted_smollm2):
    """The real offline LLM judge reads the passages: the probe runs and its metrics reach MLflow."""
    planted = "sk-planted-env-smollm2-3d0a"
    files = write_dataset(tmp_path / "data", ["q01"])
    # a pool of four (two human-0 pairs for the probe, a 3, an unjudged one): 8 prompts in all, one batch
    # (3 pairs x original and rewritten text, 2 injected); SmolLM2 on a busy CPU takes ~1 s per UMBRELA prompt
    labels = {d: r for _, d, r in LABEL_SET[LABEL_SET["query_id"] == "q01"].itertuples(index=False)}
    pool = files["pool"].read_text().splitlines()
    keep, need = [], {0: 2, 3: 1, None: 1}
    for line in pool:
        level = labels.get(line.split()[2])
        if need.get(level, 0) > 0:
            need[level] -= 1
            keep.append(line)
    files["pool"].write_text(
        "".join(f"{q} Q0 {d} {i} {sc} {t}\n" for i, (q, _, d, _, sc, t) in enumerate((x.split() for x in keep), 1))
    )
    with FakeLLMServer() as srv:
        args = [
            "+experiment=content_bias",
            *file_mode(files),
            "judge=smollm2",
            f"judge.model_spec.model={converted_smollm2}",
            "rewriter=openai",
            f"rewriter.base_url={srv.openai_base_url}",
            "content_bias.per_level=2",
            "content_bias.score_with_ranker=false",
            "experiment_name=injection_smollm2",
            "progress=false",
            f"tracking_uri=sqlite:///{tmp_path}/mlruns/mlflow.db",
            f"artifact_root={tmp_path}/mlruns/artifacts",
            f"cache_dir={tmp_path}/cache",
            f"hydra.run.dir={tmp_path}/out",
        ]
        res = cli_runner.run(
            args, cwd=tmp_path, env=env_with(OPENAI_API_KEY=planted), fresh=True
        )  # torch: a new interpreter
        assert res.rc == 0, str(res)
    mlflow = MlflowClient(f"sqlite:///{tmp_path}/mlruns/mlflow.db")
    run = latest_run("injection_smollm2", mlflow)
    m = run.data.metrics

    def logged(name: str) -> pd.DataFrame:
        path = mlflow.download_artifacts(run.info.run_id, name, str(tmp_path / "dl"))
        return pd.read_csv(path, sep="\t", dtype={"query_id": str, "doc_id": str})

    zeros = sorted(line.split()[2] for line in keep if labels.get(line.split()[2]) == 0)
    injected, judged = logged("injection_labels.tsv"), logged("labels.tsv").set_index("doc_id")
    assert m["injection_pairs"] == 2 and sorted(injected["doc_id"]) == zeros  # exactly the two human-0 pairs
    assert set(injected["inj"]) <= {0, 1, 2, 3}
    # each pair's label before injection is the judge's label on the original text (the original pass)
    assert list(injected["relevance"]) == [judged.loc[d, "judge_original"] for d in injected["doc_id"]]
    rows = list(zip(injected["relevance"], injected["inj"]))
    assert m["injection_mean_inflation"] == pytest.approx(sum(b - a for a, b in rows) / 2)
    assert m["injection_share_raised"] == sum(b > a for a, b in rows) / 2
    assert m["injection_share_labelled_3"] == sum(b == 3 for _, b in rows) / 2
    # a fresh cache: 3 judged pairs x (original, rewritten) + the 2 injected ones, each a new prompt
    assert m["judge_calls_made"] == 8 and m["judge_pairs"] == 8
    print(
        f"\nsmollm2 injection probe: mean inflation {m['injection_mean_inflation']:+.2f}, share raised "
        f"{m['injection_share_raised']:.2f}"
    )
    assert _grep(tmp_path, planted) == []
