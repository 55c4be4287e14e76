"""OmegaConf resolvers the configs use; registered when judgebench is imported (cli/run.py, jobs, tests).

``${judge_stem:${judge.path}}`` names a file judge after its file, so that ``judge.path=a.txt,b.txt``
sweeps give columns ``a`` and ``b`` in every table and tag, without a ``judge.name`` per file.

``${model_memory_gb:32}`` (``conf/hydra/launcher/slurm_gpu.yaml``'s ``mem_gb``): the host memory a cell's local
models need, resolved against each cell's own config by the launcher (one job array per distinct value).

``${by_name:NAME,TABLE}``: the entry of a name in a table of the config (an experiment's ranker families by ranker
name).

``${unique_token:}`` (``conf/config.yaml``'s ``hydra.run.dir`` and ``hydra.sweep.dir``): a short random token that
makes two runs or sweeps started in the same second two folders and two sweep ids (the id is the folder). It is
cached like Hydra's ``${now:}``: once per composed config, and Hydra copies the sweep config's resolver cache into
every cell's, so all cells of one sweep share it.
"""

from __future__ import annotations

import math
import secrets
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


MODEL_PARTS = ("ranker", "judge", "rewriter")


def model_memory_gb(default: float, *, _root_) -> int:
    """The largest ``model_spec.memory_gb`` of the cell's ranker, judge and rewriter; ``default`` when none has one."""
    values = []
    for part in MODEL_PARTS:
        value = OmegaConf.select(_root_, f"{part}.model_spec.memory_gb", default=None)
        if value is not None:
            values.append(float(value))
    return int(math.ceil(max(values) if values else float(default)))


def by_name(name: str, table) -> str:
    """``${by_name:${ranker.name},${ranker_families}}``: an experiment's value for a component, looked up by its name
    (the families of +experiment=dl_llm_judges's rankers, declared once for every system of its sweep)."""
    if name not in table:
        from judgebench.exceptions import ConfigError

        raise ConfigError(f"{name!r} is not in the table {dict(table)}: add it to the experiment's config")
    return table[name]


def unique_token() -> str:
    return secrets.token_hex(3)


def register() -> None:
    OmegaConf.register_new_resolver("unique_token", unique_token, use_cache=True, replace=True)
    OmegaConf.register_new_resolver("judge_stem", file_stem, replace=True)
    OmegaConf.register_new_resolver("trec_dl_file", trec_dl_file, replace=True)
    OmegaConf.register_new_resolver("model_memory_gb", model_memory_gb, replace=True)
    OmegaConf.register_new_resolver("by_name", by_name, replace=True)
