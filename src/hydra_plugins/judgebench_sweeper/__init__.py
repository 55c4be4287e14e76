"""judgebench's sweeper (conf/hydra/sweeper/covering.yaml, the default): Hydra's basic sweeper, checking fewer configs.

Before launching anything, the basic sweeper composes the config of every cell once to catch a bad override early,
and the launcher then composes each again: on a grid of 1,000 cells that doubles Hydra's largest per-cell cost.
Here the check composes a covering subset instead: the first cell, and each later cell that brings an override
value no checked cell had (a 10-system x 100-seed grid checks about 100 configs, not 1,000). A composition error
that only a combination of already-checked values causes still stops the sweep, when the launcher reaches it.
Written against hydra-core 1.3.8: it overrides one method of its (internal) BasicSweeper and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig

from hydra_plugins.judgebench_sweeper import group_settings
from hydra_plugins.judgebench_sweeper.config_memo import MemoConfigRepository


def covering(batch: Sequence[Sequence[str]]) -> list[Sequence[str]]:
    """The cells of ``batch`` that each hold an override no earlier chosen cell held (in order)."""
    seen: set[str] = set()
    chosen = []
    for overrides in batch:
        if not seen.issuperset(overrides) or not chosen:
            chosen.append(overrides)
            seen.update(overrides)
    return chosen


class CoveringSweeper(BasicSweeper):
    def setup(self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig) -> None:
        loader = hydra_context.config_loader
        repository = getattr(loader, "repository", None)  # ConfigLoaderImpl's; the launcher composes through it
        if repository is not None and not isinstance(repository, MemoConfigRepository):
            loader.repository = MemoConfigRepository.wrapping(repository)
        super().setup(hydra_context=hydra_context, task_function=task_function, config=config)

    def split_arguments(self, overrides, max_batch_size):  # type: ignore[override]
        """Hydra's cells, each component setting kept where the cell's component has it (group_settings.py)."""
        from judgebench.errors import PREFIX, CellError

        chunks = BasicSweeper.split_arguments(overrides, max_batch_size)
        compose = lambda cell: self.hydra_context.config_loader.load_sweep_config(self.config, cell)  # noqa: E731
        try:
            cells = group_settings.applied(chunks, compose)
        except ValueError as e:
            raise CellError(PREFIX + str(e)) from None
        from judgebench.cli import hydra_callbacks

        hydra_callbacks.record_planned(
            [cell for batch in cells for cell in batch]
        )  # the summary names any never started
        return cells

    def validate_batch_is_legal(self, batch: Sequence[Sequence[str]]) -> None:
        chosen = covering(batch)
        super().validate_batch_is_legal(chosen)
        if not getattr(self, "_preflown", False):  # once per sweep, before the launcher starts any cell
            self._preflown = True
            from judgebench.cli import sweep_preflight

            loader = self.hydra_context.config_loader
            sweep_preflight.check(
                loader.load_sweep_config(master_config=self.config, sweep_overrides=list(o)) for o in chosen
            )
            from judgebench.cli import sweep_store

            sweep_store.open_sweep_store()  # the MLflow store and the parent run, only for a sweep that will run
