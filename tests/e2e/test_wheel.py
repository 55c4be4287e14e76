"""A wheel install works from an empty directory: the wheel carries the config groups and the toy data.

The wheel is built from a copy of the sources (the build writes build/ and *.egg-info beside them), installed
into a fresh virtual environment that sees this interpreter's dependencies but not the editable checkout, and
its console scripts run one grid cell and the compare report from an empty directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

import judgebench.tracking  # noqa: F401  (registers the reader of the store's relative artifact locations)
from judgebench.data.datasets import load_toy
from judgebench.data.trec import read_qrels, read_run
from reference_impl import frame_rows, ndcg10_judged

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "src" / "judgebench"


def _sh(
    cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"$ {' '.join(map(str, cmd))}\nrc={done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def _clean_env(venv: Path) -> dict[str, str]:
    """No PYTHONPATH (it would put a checkout's src first), no judgebench / MLflow / Hydra settings of the caller."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV", "HYDRA_FULL_ERROR") and not k.startswith(("JUDGEBENCH_", "MLFLOW_"))
    }
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _traces_in_repo(marker: str) -> list[str]:
    """What a run or compare named ``marker`` left in the checkout's own output folders. Looked up by the marker, not
    by comparing the folders before and after: a user working in the checkout meanwhile writes there too."""
    import sqlite3

    found = [
        str(p.relative_to(REPO))
        for name in ("outputs", "multirun")
        if (REPO / name).exists()
        for p in (REPO / name).rglob("*.yaml")
        if marker in p.read_text(encoding="utf-8", errors="replace")
    ]
    found += [f"compare-out/{marker}"] if (REPO / "compare-out" / marker).exists() else []
    db = REPO / "mlruns" / "mlflow.db"
    if db.is_file():
        with sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=5) as con:
            if con.execute("SELECT count(*) FROM experiments WHERE name = ?", (marker,)).fetchone()[0]:
                found.append(f"mlruns/mlflow.db: experiment {marker}")
    return found


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("wheel-src")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    os.symlink("src/judgebench/conf", src / "conf")  # the clone's layout: conf/ at the root is a link into the package
    dist = tmp_path_factory.mktemp("dist")
    _sh(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            dist,
            src,
        ],
        cwd=dist,
    )
    (built,) = dist.glob("judgebench-*.whl")
    return built


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    """A fresh venv of the base interpreter; a .pth line lends it this interpreter's site-packages (the
    dependencies) without running their .pth files, so the editable judgebench install stays out. It sits
    in a git repository of its own (a user's project with its .venv), whose commit is not judgebench's."""
    project = tmp_path_factory.mktemp("project")
    (project / ".gitignore").write_text(".venv/\n", encoding="utf-8")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-C", project]
    _sh([*git, "init", "-q"], cwd=project)
    _sh([*git, "add", ".gitignore"], cwd=project)
    _sh([*git, "commit", "-q", "-m", "a project that uses judgebench"], cwd=project)
    root = project / ".venv"
    base = Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    _sh([base, "-m", "venv", "--without-pip", root], cwd=project)
    (site,) = (root / "lib").glob("python3*/site-packages")
    deps = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
    (site / "judgebench_deps.pth").write_text("".join(f"{p}\n" for p in deps), encoding="utf-8")
    _sh(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            root / "bin" / "python",
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            wheel,
        ],
        cwd=root,
    )
    return root


