"""The identity rewriter: the original passages."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class NoRewriter:
    name: str = "none"

    @property
    def view(self) -> str:
        return "original"

    def rewrite(self, dataset) -> dict[str, str]:
        return dataset.corpus
