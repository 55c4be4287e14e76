"""What lives outside the repository (../shared/data beside the checkout) or outside the base install: a test that
needs it skips with a reason naming how to provide it, and fails under CI (``CI`` set), because a check nobody ran
must not look like a check that passed."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def need_shared(relative: str, what: str) -> Path:
    """``../shared/<relative>``, or a skip (a failure under CI) naming how to provide it."""
    path = SHARED / relative
    if path.exists():
        return path
    message = (
        f"{what} not found at {path}: these are not part of the repository; put the project's shared data beside "
        f"the checkout (../shared/{relative}) to run this test"
    )
    if os.environ.get("CI"):
        pytest.fail(message + " (CI must run it)")
    pytest.skip(message)


def need_module(module: str, how: str):
    """``import module``, or a skip naming how to install it; under CI a failure, since a test nobody ran must not
    look like one that passed. Usable at module level (the skip then covers the whole file)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        message = f"{module} is not importable ({e}): {how}"
        if os.environ.get("CI"):
            pytest.fail(message + " (CI must run this test)", pytrace=False)
        pytest.skip(message, allow_module_level=True)
