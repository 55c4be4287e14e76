"""Resume sees file contents: a cell is skipped as done only when every input file is unchanged, not just its path.

What is hashed is what the components opened, resolved as they resolve it (identity/files_read.py): a qrels file judge's
``root``/``path``, the files a ``data_dir`` implies, a runfile ranker's run, a prompt template; for every job kind.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient
from omegaconf import OmegaConf

import cli_runner
from cli_runner import file_mode, write_dataset
from judgebench.identity import input_digests as digests_mod
from judgebench.identity.files_read import recording
from judgebench.identity.input_digests import JobInputs
from reference_impl import cohen_kappa

STORE: dict[str, Path] = {}


_warm = cli_runner.store_fixture(STORE)  # one warm MLflow store for the module, in STORE["dir"]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _runs(experiment: str, kind: str | None = None):
    client = MlflowClient(f"sqlite:///{STORE['dir']}/mlflow.db")
    exp = client.get_experiment_by_name(experiment)
    filt = f"tags.`judgebench.kind` = '{kind}'" if kind else "tags.`judgebench.kind` != 'judge_summary'"
    return client, (
        client.search_runs([exp.experiment_id], filt, order_by=["attributes.start_time ASC"]) if exp else []
    )


def _store_args(tmp: Path, experiment: str) -> list[str]:
    return [
        "progress=false",
        f"tracking_uri=sqlite:///{STORE['dir']}/mlflow.db",
        f"artifact_root={STORE['dir']}/artifacts",
        f"cache_dir={tmp}/cache",
        f"hydra.run.dir={tmp}/out",
        f"experiment_name={experiment}",
    ]


def _args(tmp: Path, files: dict[str, Path], experiment: str, *extra: str) -> list[str]:
    return [*file_mode(files), "judge=human", *_store_args(tmp, experiment), *extra]


def _same_size_edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text and len(old) == len(new)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _zero_labels(path: Path) -> None:
    """Every label of a qrels file set to 0, in place and at the same size (same size, so only contents tell)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("".join(line[:-1] + "0\n" for line in lines), encoding="utf-8")


def _logged_digests(client, run, tmp: Path) -> dict:
    return json.loads(
        Path(client.download_artifacts(run.info.run_id, "input_digests.json", str(tmp / run.info.run_id))).read_text()
    )


def _ok(res) -> None:
    assert res.rc == 0 and "Traceback" not in res.err, str(res)


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
        _ok(cli_runner.run(args, cwd=tmp_path))
    client, runs = _runs(experiment)
    assert len(runs) == 1
    first = runs[0]
    logged = _logged_digests(client, first, tmp_path / "dl1")
    target = files["qrels"] if edited == "qrels" else run
    key = "dataset/qrels.txt" if edited == "qrels" else "ranker/system.run"
    assert logged[key] == {"sha256": _sha(target), "path": str(target)}

    if edited == "qrels":  # a label changes, the file keeps its size
        line = next(x for x in target.read_text().splitlines() if x.endswith(" 0"))
        _same_size_edit(target, line + "\n", line[:-1] + "3\n")
    else:
        _same_size_edit(target, "d008 2 2.0", "d008 2 2.5")
    _ok(cli_runner.run(args, cwd=tmp_path))
    _, runs = _runs(experiment)
    assert len(runs) == 2 and runs[1].info.status == "FINISHED"
    assert runs[1].data.tags["judgebench.config_hash"] != first.data.tags["judgebench.config_hash"]
    again = _logged_digests(client, runs[1], tmp_path / "dl2")
    assert again[key]["sha256"] == _sha(target) != logged[key]["sha256"]
    if edited == "qrels":  # the rerun read the edited file: one 0 became a 3
        summary = [
            json.loads(
                Path(
                    client.download_artifacts(r.info.run_id, "dataset_summary.json", str(tmp_path / f"s{i}"))
                ).read_text()
            )
            for i, r in enumerate(runs)
        ]
        assert summary[1]["qrels_level_0"] == summary[0]["qrels_level_0"] - 1
        assert summary[1]["qrels_level_3"] == summary[0]["qrels_level_3"] + 1
    else:  # another run file is another ranking: computed, not read back under the old key
        assert runs[1].data.tags["judgebench.ranking_key"] != first.data.tags["judgebench.ranking_key"]
        assert runs[1].data.metrics["ranking_computed"] == 1


