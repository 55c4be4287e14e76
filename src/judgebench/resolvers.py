"""OmegaConf resolvers the configs use; registered when judgebench is imported (run.py, jobs, tests).

``${judge_stem:${judge.path}}`` names a file judge after its file, so that ``judge.path=a.txt,b.txt``
sweeps give columns ``a`` and ``b`` in every table and tag, without a ``judge.name`` per file.
"""

from __future__ import annotations

from pathlib import Path

from omegaconf import OmegaConf


def file_stem(path: str | None) -> str:
    """The judge name a file gets when none is given: its name without the last suffix."""
    if not path or path == "???":
        return "qrels-file"
    return Path(str(path)).stem


def trec_dl_file(relative: str) -> str:
    """``${trec_dl_file:reranker-runs/NAME.trec}``: a TREC DL file shipped with the package."""
    from judgebench.data.trec_dl import shipped_file

    return shipped_file(relative)


def register() -> None:
    OmegaConf.register_new_resolver("judge_stem", file_stem, replace=True)
    OmegaConf.register_new_resolver("trec_dl_file", trec_dl_file, replace=True)
