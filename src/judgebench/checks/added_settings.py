"""A setting added with ``+`` that its component does not take (``+judge.temprature=0``), refused before any work.

Hydra adds any key given with ``+`` (its own hint for a key a config lacks), and the component's constructor
meets it only when the job instantiates it, after the dataset, the pool and the ranking: a typo cost seconds to
minutes before its one line. Here each added key is looked up, before any work, in the signature of the
component it lands in (the nearest node with a ``_target_``: ``judge``, ``judge.backend``, ...), and a key that
is no parameter of it is one line with the closest parameter (difflib). A component that takes ``**kwargs``, a
target that cannot be imported here, or a key outside any component is left to the job, as before.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from omegaconf import DictConfig


def _component(cfg: DictConfig, parts: list[str]) -> tuple[str, DictConfig, str] | None:
    """(its path, the node with a ``_target_`` nearest to the key, the key's name in it), None outside any."""
    node, found = cfg, None
    for i, part in enumerate(parts[:-1]):
        node = node.get(part) if isinstance(node, DictConfig) else None
        if not isinstance(node, DictConfig):
            break
        if "_target_" in node:
            found = (".".join(parts[: i + 1]), node, parts[i + 1])
    return found


def _parameters(target: str) -> list[str] | None:
    """The keyword parameters of a component's class or function, a class's ``**kw`` followed up its bases' own
    (``OpenAIBackend(model, *, ..., **kw)`` passes them to ``APIBackend``); None when it takes any key or
    cannot be found."""
    from hydra._internal.utils import _locate  # what instantiate calls: a class or a function

    try:
        found = _locate(target)
        inits = (
            [k.__init__ for k in found.__mro__ if "__init__" in vars(k) and k is not object]
            if inspect.isclass(found)
            else [found]
        )
        names: list[str] = []
        for init in inits:
            params = list(inspect.signature(init).parameters.values())
            names += [
                p.name
                for p in params
                if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
                and p.name != "self"
                and not p.name.startswith("_")
            ]
            if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
                return sorted(set(names))
    except Exception:  # not importable here, or no signature: the job reports it
        return None
    return None  # **kwargs all the way up: it takes any key


def unknown_added(cfg: DictConfig, overrides: Sequence[str]) -> str | None:
    """The message for the first ``+key=value`` override whose key its component does not take, else None."""
    from judgebench.errors import did_you_mean

    for override in overrides:
        if not override.startswith("+"):
            continue
        key = override.lstrip("+").partition("=")[0]
        parts = key.split(".")
        if len(parts) < 2 or parts[0] == "hydra" or "/" in key or "@" in key:
            continue
        found = _component(cfg, parts)
        if found is None:
            continue
        path, node, name = found
        params = _parameters(str(node.get("_target_")))
        if params is None or name in params:
            continue
        label = f"{path} ({node.get('name')})" if node.get("name") else path
        meant = did_you_mean(name, params)
        meant = (
            meant.replace("did you mean ", f"did you mean {path}.")
            if meant
            else f"; its settings: {', '.join(sorted(params))}"
        )
        return f"{override}: {label} takes no setting {name!r}{meant}"
    return None


def refuse_unknown_added(cfg: DictConfig) -> None:
    """Raise ConfigError for an added setting no component takes; the overrides are the running job's (Hydra's)."""
    from judgebench.exceptions import ConfigError

    try:
        from hydra.core.hydra_config import HydraConfig

        overrides = list(HydraConfig.get().overrides.task)
    except Exception:  # no Hydra context (a library call): nothing was added on a command line
        return
    message = unknown_added(cfg, overrides)
    if message:
        raise ConfigError(message)