def test_a_qrels_judge_file_relative_to_judge_root_edited_in_place_reruns_the_cell(tmp_path):
    """judge.path is relative to judge.root, not to the working directory: its contents are in the key all the same."""
    files = write_dataset(tmp_path / "data")
    judges = tmp_path / "judges"
    judges.mkdir()
    labels = judges / "mine.txt"
    labels.write_text(files["qrels"].read_text(encoding="utf-8"), encoding="utf-8")  # the human labels: a perfect judge
    experiment = "digests_judge_root"
    args = [
        *file_mode(files),
        "ranker=oracle",
        "judge=qrels",
        f"judge.root={judges}",
        "judge.path=mine.txt",
        *_store_args(tmp_path, experiment),
    ]
    assert not (tmp_path / "mine.txt").exists()  # not a file as seen from the working directory
    for _ in range(2):
        _ok(cli_runner.run(args, cwd=tmp_path))
    client, runs = _runs(experiment)
    assert len(runs) == 1 and runs[0].data.metrics["ndcg10_judge"] == pytest.approx(1.0)

    _zero_labels(labels)  # every label 0: no document gains anything, nDCG@10 of every query is 0
    res = cli_runner.run(args, cwd=tmp_path)
    _ok(res)
    assert "has this config" not in res.err
    _, runs = _runs(experiment)
    assert len(runs) == 2 and runs[1].info.status == "FINISHED"
    assert runs[1].data.metrics["ndcg10_judge"] == 0.0
    logged = _logged_digests(client, runs[1], tmp_path / "dl")
    assert logged["judge/mine.txt"] == {"sha256": _sha(labels), "path": str(labels)}


def _llmjudge_dir(root: Path) -> tuple[Path, pd.DataFrame]:
    """An LLMJudge-shaped directory (queries, test qrels, one submission equal to the human labels)."""
    from judgebench.data.datasets import load_toy

    toy = load_toy()
    qrels = toy.qrels[toy.qrels["query_id"].isin(["q01", "q02", "q03", "q04"])].reset_index(drop=True)
    (root / "submissions").mkdir(parents=True)
    (root / "llm4eval_query_2024.txt").write_text(
        "".join(f"{q}\t{toy.queries[q]}\n" for q in sorted(set(qrels["query_id"]))), encoding="utf-8"
    )
    text = "".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.itertuples(index=False))
    (root / "llmjudge_test_qrel_idx.txt").write_text(text, encoding="utf-8")
    (root / "submissions" / "team-run1.txt").write_text(text, encoding="utf-8")
    return root, qrels


