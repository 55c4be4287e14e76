"""Shared pytest fixtures, and the rule for data that lives outside the repository.

The TREC DL qrels, topics and runs ship with the package (``trec_dl_files``). The MS MARCO passage
texts and the LLMJudge collection do not: tests that need them read ``../shared/data/`` beside the
checkout. Without it they skip with a reason that says how to enable them; under CI (``CI`` set) they
fail instead, because a check nobody ran must not look like a check that passed.
"""

import gc
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

# One OpenMP thread for torch, in the test processes and every child they start (gpu_check.sh, fresh run.py, the
# local benchmarks): set before anything imports torch. The suite runs two xdist workers on two cores, so torch's
# default (one thread a core) put four spinning threads on two cores: the tiny-model GPU check took 221 s in the
# suite instead of about 30, and its CPU fell from 24 s to 15 s alone. No test asserts a speed or a thread count;
# a developer's own OMP_NUM_THREADS is kept.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from judgebench.data.trec_dl import SHIPPED  # noqa: E402
from shared_data import need_module, need_shared  # noqa: E402, F401  (tests used to import them from here)

# The longest modules of the default suite first, so that the two xdist workers (--dist loadscope, one module
# on one worker) end together instead of one idling while the other runs a long module picked last. Seconds on
# 2 cores, 2026-12-03; a module not listed keeps its place after these. xdist would otherwise order modules
# by their number of tests (pyproject sets --no-loadscope-reorder), which put test_wheel's 2 tests, 15 s, last.
LONGEST_FIRST = {
    "test_bad_input.py": 81,
    "test_compare.py": 49,
    "test_benchmarks.py": 44,
    "test_slurm.py": 40,
    "test_model_loading.py": 37,
    "test_evaluation.py": 36,
    "test_calibration.py": 34,
    "test_labels_only.py": 22,
    "test_concurrency.py": 22,
    "test_comparisons_cannot_mix.py": 21,
    "test_reliability.py": 20,
    "test_preflight.py": 19,
    "test_dry_run_and_rewrites.py": 19,
    "test_architecture.py": 18,
    "test_pipeline.py": 17,
    "test_wheel.py": 15,
    "test_qrels_file.py": 15,
    "test_download_models.py": 15,
}

SLOW_LONGEST_FIRST = {  # the same for `-m slow`
    "test_slurm.py": 150,
    "test_reliability.py": 140,
    "test_benchmarks.py": 130,
    "test_llama_cpp_server.py": 100,
    "test_transformers_model.py": 90,
    "test_bm25.py": 47,
    "test_report_html.py": 47,
    "test_rank_job.py": 35,
    "test_content_bias.py": 31,
    "test_work_estimate.py": 30,
}


def pytest_collection_finish(session):
    """Every object alive after collection (the imported libraries: pandas, MLflow, Hydra, torch's stubs...) goes to
    the garbage collector's permanent generation, where no collection walks it again, so Python's own gen-2 passes
    look only at what the tests made. Forked children (tests/helpers/cli_runner.py) inherit the frozen heap, which also
    keeps its pages shared. Nothing frozen is garbage: collected first. Nothing thaws it (the project's Holm is numpy,
    metrics/significance.py, not statsmodels' collecting one), and no hook asks for the frozen count after each test:
    gc.get_freeze_count() walks the whole permanent generation (0.1-0.5 s a call in a warm worker)."""
    gc.collect()
    gc.freeze()


def pytest_collection_modifyitems(config, items):
    """Order modules by :data:`LONGEST_FIRST` (a stable sort: tests keep their order inside a module)."""
    seconds = SLOW_LONGEST_FIRST if config.getoption("markexpr", "").strip() == "slow" else LONGEST_FIRST
    items.sort(key=lambda item: -seconds.get(item.path.name, 0))


REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """No connection leaves this process: name lookups and connects fail at once with OSError, as offline, so a
    test of the offline path neither depends on nor probes the machine's network."""

    def refuse(*args, **kwargs):
        raise OSError("network disabled by the no_network fixture")

    for name in ("getaddrinfo", "create_connection", "gethostbyname"):
        monkeypatch.setattr(socket, name, refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)


