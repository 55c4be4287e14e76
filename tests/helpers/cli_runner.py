"""Run ``python run.py ARGS`` (or ``python -m judgebench.compare ARGS``) as a child process, fast.

A new interpreter spends 3-6 s importing hydra, mlflow, pandas and scikit-learn before run.py does anything.
:func:`run` forks the warm test process instead: the child runs run.py exactly as ``python run.py ARGS`` would
(``runpy`` as ``__main__``, its own argv, environment and working directory, stdout/stderr to files, exit
code = run.py's, atexit handlers registered by the job run at its end), in ~0.3 s plus the job itself.
``fresh=True`` starts a real interpreter instead, for the cases where that matters: a child that runs torch
(forking after torch started its thread pools can deadlock) and the tests that prove the plain command.

:func:`start` returns a :class:`Child` to kill with SIGKILL at a moment of the test's choosing.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import runpy
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RUN_PY = REPO / "run.py"
ERROR_PREFIX = "judgebench: error:"
QUERIES = ["q01", "q02", "q03"]


def warm() -> None:
    """Import what run.py's jobs import, once, in the parent (so every forked child starts warm)."""
    import hydra  # noqa: F401
    import openai  # noqa: F401

    import judgebench.compare.cli  # noqa: F401
    import judgebench.jobs.content_bias  # noqa: F401
    import judgebench.jobs.pipeline  # noqa: F401
    import judgebench.judges.llm  # noqa: F401


@dataclass
class Result:
    args: list[str]
    rc: int
    out: str
    err: str

    @property
    def error_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.startswith(ERROR_PREFIX)]

    def __str__(self) -> str:
        return f"$ {' '.join(self.args)}\nrc={self.rc}\n--- stdout\n{self.out[-3000:]}\n--- stderr\n{self.err[-3000:]}"


