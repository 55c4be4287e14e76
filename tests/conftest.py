"""Shared pytest fixtures."""

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def trec_dl_dir() -> Path:
    """The real TREC DL data, laid out as ``shared/`` beside the repository (never copied into it).

    Missing data is a failure, not a skip: a silently skipped check is a check nobody ran.
    """
    path = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "trec-dl"
    if not path.is_dir():
        pytest.fail(f"TREC DL data directory not found at {path}; expected shared/data/trec-dl beside the repository")
    return path
