"""Each config file of a sweep parsed once, not once per cell (used by the covering sweeper).

Hydra composes every cell's config from scratch: it re-reads and re-parses each YAML file of the defaults tree
(about 20 of them here) for every cell, which is about a third of its per-cell composition time. The repository
below keeps what Hydra's own ConfigRepository.load_config returned, per search path and config path, for the
rest of the process, and hands each composition a deep copy, so that no composition can change what another
one reads. A config file edited while a sweep runs is therefore not re-read by its later cells: the whole grid
runs one version of the configs. Written against hydra-core 1.3.8's internal ConfigRepository.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from hydra._internal.config_repository import ConfigRepository
from hydra.plugins.config_source import ConfigResult


class MemoConfigRepository(ConfigRepository):
    """A ConfigRepository whose load_config results outlive one composition."""

    _memo: dict[tuple, ConfigResult | None]

    @classmethod
    def wrapping(cls, repository: ConfigRepository) -> MemoConfigRepository:
        memo = cls.__new__(cls)
        memo.__dict__.update(repository.__dict__)
        memo._memo = {}
        return memo

    def __deepcopy__(self, _: dict[int, Any]) -> MemoConfigRepository:
        # Hydra deep-copies the repository for each composition, then re-initializes its sources: the copy
        # gets its own source list and shares the memo
        clone = copy.copy(self)
        clone.sources = list(self.sources)
        return clone

    def load_config(self, config_path: str) -> ConfigResult | None:
        key = (tuple((s.provider, s.path) for s in self.sources), config_path)
        if key not in self._memo:
            self._memo[key] = super().load_config(config_path)
        found = self._memo[key]
        if found is None:
            return None
        return replace(
            found,
            config=copy.deepcopy(found.config),
            header=dict(found.header),
            defaults_list=copy.deepcopy(found.defaults_list),
        )