def test_the_wheel_carries_the_config_groups_and_the_data(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("conf", "data/toy", "data/trec_dl_files", "prompts"):
        on_disk = {
            f"judgebench/{p.relative_to(PACKAGE).as_posix()}"
            for p in (PACKAGE / folder).rglob("*")
            if p.is_file() and "__pycache__" not in p.parts
        }
        assert on_disk and on_disk <= names, (folder, sorted(on_disk - names)[:5])
    assert "judgebench/conf/config.yaml" in names and "judgebench/conf/judge/simulated.yaml" in names
    assert not any(n == "conf" or n.startswith("conf/") for n in names)  # the root link is not packed
    assert "hydra_plugins/judgebench_launcher/__init__.py" in names


@pytest.mark.slow  # ~12 s: a grid and its compare run by the installed wheel's commands
def test_judgebench_run_and_compare_from_an_empty_directory(venv, tmp_path):
    env = _clean_env(venv)
    where = _sh(
        [
            venv / "bin" / "python",
            "-c",
            "import judgebench, judgebench.config.config_dir as r; print(judgebench.__file__); print(r.CONF_DIR)",
        ],
        cwd=tmp_path,
        env=env,
    ).stdout.split()
    site = next((venv / "lib").glob("python3*/site-packages"))
    assert Path(where[0]) == site / "judgebench" / "__init__.py"  # the installed wheel, not the checkout
    assert Path(where[1]) == site / "judgebench" / "conf"

    work = tmp_path / "empty"
    work.mkdir()
    marker = f"wheel_{os.getpid()}_{tmp_path.name}"  # this test's experiment: its traces are found by name
    usage = subprocess.run(
        [venv / "bin" / "judgebench", "--help"], cwd=work, env=env, capture_output=True, text=True, timeout=60
    )
    assert usage.returncode == 0 and "\n  run " in usage.stdout, usage.stdout
    _sh(
        [
            venv / "bin" / "judgebench",
            "run",
            "dataset=toy",
            "judge=simulated",
            "ranker=oracle",
            "perturbation=perfect",
            "progress=false",
            f"experiment_name={marker}",
        ],
        cwd=work,
        env=env,
    )
    report = _sh(
        [venv / "bin" / "judgebench-compare", f"experiment={marker}", "format=csv", "bootstrap=0"], cwd=work, env=env
    ).stdout

    # outputs landed in the empty directory, none in the checkout
    assert (work / "mlruns" / "mlflow.db").is_file() and (work / ".cache" / "judgebench").is_dir()
    assert any((work / "outputs").rglob(".hydra/config.yaml"))
    assert _traces_in_repo(marker) == []

    client = MlflowClient(f"sqlite:///{work}/mlruns/mlflow.db")
    exp = client.get_experiment_by_name(marker)
    (run,) = client.search_runs([exp.experiment_id], "tags.`judgebench.kind` = 'job'")
    assert run.info.status == "FINISHED" and run.data.tags["system"] == "Perfect" and run.data.tags["dataset"] == "toy"
    assert run.data.tags["git_commit"] == "unknown"  # not the commit of the project the venv sits in
    assert any(
        (work / "mlruns" / "artifacts").rglob("run.trec")
    )  # the artifact root defaults to the working directory too
    # the oracle ranks by the human labels, so under them it is ideal; the judge's nDCG is recomputed by hand
    # from the logged ranking and the judge's logged labels
    assert run.data.metrics["ndcg10_human"] == pytest.approx(1.0, abs=1e-12)
    logged_run = read_run(Path(client.download_artifacts(run.info.run_id, "run.trec", str(tmp_path))))
    judge_qrels = read_qrels(Path(client.download_artifacts(run.info.run_id, "judge_qrels.txt", str(tmp_path))))
    expected = ndcg10_judged(
        frame_rows(logged_run, "query_id", "doc_id", "rank"),
        frame_rows(judge_qrels, "query_id", "doc_id", "relevance"),
        load_toy().judged_queries(),
    )
    judge_ndcg = sum(expected.values()) / len(expected)
    assert run.data.metrics["ndcg10_judge"] == pytest.approx(judge_ndcg, abs=1e-12)
    assert 0.5 < judge_ndcg < 0.99  # the simulated judge is biased: not the human ranking's 1.0

    import pandas as pd

    table1 = pd.read_csv(work / "compare-out" / marker / "table1_toy.csv", index_col="system")
    assert table1.loc["Perfect", "simulated"] == pytest.approx(judge_ndcg, abs=1e-9)
    assert table1.loc["Perfect", "human"] == pytest.approx(1.0, abs=1e-9)
    assert "1 job runs" in report
