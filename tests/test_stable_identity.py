"""Component hashes, config hashes (the resume key) and sweep ids are what the code before the restructure of
issue 57 computed: ``tests/data/identity_before_restructure.json`` was written by that code (commit c779587) for
one cell per judge, ranker, perturbation, system, rewriter, dataset and experiment config shipped in
``src/judgebench/conf``, and this test recomputes every row with the code of today.

``tests/data/store_before_restructure.tar.gz`` is a real store that code wrote (the toy dataset, judges human and
simulated x rankers bm25 and oracle: 4 cells, artifacts beside the database, so relative); today's code resumes
it with 0 cells rerun.

Regenerate only when a hash is meant to change (it reruns finished cells of every store):
``python tests/test_stable_identity.py --write``.
"""

from __future__ import annotations

import json
import sys
import tarfile
from datetime import datetime
from pathlib import Path

import pytest
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.types import RunMode
from omegaconf import OmegaConf, open_dict

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "src" / "judgebench" / "conf"
FIXTURE = REPO / "tests" / "data" / "identity_before_restructure.json"
GROUPS = ("judge", "ranker", "perturbation", "system", "rewriter", "dataset", "experiment")
# Fixed where a cell would read its machine: the store, the cache, the environment's data folders.
FIXED = ("tracking_uri=sqlite:////store/mlflow.db", "artifact_root=/store/artifacts", "cache_dir=/cache")
FROZEN = datetime(2026, 12, 5, 10, 0, 0)
# What a config leaves to the command line (``???``), as a user would give it.
REQUIRED = {
    "judge=vllm": ("judge.backend.model=Qwen/Qwen2.5-7B-Instruct",),
    "judge=ollama": ("judge.backend.model=qwen2.5:7b",),
    "judge=transformers": ("judge.model_spec.model=HuggingFaceTB/SmolLM2-135M-Instruct",),
    "judge=qrels": ("judge.path=runs/my_labels.txt",),
    "ranker=rankgpt_gpt35": ("dataset=dl19",),
    "ranker=rankvicuna_7b": ("dataset=dl19",),
    "system=rankgpt_gpt35": ("dataset=dl19",),
    "system=rankvicuna_7b": ("dataset=dl19",),
    "experiment=dl2023_leaderboard": ("results.data_dir=/data/trec-dl-2023-leaderboard",),
    "experiment=llmjudge": ("judge.path=/data/llmjudge/submissions/run_a.txt",),
    "experiment=llmjudge_oracles": ("judge.path=/data/llmjudge/submissions/run_a.txt",),
    "ranker=runfile": ("ranker.name=my_run", "ranker.path=runs/my_run.trec"),
}


def _cells() -> list[tuple[str, ...]]:
    cells: list[tuple[str, ...]] = [()]
    for group in GROUPS:
        for p in sorted((CONF / group).glob("*.yaml")):
            plus = "+" if group in ("system", "experiment") else ""  # groups the defaults list leaves out
            cells.append((f"{plus}{group}={p.stem}", *REQUIRED.get(f"{group}={p.stem}", ())))
    cells += [("job=labels_only", "judge=simulated"), ("sweep_id=nightly-1", "judge=simulated", "ranker=oracle")]
    return cells


def _portable(node, root: str):
    """Paths inside the checkout (files shipped with the package) written relative to it: the fixture holds
    on any machine."""
    if isinstance(node, dict):
        return {k: _portable(v, root) for k, v in node.items()}
    if isinstance(node, list):
        return [_portable(v, root) for v in node]
    if isinstance(node, str) and root in node:
        return node.replace(root, "<repo>")
    return node