@pytest.fixture(scope="session")
def trec_dl_files() -> Path:
    """The TREC DL qrels, topics, BM25 runs and reranker runs shipped with the package."""
    return SHIPPED


@pytest.fixture(scope="session")
def trec_dl_dir() -> Path:
    """The full TREC DL directory, with the MS MARCO passage texts (not shipped)."""
    return need_shared("data/trec-dl/passages", "the TREC DL passage texts (MS MARCO)").parent


@pytest.fixture(scope="session")
def llmjudge_dir() -> Path:
    """The LLMJudge challenge collection (not shipped: its labels' licence is not stated)."""
    return need_shared("data/llmjudge", "the LLMJudge collection")


@pytest.fixture(scope="session", autouse=True)
def premigrated_mlflow_stores(tmp_path_factory):
    """New SQLite stores start as a copy of one store whose schema MLflow created once per session.

    MLflow's schema creation takes 3-15 s per fresh store, and the suite opens dozens. The copy is made where
    ``mlflow_store.ensure_sqlite_parent`` would create the tables, in this process and in every child forked from
    it (tests/helpers/cli_runner.py); its lock, ready-stamp and writability check still run on the copy. Tests that are
    about schema creation itself opt out with ``@pytest.mark.real_mlflow_schema``, and children started as new
    interpreters (``fresh=True``, the wheel, SLURM) always create their stores for real.
    """
    from mlflow.tracking import MlflowClient

    from judgebench.tracking import mlflow_store

    template = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(f"sqlite:///{template}").search_experiments(max_results=1)
    original = mlflow_store.ensure_sqlite_parent

    def from_template(tracking_uri: str) -> None:
        if tracking_uri.startswith("sqlite:///") and not getattr(from_template, "off", False):
            db = Path(tracking_uri[len("sqlite:///") :])
            if not db.exists():
                part = db.with_name(f".{db.name}.{os.getpid()}.copy")
                try:  # copied aside, then linked into place: two children racing never overwrite an opened store
                    db.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(template, part)
                    os.link(part, db)
                except OSError:  # it exists by now, or the folder is unwritable (the real path reports that)
                    pass
                finally:
                    part.unlink(missing_ok=True)
        original(tracking_uri)

    patch = pytest.MonkeyPatch()
    patch.setattr(mlflow_store, "ensure_sqlite_parent", from_template)
    yield from_template
    patch.undo()


@pytest.fixture(autouse=True)
def _real_mlflow_schema(request, premigrated_mlflow_stores):
    """``@pytest.mark.real_mlflow_schema``: this test's stores are created by MLflow, not copied."""
    if request.node.get_closest_marker("real_mlflow_schema") is None:
        yield
        return
    premigrated_mlflow_stores.off = True
    yield
    premigrated_mlflow_stores.off = False


TOY_GRID = [
    "+system=bm25,oracle_perfect,oracle_swap_3,oracle_swap_2,oracle_swap_1,"
    "oracle_swap_2_3,oracle_swap_1_2,simulated_llm",
    "judge=human,simulated,simulated_unbiased",
]


@pytest.fixture(scope="session")
def toy_grid_store(tmp_path_factory) -> Path:
    """One toy sweep for the test modules that only read it (test_compare, test_report_html, the budget benchmark's
    smoke test): 8 systems (BM25, the six oracles, SimLLM; ``+system=``, so no ranker x perturbation duplicates to
    skip) x {human, biased and unbiased simulated} as ``run.py -m`` (forked warm, tests/helpers/cli_runner.py),
    experiment ``grid`` in the default store ``<dir>/mlruns/mlflow.db``: 24 job runs. Readers must not change its runs.

    Built once per session: the first xdist worker that needs it builds it while the others wait on a file lock
    (it took 14-24 s per worker). No test writes to it: test_compare logs its compare runs into a copy of the
    database."""

    import cli_runner

    cli_runner.warm()
    base = tmp_path_factory.getbasetemp()
    tmp = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-toy-grid"

    def build(tmp: Path) -> None:
        res = cli_runner.run(
            [
                "-m",
                *TOY_GRID,
                "experiment_name=grid",
                "progress=false",
                f"hydra.sweep.dir={tmp}/multirun",
                f"cache_dir={tmp}/cache",
            ],
            cwd=tmp,
            timeout=600,
        )
        assert res.rc == 0, str(res)

    return built_once(tmp, build)


