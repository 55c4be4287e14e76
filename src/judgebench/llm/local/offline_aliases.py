"""The aliases a config may name for an offline model (``model_spec.model: smollm2`` or ``gemma3``), each an
:class:`~judgebench.llm.local.offline_models.OfflineModel` defined beside the package that ships its GGUF file."""

from __future__ import annotations

from judgebench.llm.local.gemma3 import GEMMA3
from judgebench.llm.local.offline_models import OfflineModel
from judgebench.llm.local.smollm2 import SMOLLM2


def offline_models() -> dict[str, OfflineModel]:
    """Every alias a config may name, by alias."""
    return {m.alias: m for m in (SMOLLM2, GEMMA3)}


def offline_model(name: str) -> OfflineModel | None:
    """The offline model an alias names, None for any other model name."""
    return offline_models().get(str(name))