class Child:
    """A forked run.py; wait() for it or kill() it (SIGKILL, like `kill -9`)."""

    def __init__(self, pid: int, args: list[str], out: Path, err: Path) -> None:
        self.pid, self.args, self._out, self._err = pid, args, out, err
        self.rc: int | None = None

    def poll(self) -> int | None:
        if self.rc is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.rc = os.waitstatus_to_exitcode(status)
        return self.rc

    def wait(self, timeout: float = 300) -> Result:
        deadline = time.monotonic() + timeout
        while self.poll() is None:
            if time.monotonic() > deadline:
                self.kill()
                raise TimeoutError(f"run.py {' '.join(self.args)} still running after {timeout}s\n{self.result()}")
            time.sleep(0.02)
        return self.result()

    def signal_state(self) -> str:
        """The child's signal mask, ignored and caught signals and thread count (/proc), for failure messages."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError as e:
            return f"no /proc status: {e}"
        return " ".join(
            line.replace("\t", "") for line in status.splitlines() if line.startswith(("Sig", "Shd", "Threads"))
        )

    def kill(self) -> None:
        if self.poll() is None:
            os.kill(self.pid, signal.SIGKILL)
            _, status = os.waitpid(self.pid, 0)
            self.rc = os.waitstatus_to_exitcode(status)

    def result(self) -> Result:
        read = lambda p: p.read_text(encoding="utf-8", errors="replace") if p.exists() else ""  # noqa: E731
        return Result(self.args, self.rc if self.rc is not None else -1, read(self._out), read(self._err))


def _child(target: list[str], args: list[str], cwd: Path, env: dict[str, str], out: Path, err: Path) -> None:
    code = 1
    try:
        # as a new `python run.py` starts, whatever handlers the test process set: Ctrl-C raises
        # KeyboardInterrupt, SIGTERM kills
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        fo, fe = open(out, "w"), open(err, "w")
        os.dup2(fo.fileno(), 1)
        os.dup2(fe.fileno(), 2)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        sys.stdin = open(os.devnull)
        from hydra.core.global_hydra import GlobalHydra

        GlobalHydra.instance().clear()
        handlers: list = []  # the job's own atexit handlers (the parent's must not run here)
        atexit.register = lambda fn, *a, **kw: handlers.append((fn, a, kw)) or fn
        sys.argv = [target[-1], *args]
        try:
            if target[0] == "-m":
                runpy.run_module(target[1], run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(target[0], run_name="__main__")
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                print(e.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
        for fn, a, kw in reversed(handlers):
            try:
                fn(*a, **kw)
            except BaseException:
                traceback.print_exc()
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def _target(module: str | None) -> list[str]:
    return ["-m", module] if module else [str(RUN_PY)]


def start(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None, module: str | None = None, uid: int | None = None
) -> Child:
    """Fork the warm test process into `python run.py ARGS` (or `python -m MODULE ARGS`); ``uid``: the child runs
    as that user (the test process must be root), to meet permissions that root ignores."""
    env = dict(os.environ if env is None else env)
    # the child's output beside its work, except in the checkout itself (a test run from there must leave nothing in it)
    logs = Path(tempfile.mkdtemp(prefix="cli-", dir=None if Path(cwd).resolve() == REPO.resolve() else cwd))
    out, err = logs / "stdout.txt", logs / "stderr.txt"
    if uid is not None:
        logs.chmod(0o777)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child never returns
        if uid is not None:
            os.setgid(uid)
            os.setuid(uid)
        _child(_target(module), list(args), Path(cwd), env, out, err)
    return Child(pid, list(args), out, err)


def run(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    module: str | None = None,
    fresh: bool = False,
    timeout: float = 300,
) -> Result:
    """`python run.py ARGS` (or `python -m MODULE ARGS`): exit code, stdout, stderr."""
    if fresh:
        cmd = [sys.executable, *_target(module), *args]
        done = subprocess.run(
            cmd, cwd=cwd, env=dict(os.environ if env is None else env), capture_output=True, text=True, timeout=timeout
        )
        return Result(list(args), done.returncode, done.stdout, done.stderr)
    return start(args, cwd=cwd, env=env, module=module).wait(timeout)


# --------------------------------------------------------------------------- a small file-mode dataset


def write_dataset(root: Path, queries: list[str] = QUERIES) -> dict[str, Path]:
    """Toy queries (three by default) as TREC files: topics TSV, qrels, pool run, passages JSONL."""
    from judgebench.data.datasets import load_toy

    toy = load_toy()
    root.mkdir(parents=True, exist_ok=True)
    files = {
        k: root / n
        for k, n in (
            ("topics", "topics.tsv"),
            ("qrels", "qrels.txt"),
            ("pool", "pool.trec"),
            ("passages", "passages.jsonl"),
        )
    }
    files["topics"].write_text("".join(f"{q}\t{toy.queries[q]}\n" for q in queries), encoding="utf-8")
    qrels = toy.qrels[toy.qrels["query_id"].isin(queries)]
    files["qrels"].write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.itertuples(index=False)), encoding="utf-8"
    )
    pool = toy.pool[toy.pool["query_id"].isin(queries)]
    files["pool"].write_text(
        "".join(
            f"{q} Q0 {d} {r} {s!r} bm25\n"
            for q, d, s, r in pool[["query_id", "doc_id", "score", "rank"]].itertuples(index=False)
        ),
        encoding="utf-8",
    )
    files["passages"].write_text(
        "".join(json.dumps({"docid": d, "text": toy.corpus[d]}) + "\n" for d in pool["doc_id"].unique()),
        encoding="utf-8",
    )
    return files


def file_mode(files: dict[str, Path]) -> list[str]:
    return [
        "dataset=dl19",
        "dataset.data_dir=null",
        *(f"dataset.{k}={files[k]}" for k in ("topics", "qrels", "pool", "passages")),
    ]


def store_fixture(store: dict[str, Path]):
    """An autouse, module-scoped fixture (assign it to a module-level name): one warm MLflow store for the test module,
    its folder in ``store["dir"]`` while the module runs."""
    import pytest

    @pytest.fixture(scope="module", autouse=True)
    def _warm(tmp_path_factory):
        store["dir"] = warm_store(tmp_path_factory)
        yield
        store.clear()

    return _warm


def env_with(**extra: str) -> dict[str, str]:
    """This environment without API keys, base URLs or settings that change what a job prints, plus a test key."""
    drop = ("OPENAI_BASE_URL", "HYDRA_FULL_ERROR", "JUDGEBENCH_VERBOSE", "JUDGEBENCH_CACHE_DIR")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k not in drop}
    return {**env, "OPENAI_API_KEY": "test-key", **extra}


def run_compare(*args: str) -> tuple[int, str, str]:
    """``judgebench-compare ARGS`` in this process: exit code, stdout, stderr."""
    from judgebench.compare.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def warm_store(tmp_path_factory) -> Path:
    """Imports done once in the parent; one MLflow store per test module (its schema takes seconds to create)."""
    from judgebench.tracking import mlflow_store

    warm()
    store = tmp_path_factory.mktemp("store")
    mlflow_store.ensure_sqlite_parent(f"sqlite:///{store}/mlflow.db")
    return store
