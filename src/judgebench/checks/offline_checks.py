"""What a dry run checks without the network, and what it lists as "not checked".

Why: a dry run is how a grid is priced before anyone has a key or a budget, so it must work with no key,
no network and no model download. The preflight (checks/preflight.py) asks each API backend's server about its
model, which needs both; a dry run skips that request. What can be known offline is still checked here:
a retired Gemini model id is refused (the same line as the preflight's, nothing sent), and a backend
whose key is not set, or whose server, key and model id are simply not asked, is listed once per process
as ``[dry run] not checked: ...`` so that the price is not mistaken for a green light. Prices come from the
config (``backend.price_input_per_mtok`` / ``price_output_per_mtok``), never from the provider.
"""

from __future__ import annotations

import os
from typing import Any

from judgebench.llm.remote.gemini_models import refuse_retired
from judgebench.secrets import mask_url

_NOTED: set[tuple[str, str, str]] = set()  # (kind, URL, model) listed in this process (a local multirun lists once)
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}  # a dry run reads models from disk only


def go_offline() -> None:
    """No model download in a dry run: the Hugging Face libraries read their caches only (work_estimate.py falls
    back to ~4 characters a token and ``model_spec.params_b`` for what is not on disk)."""
    os.environ.update(OFFLINE_ENV)


def not_checked(role: str, backend: Any) -> str:
    """The line for what a dry run leaves to the real run's preflight."""
    keys = " or ".join(backend.key_envs)
    key = (
        "no key needed"
        if not backend.key_envs
        else f"key {'set' if any(os.environ.get(k) for k in backend.key_envs) else 'NOT SET'} ({keys})"
    )
    return (
        f"[dry run] not checked: {role} {backend.backend} {backend.model} at {mask_url(backend.endpoint())} "
        f"({key}; the server, the key's validity and the model id are asked by the real run's preflight)"
    )


def note(backends: list[tuple[str, Any]]) -> None:
    """Check offline what can be (retired ids) and print each backend's "not checked" line once per process."""
    for role, backend in backends:
        refuse_retired(role, backend.backend, backend.model)
        ident = (backend.backend, backend.endpoint(), backend.model)
        if ident not in _NOTED:
            _NOTED.add(ident)
            print(not_checked(role, backend))
