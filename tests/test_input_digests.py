"""Resume sees file contents: a cell is skipped as done only when every input file is unchanged, not just its path."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

import cli_runner
from cli_runner import file_mode, write_dataset
from judgebench import input_digests as digests_mod

STORE: dict[str, Path] = {}


_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _runs(experiment: str):
    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    return client, (client.search_runs([exp.experiment_id], "tags.`judgebench.kind` != 'judge_summary'",
                                       order_by=["attributes.start_time ASC"]) if exp else [])


def _args(tmp: Path, files: dict[str, Path], experiment: str, *extra: str) -> list[str]:
    return [*file_mode(files), "judge=human", "progress=false", f"tracking_uri=sqlite:///{STORE['dir']}/mlflow.db",
            f"artifact_root={STORE['dir']}/artifacts", f"cache_dir={tmp}/cache", f"hydra.run.dir={tmp}/out",
            f"experiment_name={experiment}", *extra]


def _same_size_edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text and len(old) == len(new)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.mark.parametrize("edited", ["qrels", "runfile"])
def test_editing_an_input_file_in_place_reruns_the_cell(tmp_path, edited):
    files = write_dataset(tmp_path / "data")
    extra = []
    if edited == "runfile":
        run = tmp_path / "system.run"
        run.write_text("q01 Q0 d005 1 3.0 sys\nq01 Q0 d008 2 2.0 sys\nq01 Q0 d028 3 1.0 sys\n", encoding="utf-8")
        extra = ["ranker=runfile", "ranker.name=MySystem", f"ranker.path={run}"]
    else:
        extra = ["ranker=oracle"]
    experiment = f"digests_{edited}"
    args = _args(tmp_path, files, experiment, *extra)
    for _ in range(2):  # the second run finds the first: skipped
        res = cli_runner.run(args, cwd=tmp_path)
        assert res.rc == 0, str(res)
    client, runs = _runs(experiment)
    assert len(runs) == 1
    first = runs[0]
    logged = json.loads(Path(client.download_artifacts(first.info.run_id, "input_digests.json", str(tmp_path / "dl1"))).read_text())
    target = files["qrels"] if edited == "qrels" else run
    key = "dataset.qrels" if edited == "qrels" else "ranker.path"
    assert logged[key] == _sha(target)

    if edited == "qrels":  # a label changes, the file keeps its size
        line = next(x for x in target.read_text().splitlines() if x.endswith(" 0"))
        _same_size_edit(target, line + "\n", line[:-1] + "3\n")
    else:
        _same_size_edit(target, "d008 2 2.0", "d008 2 2.5")
    res = cli_runner.run(args, cwd=tmp_path)
    assert res.rc == 0, str(res)
    _, runs = _runs(experiment)
    assert len(runs) == 2 and runs[1].info.status == "FINISHED"
    assert runs[1].data.tags["judgebench.config_hash"] != first.data.tags["judgebench.config_hash"]
    again = json.loads(Path(client.download_artifacts(runs[1].info.run_id, "input_digests.json", str(tmp_path / "dl2"))).read_text())
    assert again[key] == _sha(target) != logged[key]
    if edited == "qrels":  # the rerun read the edited file: one 0 became a 3
        summary = [json.loads(Path(client.download_artifacts(r.info.run_id, "dataset_summary.json", str(tmp_path / f"s{i}"))).read_text())
                   for i, r in enumerate(runs)]
        assert summary[1]["qrels_level_0"] == summary[0]["qrels_level_0"] - 1
        assert summary[1]["qrels_level_3"] == summary[0]["qrels_level_3"] + 1


def test_digests_cover_path_valued_entries_and_are_cached_by_size_and_mtime(tmp_path, monkeypatch):
    prompt = tmp_path / "my_prompt.txt"
    prompt.write_text("Query: {query}\nPassage: {passage}\n##final score:", encoding="utf-8")
    data = tmp_path / "dl"
    (data / "passages").mkdir(parents=True)
    for name in ("qrels.dl19-passage.txt", "topics.dl19-passage.txt", "bm25.dl19.top100.trec", "passages/bm25.dl19.top100.passages.json"):
        (data / name).write_text(name, encoding="utf-8")
    cfg = OmegaConf.create({
        "cache_dir": str(tmp_path / "cache"), "experiment_name": "x",
        "dataset": {"_target_": "judgebench.data.trec_dl.load_trec_dl", "year": 2019, "data_dir": str(data), "qrels": None,
                    "topics": None, "pool": None, "passages": None},
        "judge": {"prompt": str(prompt), "name": "not-a-file"},
    })
    hashed: list[str] = []
    real = digests_mod._sha256_file
    monkeypatch.setattr(digests_mod, "_sha256_file", lambda p: hashed.append(str(p)) or real(p))
    got = digests_mod.input_digests(cfg)
    assert got["judge.prompt"] == _sha(prompt)
    assert got["dataset.qrels"] == _sha(data / "qrels.dl19-passage.txt")
    assert got["dataset.passages"] == _sha(data / "passages/bm25.dl19.top100.passages.json")
    assert set(got) == {"judge.prompt", "dataset.qrels", "dataset.topics", "dataset.pool", "dataset.passages"}
    assert len(hashed) == 5 and (tmp_path / "cache" / digests_mod.CACHE_FILE).is_file()
    assert digests_mod.input_digests(cfg) == got and len(hashed) == 5  # unchanged files are not read again
    prompt.write_text("Q: {query}\nP: {passage}\n##final score:", encoding="utf-8")
    assert digests_mod.input_digests(cfg)["judge.prompt"] == _sha(prompt) and len(hashed) == 6
