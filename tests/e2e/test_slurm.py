"""Launcher profiles, the sweep summary, and real sweeps through the local SLURM cluster.

The SLURM tests need the single-node cluster of launch/start_slurm.sh (.ci/run starts it). They
fail when it is missing and the environment variable CI is set, and skip with the reason otherwise.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from rank_once import DEPTH, expected_prompts, run_artifact_bytes
from sweeps import explain, sweep
from tiny_models import tiny_causal

REPO = Path(__file__).resolve().parents[2]
TOY_RUN = REPO / "src" / "judgebench" / "data" / "toy" / "pool.trec"
# Small, fast SLURM jobs on the 2-core test node: 2 run at once; USR2 10 s before the limit
# (the default signal_delay_s=120 with a short timeout_min kills jobs as they start).
SLURM_SMALL = [
    "hydra.launcher.cpus_per_task=1",
    "hydra.launcher.mem_gb=1",
    "hydra.launcher.timeout_min=5",
    "hydra.launcher.signal_delay_s=10",
]


def _slurm_problem() -> str | None:
    for tool in ("sbatch", "sinfo", "squeue", "sacct", "scancel"):
        if shutil.which(tool) is None:
            return f"`{tool}` not found"
    deadline = time.monotonic() + 90
    while True:
        try:
            state = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"SLURM does not answer: {exc}"
        states = set(state.stdout.split())
        # the previous test's last job may still be completing (its epilog): that node is back in seconds
        if state.returncode != 0 or "completing" not in states or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    try:
        acct = subprocess.run(["sacct", "-n", "-X", "-S", "now"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"SLURM does not answer: {exc}"
    if state.returncode != 0 or not states & {"idle", "mixed", "allocated"}:
        return f"no usable node (sinfo: {state.stdout.strip() or state.stderr.strip()})"
    if acct.returncode != 0:  # without accounting a killed job hangs the submitter forever
        return f"no SLURM accounting (sacct: {acct.stderr.strip()})"
    return None


@pytest.fixture
def slurm_cluster():
    """The local cluster, to this test alone: its tests count the jobs that run at once on the 2-core node, so
    pytest-xdist workers take turns (an exclusive lock on a file beside the machine's other temporary files)."""
    with open(Path(tempfile.gettempdir()) / "judgebench-tests-slurm.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        problem = _slurm_problem()  # checked with the lock held: no other test's jobs are starting or ending now
        if problem:
            hint = "start it with `launch/start_slurm.sh` (as root)"
            if os.environ.get("CI"):
                pytest.fail(f"the local SLURM cluster is required under CI: {problem}; {hint}")
            pytest.skip(f"no local SLURM cluster: {problem}; {hint}")
        yield


def summary(tmp: Path) -> dict:
    return json.loads((tmp / "multirun" / "sweep_summary.json").read_text())


def runs(tmp: Path) -> list:
    from judgebench.tracking.mlflow_store import ensure_sqlite_parent

    ensure_sqlite_parent(f"sqlite:///{tmp}/mlruns/mlflow.db")  # never race the jobs' schema creation
    client = MlflowClient(f"sqlite:///{tmp}/mlruns/mlflow.db")
    exp = client.get_experiment_by_name("launch")
    return client.search_runs([exp.experiment_id], filter_string="tags.`judgebench.kind` = 'job'")


def sacct_states(job: str, expect: int = 1, timeout: float = 60) -> dict[str, tuple[str, str]]:
    """{job id: (raw id, state)} from accounting, once it lists `expect` jobs of `job` and none is pending
    or running: a job's result reaches the submitter before SLURM has closed the job (epilog, accounting
    update), and an array task can reach accounting seconds after its siblings."""
    end = time.time() + timeout
    while True:
        out = subprocess.run(
            ["sacct", "-n", "-X", "-P", "-j", job, "-o", "JobID,JobIDRaw,State"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        rows = {jid: (raw, state) for jid, raw, state in (line.split("|") for line in out.stdout.split())}
        settled = len(rows) >= expect and not any(
            state in ("PENDING", "RUNNING", "COMPLETING") for _, state in rows.values()
        )
        if settled or time.time() > end:
            return rows
        time.sleep(1)


# ----------------------------------------------------------------------------------------------
# no cluster needed


def launcher_config(profile: str) -> str:
    done = subprocess.run(
        [sys.executable, str(REPO / "run.py"), f"hydra/launcher={profile}", "--cfg", "hydra", "-p", "hydra.launcher"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, explain(done)
    return done.stdout


def test_launcher_profiles_compose():
    assert "BasicLauncher" in launcher_config("local")
    local = launcher_config("local_parallel")
    assert "_target_: hydra_plugins.judgebench_launcher.SubmititLocalLauncher" in local
    slurm = launcher_config("slurm")
    assert "_target_: hydra_plugins.judgebench_launcher.SubmititSlurmLauncher" in slurm
    for field in (
        "partition:",
        "account:",
        "qos:",
        "timeout_min:",
        "cpus_per_task:",
        "mem_gb:",
        "gpus_per_node:",
        "gres:",
        "setup:",
        "array_parallelism:",
    ):
        assert field in slurm
    gpu = launcher_config("slurm_gpu")
    assert "gpus_per_node: 1" in gpu and "SubmititSlurmLauncher" in gpu


def test_local_sweep_summary_reports_ran_skipped_failed(tmp_path):
    """Hydra's basic launcher: cells ran / skipped / failed are reported, and a rerun skips what finished. The second
    run file names a query the dataset lacks, a problem of its cell alone (found when it ranks; a missing file would
    stop the sweep before any cell, cli/sweep_preflight.py)."""
    missing = tmp_path / "later.trec"
    missing.write_text(TOY_RUN.read_text(encoding="utf-8") + "q_later Q0 d1 1 1.0 pool\n", encoding="utf-8")
    cells = [
        "ranker=runfile",
        "ranker.name=Pool",
        f"ranker.path={TOY_RUN},{missing}",
        "perturbation=perfect,swap_1",
        "judge=human",
    ]
    first = sweep(tmp_path, *cells, launcher="local")
    assert first.returncode != 0, explain(first)  # a failed cell fails the sweep ...
    assert "judgebench sweep: 4 cells - 1 ran, 2 skipped, 1 failed" in first.stdout, explain(
        first
    )  # ... reported at exit
    s = summary(tmp_path)
    # keyed by the two swept settings, wherever the sweep lists them (a component's own settings move,
    # cli/sweep_settings.py)
    by = {
        tuple(next(o for o in r["overrides"] if o.startswith(k)) for k in ("ranker.path=", "perturbation=")): r
        for r in s["jobs"]
    }
    assert by[(f"ranker.path={TOY_RUN}", "perturbation=perfect")]["status"] == "finished"
    assert by[(f"ranker.path={TOY_RUN}", "perturbation=swap_1")]["status"] == "skipped-duplicate"
    assert by[(f"ranker.path={missing}", "perturbation=swap_1")]["status"] == "skipped-duplicate"
    failed = by[(f"ranker.path={missing}", "perturbation=perfect")]
    assert failed["status"] == "failed" and "q_later" in failed["error"], failed

    shutil.copy(TOY_RUN, missing)
    second = sweep(tmp_path, *cells, launcher="local")
    assert second.returncode == 0, explain(second)
    s = summary(tmp_path)
    assert (s["ran"], s["skipped"], s["failed"]) == (1, 3, 0)
    assert sorted(r["status"] for r in s["jobs"]) == [
        "finished",
        "skipped-done",
        "skipped-duplicate",
        "skipped-duplicate",
    ]
    # the failed cell's run failed on its input before any work: deleted, not left FAILED (job_run.JobRun.fail)
    assert sorted(r.info.status for r in runs(tmp_path)) == ["FINISHED", "FINISHED"]


@pytest.mark.slow  # ~40 s: a sweep of cells in subprocesses
def test_local_parallel_sweep_reports_cells_run_in_subprocesses(tmp_path):
    """submitit's local executor: jobs run in their own processes; on_job_end never runs in the submitter."""
    done = sweep(tmp_path, "ranker=oracle", "perturbation=perfect", "judge=human,simulated", launcher="local_parallel")
    assert done.returncode == 0, explain(done)
    assert "judgebench sweep: 2 cells - 2 ran, 0 skipped, 0 failed" in done.stdout, explain(done)
    s = summary(tmp_path)
    assert all(r["job_id"].isdigit() for r in s["jobs"]), s  # submitit local job ids are the jobs' pids
    assert len({r["job_id"] for r in s["jobs"]}) == 2
    assert sorted(r.info.status for r in runs(tmp_path)) == ["FINISHED", "FINISHED"]


# ----------------------------------------------------------------------------------------------
# the local SLURM cluster


@pytest.mark.slow  # ~18 s: a 4-cell sweep through the local SLURM cluster's sbatch array
def test_slurm_sweep_logs_every_cell_with_its_job_id(slurm_cluster, tmp_path):
    cells = ["ranker=oracle", "perturbation=perfect,swap_1", "judge=human,simulated", *SLURM_SMALL]
    started = time.perf_counter()
    first = sweep(tmp_path, *cells)
    wall = time.perf_counter() - started
    assert first.returncode == 0, explain(first)
    assert "judgebench sweep: 4 cells - 4 ran, 0 skipped, 0 failed" in first.stdout, explain(first)

    s = summary(tmp_path)
    array_ids = {r["slurm_array_job_id"] for r in s["jobs"]}
    assert len(array_ids) == 1, s  # one sbatch array for the sweep, one task per cell
    (array,) = array_ids
    assert sorted(r["slurm_array_task_id"] for r in s["jobs"]) == ["0", "1", "2", "3"]

    logged = runs(tmp_path)
    assert len(logged) == 4 and {r.info.status for r in logged} == {"FINISHED"}
    assert {(r.data.tags["system"], r.data.tags["judge"]) for r in logged} == {
        ("Perfect", "human"),
        ("Perfect", "simulated"),
        ("Swap[1]", "human"),
        ("Swap[1]", "simulated"),
    }
    job_ids = {r.data.tags["slurm_job_id"] for r in logged}
    assert len(job_ids) == 4 and {r.data.tags["slurm_array_job_id"] for r in logged} == {array}
    assert job_ids == {r["slurm_job_id"] for r in s["jobs"]}
    # the scheduler knows these jobs, each COMPLETED
    acct = sacct_states(array, expect=len(job_ids))
    assert {raw for raw, _ in acct.values()} == job_ids and {state for _, state in acct.values()} == {"COMPLETED"}, acct
    for r in logged:
        assert r.data.metrics["ndcg10_human"] > 0 and r.data.params["dataset.name"] == "toy"
    print(f"4-cell SLURM sweep: {wall:.1f}s")  # the rerun (resume) is in the next test


def _wait_running_run(tmp: Path, proc: subprocess.Popen, judge: str, timeout: float = 120) -> dict:
    end = time.time() + timeout
    while time.time() < end:
        assert proc.poll() is None, proc.communicate()
        if (tmp / "mlruns" / "mlflow.db.ready").exists():  # the submitter created the store
            try:
                live = [r for r in runs(tmp) if r.info.status == "RUNNING" and r.data.tags.get("judge") == judge]
            except Exception:
                live = []
            if live:
                return live[0].data.tags
        time.sleep(0.5)
    raise AssertionError("the slow cell never started")


@pytest.mark.slow  # ~60 s: two sweeps of 4 cells on the 2-core test node
def test_slurm_reports_failed_and_cancelled_cells_then_resumes(slurm_cluster, tmp_path):
    """A cell whose Python raises (SLURM says COMPLETED), a cell cancelled mid-run: both reported failed;
    the rerun skips the finished cell and reruns the others, reusing the killed cell's cached LLM calls."""
    from judgebench.testing.fake_process import FakeLLMServer

    later = (
        tmp_path / "later.trec"
    )  # a query the dataset lacks: its cells' own problem (a missing file stops the sweep first)
    later.write_text(TOY_RUN.read_text(encoding="utf-8") + "q_later Q0 d1 1 1.0 pool\n", encoding="utf-8")
    with FakeLLMServer(latency_s=0.2) as srv:
        env = {**os.environ, "OPENAI_API_KEY": "test-key"}
        judge = tmp_path / "conf" / "judge" / "fake.yaml"  # an OpenAI-compatible judge on the fake server
        judge.parent.mkdir(parents=True)
        judge.write_text(
            "defaults:\n  - vllm\n  - _self_\nname: fake\n"
            f"base_url: {srv.openai_base_url}\nbackend:\n  model: fake\n  api_key_env: OPENAI_API_KEY\n  "
            "max_concurrency: 1\n"
        )
        cells = [
            f"hydra.searchpath=[file://{tmp_path}/conf]",
            "ranker=runfile",
            "ranker.name=Pool",
            f"ranker.path={TOY_RUN},{later}",
            "judge=human,fake",
            *SLURM_SMALL,
        ]
        # cells: #0 (pool, human) finishes; #1 (pool, fake) is slow and gets cancelled; #2, #3 (unknown query) raise
        proc = subprocess.Popen(
            [
                sys.executable,
                str(REPO / "run.py"),
                "-m",
                "hydra/launcher=slurm",
                *cells,
                "experiment_name=launch",
                f"tracking_uri=sqlite:///{tmp_path}/mlruns/mlflow.db",
                f"artifact_root={tmp_path}/mlruns/artifacts",
                f"cache_dir={tmp_path}/cache",
                f"hydra.sweep.dir={tmp_path}/multirun",
                "progress=false",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            tags = _wait_running_run(tmp_path, proc, judge="fake")
            victim = f"{tags['slurm_array_job_id']}_{tags['slurm_array_task_id']}"
            deadline = time.time() + 60
            while srv.stats()["requests"] < 5 and time.time() < deadline:  # mid-run: some calls made and cached
                time.sleep(0.2)
            subprocess.run(["scancel", victim], check=True, timeout=30)
            out, err = proc.communicate(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
        first = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        assert first.returncode != 0, explain(first)
        s = summary(tmp_path)
        assert (s["ran"], s["skipped"], s["failed"]) == (1, 0, 3), explain(first)
        by = {r["num"]: r for r in s["jobs"]}
        assert by[0]["status"] == "finished"
        assert by[1]["status"] == "failed" and "CANCELLED" in by[1]["error"] and by[1]["job_id"] == victim
        for n in (2, 3):
            assert by[n]["status"] == "failed" and "q_later" in by[n]["error"], by[n]
            # the job itself ran to its end: SLURM reports COMPLETED, the result says failed
            assert [state for _, state in sacct_states(by[n]["job_id"]).values()] == ["COMPLETED"]
        assert "judgebench sweep: 4 cells - 1 ran, 0 skipped, 3 failed" in first.stdout
        killed = [
            r
            for r in runs(tmp_path)
            if r.data.tags.get("judge") == "fake" and r.data.params["ranker.path"] == str(TOY_RUN)
        ]
        # killed with SIGKILL its Python cannot close its run: the submitter marks it KILLED, never RUNNING for ever
        assert [r.info.status for r in killed] == ["KILLED"]
        made_before = srv.stats()["requests"]
        assert made_before >= 5

        # resume: the file is now right and the server is fast; only the unfinished cells run
        shutil.copy(TOY_RUN, later)
        srv.configure(latency_s=0.0)
        again = sweep(tmp_path, *cells, env=env)
        assert again.returncode == 0, explain(again)
        s = summary(tmp_path)
        assert [r["status"] for r in sorted(s["jobs"], key=lambda r: r["num"])] == [
            "skipped-done",
            "finished",
            "finished",
            "finished",
        ]
        finished = [r for r in runs(tmp_path) if r.info.status == "FINISHED"]
        assert len(finished) == 4
        resumed = [
            r for r in finished if r.data.tags["judge"] == "fake" and r.data.params["ranker.path"] == str(TOY_RUN)
        ]
        assert len(resumed) == 1 and resumed[0].data.metrics["calls_cached"] > 0  # the killed job's calls were kept


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return tiny_causal(tmp_path_factory.mktemp("tiny"))


@pytest.mark.slow
@pytest.mark.slurm
def test_a_two_by_two_grid_on_slurm_scores_each_ranking_once(slurm_cluster, tmp_path, tiny):
    """Rank once, judge many (jobs/test_rank_job.py), on SLURM: 2 judges x 2 model rankers, 4 array tasks, 2 at a time
    on the test node: the two cells of one ranker start together, one computes, the other waits under the
    ranking's lock and reads it back. Here, beside the other cluster tests, so that one xdist worker runs them
    in turn instead of two workers waiting for each other's cluster lock (~45 s of an idle core)."""
    cmd = [
        sys.executable,
        str(REPO / "run.py"),
        "-m",
        "hydra/launcher=slurm",
        "ranker=rg_smollm2,prp_smollm2",
        "judge=human,simulated",
        f"++ranker.model_spec.model={tiny}",
        f"++ranker.rerank_depth={DEPTH}",
        *SLURM_SMALL,
        "experiment_name=once",
        f"tracking_uri=sqlite:///{tmp_path}/mlflow.db",
        f"artifact_root={tmp_path}/artifacts",
        f"cache_dir={tmp_path}/cache",
        f"hydra.sweep.dir={tmp_path}/multirun",
        "progress=false",
    ]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, explain(done)
    client = MlflowClient(f"sqlite:///{tmp_path}/mlflow.db")
    cells = client.search_runs(
        [client.get_experiment_by_name("once").experiment_id], filter_string="tags.`judgebench.kind` = 'job'"
    )
    assert len(cells) == 4 and len({r.data.tags["slurm_job_id"] for r in cells}) == 4
    for ranker, kind in (("RG-SmolLM2", "rg"), ("PRP-SmolLM2", "prp")):
        mine = [r for r in cells if r.data.tags["ranker"] == ranker]
        assert sum(r.data.metrics["ranker_prompts_scored"] for r in mine) == expected_prompts(kind), ranker
        assert sorted(r.data.metrics["ranking_computed"] for r in mine) == [0, 1], ranker
        first, second = (run_artifact_bytes(client, r.info.run_id) for r in mine)
        assert first == second, ranker  # byte-identical run files under both judges


def test_a_long_cell_error_keeps_its_cause():
    """The sweep record's error: a cell's message names the cell first (long paths) and the cause last."""
    from judgebench.cli.sweep_records import short_error

    cell = "CellError: judgebench: error: cell #2 (ranker.path=/" + "d" * 400 + "/later.trec): file not found"
    short = short_error(cell)
    assert len(short) == 300 and short.startswith("CellError: judgebench: error: cell #2 (ranker.path=/ddd")
    assert short.endswith("d/later.trec): file not found") and " … " in short
    assert short_error("one line\nsecond line") == "one line" and short_error("a" * 300) == "a" * 300
