"""The local models a process holds: at most ``capacity`` (default 1), the least recently used released first.

Why: the cells of a local multirun run one after another in one process; with every model kept, PRP-UL2 then
RankT5-3B then FLAN-T5-XXL pile up on the GPU until one does not fit. A cell's ranker and judge that name the
same weights (same model, kind, device and dtype) share one copy. Releasing drops the registry's reference,
clears the key/value caches of the prefixes memoised for it, runs the garbage collector and returns the freed
blocks to the driver (``torch.cuda.empty_cache``); a :class:`~judgebench.llm.local.transformers_model.TransformersModel`
whose weights were released loads them again the next time it scores.

``JUDGEBENCH_MAX_LOADED_MODELS=N`` keeps N models (several small models on a large GPU or CPU machine).
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)
CAPACITY_ENV = "JUDGEBENCH_MAX_LOADED_MODELS"


@dataclass(eq=False)
class LoadedModel:
    """One set of weights in memory; ``net`` is None once released."""

    key: tuple
    tokenizer: Any
    net: Any
    users: weakref.WeakSet = field(default_factory=weakref.WeakSet)

    @property
    def released(self) -> bool:
        return self.net is None

    def release(self) -> None:
        for user in list(self.users):  # prefix key/value caches hold GPU tensors of these weights
            user.__dict__.pop("_prefix_memo", None)
        self.net = None


def _capacity() -> int:
    try:
        return max(1, int(os.environ.get(CAPACITY_ENV, "1")))
    except ValueError:
        return 1


def free_accelerator_memory() -> None:
    """Collect released tensors and hand the cached CUDA blocks back (another process or model can use them)."""
    gc.collect()
    try:
        import torch
    except ImportError:  # no torch, no model was ever loaded
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


class ModelRegistry:
    def __init__(self, capacity: int | None = None) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[tuple, LoadedModel] = OrderedDict()
        self._lock = threading.RLock()

    def __len__(self) -> int:
        return len(self._entries)

    def keys(self) -> list[tuple]:
        return list(self._entries)

    def acquire(self, key: tuple, load: Callable[[], tuple[Any, Any]], user: Any = None) -> LoadedModel:
        """The loaded weights for ``key``, loading them (after releasing the least recently used) when absent."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                limit = self.capacity or _capacity()
                if len(self._entries) >= limit:
                    while len(self._entries) >= limit:
                        old_key, old = self._entries.popitem(last=False)
                        log.info(
                            "releasing local model %s (%s, %s on %s) to load %s",
                            old_key[0],
                            old_key[2],
                            old_key[4],
                            old_key[3],
                            key[0],
                        )
                        old.release()
                    del old
                    free_accelerator_memory()
                tokenizer, net = load()
                entry = LoadedModel(key, tokenizer, net)
                self._entries[key] = entry
            self._entries.move_to_end(key)
            if user is not None:
                entry.users.add(user)
            return entry

    def release_all(self) -> None:
        with self._lock:
            for entry in self._entries.values():
                entry.release()
            self._entries.clear()
        free_accelerator_memory()


REGISTRY = ModelRegistry()