def test_labels_only_reruns_when_a_submission_or_the_human_labels_change_in_place(tmp_path):
    data, qrels = _llmjudge_dir(tmp_path / "llmjudge")
    submission, human = data / "submissions" / "team-run1.txt", data / "llmjudge_test_qrel_idx.txt"
    experiment = "digests_labels_only"
    args = [
        "job=labels_only",
        "dataset=llmjudge",
        f"dataset.data_dir={data}",
        "judge=qrels",
        f"judge.root={data}",
        "judge.path=submissions/team-run1.txt",
        *_store_args(tmp_path, experiment),
    ]
    for _ in range(2):
        _ok(cli_runner.run(args, cwd=tmp_path))
    client, runs = _runs(experiment, "labels")
    assert len(runs) == 1 and runs[0].data.metrics["kappa_graded"] == pytest.approx(1.0)
    logged = _logged_digests(client, runs[0], tmp_path / "dl0")
    assert logged == {
        "dataset/llm4eval_query_2024.txt": {
            "sha256": _sha(data / "llm4eval_query_2024.txt"),
            "path": str(data / "llm4eval_query_2024.txt"),
        },
        "dataset/llmjudge_test_qrel_idx.txt": {"sha256": _sha(human), "path": str(human)},
        "judge/team-run1.txt": {"sha256": _sha(submission), "path": str(submission)},
    }

    _zero_labels(submission)  # the submission zeroed: kappa of a constant judge against varied human labels is 0
    _ok(cli_runner.run(args, cwd=tmp_path))
    _, runs = _runs(experiment, "labels")
    assert len(runs) == 2
    assert (
        runs[1].data.metrics["kappa_graded"]
        == pytest.approx(cohen_kappa(list(qrels["relevance"]), [0] * len(qrels)), abs=1e-12)
        == 0.0
    )

    _zero_labels(human)  # now the humans agree with the zeroed submission (all 0: kappa is undefined, not 1.0 again)
    _ok(cli_runner.run(args, cwd=tmp_path))
    _, runs = _runs(experiment, "labels")
    assert len(runs) == 3 and runs[2].data.tags["judgebench.config_hash"] not in {
        r.data.tags["judgebench.config_hash"] for r in runs[:2]
    }
    assert runs[2].data.metrics["label_set_size"] == len(qrels)
    assert _logged_digests(client, runs[2], tmp_path / "dl2")["dataset/llmjudge_test_qrel_idx.txt"]["sha256"] == _sha(
        human
    )


def test_job_rank_recomputes_a_run_file_edited_in_place(tmp_path):
    files = write_dataset(tmp_path / "data")
    run = tmp_path / "runs" / "system.run"
    run.parent.mkdir()
    run.write_text("q01 Q0 d005 1 3.0 sys\nq01 Q0 d008 2 2.0 sys\nq01 Q0 d028 3 1.0 sys\n", encoding="utf-8")
    experiment = "digests_rank"
    args = [
        *file_mode(files),
        "job=rank",
        "ranker=runfile",
        "ranker.name=MySystem",
        f"ranker.path={run}",
        *_store_args(tmp_path, experiment),
    ]
    for _ in range(2):
        _ok(cli_runner.run(args, cwd=tmp_path))
    client, runs = _runs(experiment, "ranking")
    assert len(runs) == 1
    _same_size_edit(run, "d005 1 3.0 sys\nq01 Q0 d008 2", "d008 1 3.0 sys\nq01 Q0 d005 2")  # the first two swapped
    _ok(cli_runner.run(args, cwd=tmp_path))
    _, runs = _runs(experiment, "ranking")
    assert len(runs) == 2 and runs[0].data.tags["judgebench.ranking_key"] != runs[1].data.tags["judgebench.ranking_key"]
    text = Path(client.download_artifacts(runs[1].info.run_id, "run.trec", str(tmp_path / "dl"))).read_text()
    assert [line.split()[2] for line in text.splitlines()] == [
        "d008",
        "d005",
        "d028",
    ]  # the edited order, not the stored one
    assert _logged_digests(client, runs[1], tmp_path / "dl1")["ranker/system.run"]["sha256"] == _sha(run)


