"""The input files a config names, checked before the heavy imports, the MLflow store and any ranking.

Why: a missing run file, or malformed qrels handed to ``judge=qrels``, was found only when the cell reached
the component that reads it: after importing the job's modules (mlflow, sklearn, ...), opening the MLflow
store and ranking, 20-40 s on a busy machine, and after a RUNNING run had been created (left FAILED). A
config typo takes about a second; so should a bad file. cli/run.py calls :func:`check_config_files` first thing
in a job, and the sweep's preflight (cli/sweep_preflight.py) once per distinct set of files.

What is read: ``ranker.path`` of a run-file ranker (by data/trec.py's run reader, the same one the ranker
uses, so a line the ranker would refuse is refused here with the same message), ``judge.path`` of a qrels
judge (the judge's reader, with its out_of_range and duplicates settings and its declared label scale), and a TREC
DL dataset's own
``qrels=`` file; the other files a dataset names (topics, pool, passages, data_dir) must exist. Files over
:data:`PARSE_LIMIT` bytes are only checked to exist: the component reads them once, later.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from judgebench.exceptions import DataError

PARSE_LIMIT = 50_000_000  # bytes: larger files are only checked to exist (the component parses them)
DATASET_FILES = ("qrels", "topics", "pool", "passages", "queries", "data_dir")


def _target(node) -> str:
    return str(OmegaConf.select(node, "_target_", default="") or "") if node is not None else ""


def _value(node, key: str):
    try:
        return OmegaConf.select(node, key, default=None)
    except Exception:  # an interpolation that cannot resolve here: the component reports it
        return None


def existing(path: Path, setting: str) -> Path:
    """``path`` when it exists; a DataError naming the setting otherwise."""
    if not path.exists():
        raise DataError(path, f"file not found ({setting})")
    return path


def _small_file(path: Path, setting: str) -> bool:
    existing(path, setting)
    if path.is_dir():
        raise DataError(path, f"is a directory; {setting} names a file")
    return path.stat().st_size <= PARSE_LIMIT


def check_config_files(cfg: DictConfig) -> None:
    """Raise the first DataError among the files ``cfg`` names (see the module docstring)."""
    ranker, judge, dataset = cfg.get("ranker"), cfg.get("judge"), cfg.get("dataset")
    if _target(ranker).endswith("RunFileRanker") and isinstance(_value(ranker, "path"), str):
        path = Path(_value(ranker, "path")).expanduser()
        if _small_file(path, "ranker.path"):
            from judgebench.data.trec import read_run

            read_run(path, order_by=_value(ranker, "order_by"))
    # judge.path=human names the dataset's own human qrels (judges/qrels_file.py): no file to read
    if (
        _target(judge).endswith("QrelsFileJudge")
        and isinstance(_value(judge, "path"), str)
        and _value(judge, "path") != "human"
    ):
        path = Path(_value(judge, "path")).expanduser()
        root = _value(judge, "root")
        path = path if path.is_absolute() or not root else Path(str(root)).expanduser() / path
        if _small_file(path, "judge.path"):
            from judgebench import label_scale
            from judgebench.data.trec import read_judge_qrels

            scale = label_scale.parse(_value(judge, "scale"))  # the labels the judge declares (judges/qrels_file.py)
            read_judge_qrels(
                path,
                out_of_range=str(_value(judge, "out_of_range") or "error"),
                duplicates=str(_value(judge, "duplicates") or "error"),
                max_label=max(scale.labels),
                hint=label_scale.out_of_scale_hint(scale),
            )
    if dataset is None:
        return
    for key in DATASET_FILES:
        value = _value(dataset, key) if key in dataset else None
        if isinstance(value, str) and value:
            path = existing(Path(value).expanduser(), f"dataset.{key}")
            if key == "qrels" and _target(dataset).endswith("load_trec_dl") and _small_file(path, "dataset.qrels"):
                from judgebench.data.trec import read_qrels

                read_qrels(path)
