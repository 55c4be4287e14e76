"""Prompt templates as versioned data files (DESIGN.md 4: the UMBRELA prompt, word for word)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

PACKAGED = resources.files("judgebench") / "prompts"


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str
    fields: tuple[str, ...] = ("query", "passage")

    @property
    def version(self) -> str:
        """Name plus content hash: editing a template can never reuse answers cached for the old one."""
        return f"{self.name}@{hashlib.sha256(self.text.encode()).hexdigest()[:12]}"

    def render(self, **values: str) -> str:
        """Plain substitution, not str.format: passages may contain braces."""
        out = self.text
        for field in self.fields:
            out = out.replace("{" + field + "}", values[field])
        return out


def load_prompt(name_or_path: str, fields: tuple[str, ...] = ("query", "passage")) -> PromptTemplate:
    """A packaged template by name (e.g. umbrela_bing) or any text file by path."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".txt" and path.is_file():
        text, name = path.read_text(encoding="utf-8"), path.stem
    else:
        packaged = PACKAGED / f"{name_or_path}.txt"
        if not packaged.is_file():
            known = sorted(p.name[:-4] for p in PACKAGED.iterdir() if p.name.endswith(".txt"))
            raise ValueError(f"prompt {name_or_path!r}: neither a .txt file nor a packaged template ({', '.join(known)})")
        text, name = packaged.read_text(encoding="utf-8"), name_or_path
    missing = [f for f in fields if "{" + f + "}" not in text]
    if missing:
        raise ValueError(f"prompt {name_or_path!r} lacks the placeholder(s) {', '.join('{' + f + '}' for f in missing)}")
    return PromptTemplate(name, text, fields)
