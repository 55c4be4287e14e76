"""The identity rewriter: the original passages."""

from __future__ import annotations

from dataclasses import dataclass

from judgebench.identity.text_view import ORIGINAL


@dataclass
class NoRewriter:
    name: str = "none"

    @property
    def view(self) -> str:
        return ORIGINAL

    def rewrite(self, dataset) -> dict[str, str]:
        return dataset.corpus