def built_once(tmp: Path, build) -> Path:
    """``tmp`` made by ``build(tmp)`` once for all xdist workers of the session: the first that asks builds it
    while the others wait on a file lock; a ``.done`` stamp says it is whole (a failed build is removed and redone)."""
    import fcntl

    done = tmp.with_name(tmp.name + ".done")
    with open(tmp.with_name(tmp.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(tmp, ignore_errors=True)  # what a failed build left
            tmp.mkdir()
            build(tmp)
            done.touch()
    return tmp


@pytest.fixture(scope="session")
def toy_grid_compare(toy_grid_store) -> dict:
    """``judgebench-compare experiment=grid`` over the toy grid, with its default options, once per session: the
    report's folder (``out``), what it printed, and a copy of the store's database (``db``) holding that one compare
    run, whose artifacts went into the shared store's artifact folder (``db``'s ``artifacts`` links there).

    test_compare and test_report_html read the same report, so it is drawn once (each module drew its own, 15-30 s).
    Readers must not change ``out`` or ``db``: a module that logs more compare runs copies ``db`` first (test_compare).
    Built like the grid: the first xdist worker that needs it, while the others wait on a file lock."""
    import json

    from cli_runner import run_compare

    def build(tmp: Path) -> None:
        shutil.copy(toy_grid_store / "mlruns" / "mlflow.db", tmp / "mlflow.db")
        (tmp / "artifacts").symlink_to(toy_grid_store / "mlruns" / "artifacts")  # compare looks beside the store
        code, printed, err = run_compare("experiment=grid", f"tracking_uri=sqlite:///{tmp}/mlflow.db", f"out={tmp}/out")
        assert code == 0, err
        (tmp / "printed.json").write_text(json.dumps(printed), encoding="utf-8")

    tmp = built_once(toy_grid_store.with_name("shared-toy-grid-compare"), build)
    return {"db": tmp / "mlflow.db", "out": tmp / "out", "printed": json.loads((tmp / "printed.json").read_text())}


@pytest.fixture(scope="session")
def converted_smollm2(tmp_path_factory) -> Path:
    """The real SmolLM2 converted to a plain HF folder once per test session, shared by the xdist workers.

    Reused from ``$JUDGEBENCH_CACHE_DIR`` or the checkout's ``.cache/judgebench`` when converted there; else
    the first worker converts it (in a subprocess, so torch stays out of this process, which forks jobs) under
    the session's temp root while the others wait on a file lock. Tests must not change the folder."""
    import fcntl

    from judgebench.llm.local.smollm2 import MODEL_SUBDIR, smollm2_model_dir

    for root in (os.environ.get("JUDGEBENCH_CACHE_DIR"), REPO / ".cache" / "judgebench"):
        if root and (Path(root) / MODEL_SUBDIR / "config.json").is_file():
            return Path(root) / MODEL_SUBDIR
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "shared-smollm2"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / MODEL_SUBDIR / "config.json").is_file():
            code = f"from judgebench.llm.local.smollm2 import smollm2_model_dir; smollm2_model_dir({str(shared)!r})"
            subprocess.run([sys.executable, "-c", code], check=True, timeout=900)
    path = smollm2_model_dir(shared)  # converted already: found, not converted again
    assert path == shared / MODEL_SUBDIR and (path / "model.safetensors").is_file()
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]  # the atomic rename left no temp dir
    return path