def test_components_report_the_files_they_read_resolved_as_they_resolve_them(tmp_path, monkeypatch):
    """Built through JobInputs: a prompt file and a qrels judge under its root (declared), the LLMJudge files a
    data_dir implies with its id maps (recorded by the readers); nothing else."""
    data, _ = _llmjudge_dir(tmp_path / "llmjudge")
    (data / "qid_to_qidx.txt").write_text("2040064 q01\n", encoding="utf-8")
    (data / "docid_to_docidx.txt").write_text("msmarco_1 d001\n", encoding="utf-8")
    prompt = tmp_path / "my_prompt.txt"
    prompt.write_text("Query: {query}\nPassage: {passage}\n##final score:", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    inputs = JobInputs()
    from judgebench.jobs.common import load_dataset

    dataset = load_dataset(
        OmegaConf.create(
            {
                "_target_": "judgebench.data.llmjudge.load_llmjudge",
                "name": "llmjudge",
                "data_dir": str(data),
                "split": "test",
                "qrels": None,
                "queries": None,
            }
        )
    )
    inputs.add("dataset", dataset.input_files)
    inputs.build(
        "judge",
        {
            "_target_": "judgebench.judges.qrels_file.QrelsFileJudge",
            "path": "submissions/team-run1.txt",
            "root": str(data),
        },
    )
    inputs.build(
        "local_judge",
        {
            "_target_": "judgebench.judges.transformers_judge.TransformersJudge",
            "name": "t",
            "family": "f",
            "model": "m",
            "model_spec": {"model": "unused"},
            "prompt": str(prompt),
            "cache_dir": str(tmp_path / "c"),
        },
    )
    names = {k: str(p) for k, p in inputs.named().items()}
    assert names == {
        "dataset/llm4eval_query_2024.txt": str(data / "llm4eval_query_2024.txt"),
        "dataset/llmjudge_test_qrel_idx.txt": str(data / "llmjudge_test_qrel_idx.txt"),
        "dataset/qid_to_qidx.txt": str(data / "qid_to_qidx.txt"),
        "dataset/docid_to_docidx.txt": str(data / "docid_to_docidx.txt"),
        "judge/team-run1.txt": str(data / "submissions" / "team-run1.txt"),
        "local_judge/my_prompt.txt": str(prompt),
    }
    digests = inputs.digests(tmp_path / "cache")
    assert digests == {k: _sha(Path(p)) for k, p in names.items()}
    with recording() as opened:  # a second load in this process comes from memory: the files it read are kept
        again = load_dataset(
            OmegaConf.create(
                {
                    "_target_": "judgebench.data.llmjudge.load_llmjudge",
                    "name": "llmjudge",
                    "data_dir": str(data),
                    "split": "test",
                    "qrels": None,
                    "queries": None,
                }
            )
        )
    assert again is dataset and opened == []
    _zero_labels(data / "llmjudge_test_qrel_idx.txt")  # ... until one of them changes: then it is read again
    with recording() as opened:
        changed = load_dataset(
            OmegaConf.create(
                {
                    "_target_": "judgebench.data.llmjudge.load_llmjudge",
                    "name": "llmjudge",
                    "data_dir": str(data),
                    "split": "test",
                    "qrels": None,
                    "queries": None,
                }
            )
        )
    assert (
        changed is not dataset
        and set(changed.qrels["relevance"]) == {0}
        and data / "llmjudge_test_qrel_idx.txt" in opened
    )


def test_digests_are_cached_by_size_and_mtime(tmp_path, monkeypatch):
    prompt, other = tmp_path / "my_prompt.txt", tmp_path / "gone.txt"
    prompt.write_text("Query: {query}\nPassage: {passage}\n##final score:", encoding="utf-8")
    hashed: list[str] = []
    real = digests_mod._sha256_file
    monkeypatch.setattr(digests_mod, "_sha256_file", lambda p: hashed.append(str(p)) or real(p))
    inputs = JobInputs()
    inputs.add("judge", [prompt, other])
    got = inputs.digests(tmp_path / "cache")
    assert got == {"judge/my_prompt.txt": _sha(prompt), "judge/gone.txt": digests_mod.MISSING}
    assert len(hashed) == 1 and (tmp_path / "cache" / digests_mod.CACHE_FILE).is_file()
    assert inputs.digests(tmp_path / "cache") == got and len(hashed) == 1  # unchanged files are not read again
    prompt.write_text("Q: {query}\nP: {passage}\n##final score:", encoding="utf-8")
    assert inputs.digests(tmp_path / "cache")["judge/my_prompt.txt"] == _sha(prompt) and len(hashed) == 2
