"""A component's own setting beside a sweep over components: applied to the cells whose component has it.

The rule (docs/running.md, "Settings in a sweep"): in a multirun, a plain override of a component's
setting (``judge.X=V``, ``ranker.X=V``, ``dataset.X=V``, ``perturbation.X=V``, ``rewriter.X=V``) applies to each
cell whose chosen component has the key ``X``, and is left out of the cells whose component lacks it (each such
component is named once in the log). When no cell's component has it, the sweep stops before any cell with one
line, exit 2, saying how to write it. ``+X=V`` / ``++X=V`` keep Hydra's meaning (add the key everywhere).

Why: Hydra applies a plain override to every cell, so ``judge=gemini_pro,human judge.backend.max_retries=2``
failed on ``human`` (no ``backend``) with Hydra's five-line struct error, and so did the documented GPU recipe
of the circularity grid (``ranker.model_spec.device=cuda`` beside BM25 and the oracles, which load no model).
Hydra also applies a non-sweep override to the sweep's own config, composed with the default components, before
any sweeper runs; so ``judgebench.cli.sweep_settings.defer`` (called by ``judgebench.cli.run.cli`` before Hydra starts)
takes these settings off the command line and the sweeper (:func:`applied`) adds each to the cells that have the key.
Written against hydra-core 1.3.8 (its override parser and BasicSweeper.split_arguments).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from omegaconf import DictConfig, OmegaConf

from judgebench.cli.sweep_settings import deferred, setting_key

log = logging.getLogger(__name__)


def has_key(config: DictConfig, key: str) -> bool:
    """Whether the dotted ``key`` exists in ``config``, a mandatory ``???`` value included (select() says no)."""
    node = config
    for part in key.split("."):
        if not isinstance(node, DictConfig) or part not in node.keys():
            return False
        node = node._get_node(part)
    return True


def null_parent(config: DictConfig, key: str) -> str | None:
    """The dotted prefix of ``key`` that exists in ``config`` with the value null (``dataset.local`` of irds), if any:
    the key is then not unknown, its parent is only empty."""
    node, path = config, []
    for part in key.split(".")[:-1]:
        if not isinstance(node, DictConfig) or part not in node.keys():
            return None
        path.append(part)
        node = node._get_node(part)
        if node._is_none():
            return ".".join(path)
    return None


def _choice(config: DictConfig, group: str) -> str:
    """The component a cell chose for ``group``, as the command line names it (``simulated``, ``gemini_pro``)."""
    return str(OmegaConf.select(config, f"hydra.runtime.choices.{group}", default=None) or "?")


def applied(chunks: list[list[list[str]]], compose: Callable[[list[str]], DictConfig]) -> list[list[list[str]]]:
    """The sweep's cells (in Hydra's chunks) with each component setting kept only in the cells whose component
    has its key. ``compose``: a cell's config from its overrides. Raises ValueError (one line) when no cell has it."""
    cells = [[*cell, *deferred()] for chunk in chunks for cell in chunk]
    keys = sorted({s[1] for cell in cells for s in map(setting_key, cell) if s})
    if not keys:
        return chunks
    has: dict[tuple, DictConfig] = {}

    def config_of(cell: list[str]) -> DictConfig:
        # what decides the components and their keys: the group choices (a value setting such as a seed sweep
        # does not), so a 1,000-cell grid composes one config per distinct choice, not per cell
        base = tuple(o for o in cell if "." not in o.partition("=")[0])
        if base not in has:
            has[base] = compose(list(base))
        return has[base]

    def holds(cell: list[str], key: str) -> bool:
        return has_key(config_of(cell), key)

    for key in keys:
        group = key.partition(".")[0]
        holding = [holds(cell, key) for cell in cells]

        def components(want: bool) -> list:
            return sorted({_choice(config_of(c), group) for c, h in zip(cells, holding) if h == want})

        if not any(holding):
            parent = null_parent(config_of(cells[0]), key)
            if parent:  # irds's dataset.local: a setting that exists, empty by default, is set whole
                raise ValueError(
                    f"{key}: {parent} is a setting of {group} {_choice(config_of(cells[0]), group)}, null by "
                    "default, so it has no "
                    f"key {key[len(parent) + 1 :]!r} yet; set it whole in one argument, e.g. "
                    f'"{parent}={{{key[len(parent) + 1 :]}: VALUE, ...}}"'
                )
            from judgebench.cli.override_errors import closest_setting

            near = closest_setting(
                key.partition(".")[2].rpartition(".")[2], OmegaConf.select(config_of(cells[0]), key.rpartition(".")[0])
            )
            meant = f"did you mean {key.rpartition('.')[0]}.{near}? else " if near else ""
            raise ValueError(
                f"{key}: no {group} of this sweep has that setting ({group} {', '.join(components(False))}); "
                f"{meant}check its "
                f"name in conf/{group}/, or write +{key}=... to add it to every cell"
            )
        if not all(holding):
            log.info(
                "%s applies to %s %s only; left out of %s (they have no such setting)",
                key,
                group,
                ", ".join(components(True)),
                ", ".join(components(False)),
            )
        cells = [c if h else [o for o in c if (setting_key(o) or ("", ""))[1] != key] for c, h in zip(cells, holding)]
    out, i = [], 0
    for chunk in chunks:
        out.append(cells[i : i + len(chunk)])
        i += len(chunk)
    return out