def identities(cells: list[tuple[str, ...]]) -> list[dict]:
    """The identity a job computes for the cell of each override list: its component hashes (as tagged), its resume
    key (with a fixed digest of its input files; the digests themselves are tested in test_input_digests.py) and
    its sweep id (a configured one, else the composed sweep folder under a frozen clock and token)."""
    from judgebench.config import resolvers
    from judgebench.jobs.cell import semantic_part
    from judgebench.jobs.common import config_hash, identity_tags, sweep_id
    from judgebench.jobs.labels_only import SEMANTIC as LABELS_SEMANTIC

    out = []
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
            resolvers.register()
            OmegaConf.register_new_resolver(
                "now", lambda pattern: FROZEN.strftime(pattern), use_cache=True, replace=True
            )
            OmegaConf.register_new_resolver("unique_token", lambda: "abc123", use_cache=True, replace=True)
            loader = GlobalHydra.instance().config_loader()
            for overrides in cells:
                master = loader.load_configuration(
                    config_name="config", overrides=[*FIXED, *overrides], run_mode=RunMode.MULTIRUN
                )
                sweep_dir = str(master.hydra.sweep.dir)
                with open_dict(master):
                    del master["hydra"]  # what a job's config holds (compose() drops it the same way)
                tree = _portable(OmegaConf.to_container(master, resolve=True), str(REPO))
                tags = identity_tags(tree)
                hashed = semantic_part(tree, LABELS_SEMANTIC) if tree.get("job") == "labels_only" else tree
                out.append(
                    {
                        "judge_hash": tags["judge_hash"],
                        "system_hash": tags["system_hash"],
                        "rewriter_hash": tags["rewriter_hash"],
                        "config_hash": config_hash(hashed, {"dataset/qrels.txt": "0" * 64}),
                        "sweep_id": sweep_id(tree.get("sweep_id") or sweep_dir),
                    }
                )
    finally:
        from hydra.core.utils import setup_globals

        setup_globals()  # Hydra's own ${now:} again
        resolvers.register()
    return out


def _rows() -> dict[str, dict]:
    cells = _cells()
    return {" ".join(cell) or "(defaults)": row for cell, row in zip(cells, identities(cells))}


@pytest.mark.slow  # 81 compositions: ~20 s on an idle core
def test_every_shipped_config_keeps_its_hashes_and_sweep_id():
    expected = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert len(expected) >= 80  # one row per shipped config: a fixture that lost its rows proves nothing
    cells = [tuple(cell.split()) if cell != "(defaults)" else () for cell in expected]
    got = dict(zip(expected, identities(cells)))
    changed = {cell: (expected[cell], got[cell]) for cell in expected if expected[cell] != got[cell]}
    assert not changed, changed
    # the rows tell the cells apart: a hash that ignored its config would be caught above only by chance
    assert len({r["judge_hash"] for r in expected.values()}) >= 15
    assert len({r["config_hash"] for r in expected.values()}) >= 60


STORE = REPO / "tests" / "data" / "store_before_restructure.tar.gz"
SWEEP = ["-m", "judge=human,simulated", "ranker=bm25,oracle", "progress=false", "experiment_name=before_restructure"]


def _cell_runs(db: Path) -> list[str]:
    from mlflow import MlflowClient

    client = MlflowClient(f"sqlite:///{db}")
    exp = client.get_experiment_by_name("before_restructure")
    runs = client.search_runs([exp.experiment_id], max_results=1000)
    return sorted(r.info.run_id for r in runs if "judgebench.config_hash" in r.data.tags)


@pytest.mark.slow  # a 4-cell sweep: ~15 s
def test_a_store_written_before_the_restructure_resumes_with_nothing_rerun(tmp_path):
    import cli_runner

    with tarfile.open(STORE) as tar:
        tar.extractall(tmp_path / "store", filter="data")
    db = tmp_path / "store" / "mlflow.db"
    before = _cell_runs(db)
    assert len(before) == 4
    cli_runner.warm()
    done = cli_runner.run(
        [
            *SWEEP,
            f"tracking_uri=sqlite:///{db}",
            f"artifact_root={tmp_path}/store/artifacts",
            f"cache_dir={tmp_path}/cache",
        ],
        cwd=tmp_path,
    )
    assert done.rc == 0, str(done)
    assert "4 cells - 0 ran, 4 skipped, 0 failed" in done.out + done.err, str(done)
    assert _cell_runs(db) == before  # no cell run added, none replaced


if __name__ == "__main__" and "--write" in sys.argv:
    FIXTURE.write_text(json.dumps(_rows(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE}")
