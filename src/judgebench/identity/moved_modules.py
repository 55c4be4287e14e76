"""The module paths a submitit pickle written before the restructure of the package names: the task function
(``judgebench.run.job``) and the sweep callback the launcher pickles with it
(``judgebench.hydra_callbacks.SweepCallback``). A SLURM job queued by the old code unpickles its entry point when it
starts, possibly after an upgrade; importing an old path gives today's module, so the job still runs.

Installed by ``judgebench/__init__.py`` at the end of ``sys.meta_path``: the normal finders look first, so a module
that exists is never shadowed, and nothing is imported until an old path is asked for.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

MOVED = {
    "judgebench.run": "judgebench.cli.run",
    "judgebench.hydra_callbacks": "judgebench.cli.hydra_callbacks",
}


class MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path of MOVED and loads it as the module it is today (the same module object)."""

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec):
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module) -> None:  # today's module is already executed
        return None


def install() -> None:
    """Once per interpreter."""
    if not any(isinstance(f, MovedModules) for f in sys.meta_path):
        sys.meta_path.append(MovedModules())
