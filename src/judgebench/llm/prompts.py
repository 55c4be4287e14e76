"""Prompt templates as versioned data files, and the one renderer every prompt goes through.

API judges, local judges, RG / RankT5 / PRP rankers and rewriters all fill their templates with
:func:`fill`: plain substitution of ``{field}``, never ``str.format``, so a template or a passage may
hold any other braces (JSON examples, code) without breaking one path and not another.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from judgebench.exceptions import ConfigError
from judgebench.identity.files_read import opened

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
        return fill(self.text, {f: values[f] for f in self.fields})


def fill(template: str, values: Mapping[str, str]) -> str:
    """Replace each ``{name}`` of ``values`` in ``template``; any other brace stays as it is. Fields are
    filled in one pass, so a value that itself holds ``{query}`` is never substituted again."""
    if not values:
        return template
    literals, fields = _plan(template, tuple(values))
    out = [literals[0]]
    for name, literal in zip(fields, literals[1:]):
        out += (str(values[name]), literal)
    return "".join(out)


@functools.lru_cache(maxsize=256)
def _plan(template: str, names: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The template cut at every ``{name}`` of these names: (the texts around them, the names in order). Filling is
    per prompt: the template is searched once, and each prompt only joins (about 3x a regex substitution)."""
    pattern = re.compile("(" + "|".join(re.escape("{" + name + "}") for name in names) + ")")
    pieces = pattern.split(template)  # texts at the even places, the matched {name}s at the odd ones
    return tuple(pieces[0::2]), tuple(piece[1:-1] for piece in pieces[1::2])


def load_prompt(name_or_path: str, fields: tuple[str, ...] = ("query", "passage")) -> PromptTemplate:
    """A packaged template by name (e.g. umbrela_bing) or any text file by path."""
    path = Path(name_or_path).expanduser()
    if path.suffix == ".txt" and path.is_file():
        text, name = path.read_text(encoding="utf-8"), path.stem
        opened(path)  # part of the job's resume key (identity/files_read.py)
    else:
        packaged = PACKAGED / f"{name_or_path}.txt"
        if not packaged.is_file():
            known = sorted(p.name[:-4] for p in PACKAGED.iterdir() if p.name.endswith(".txt"))
            raise ConfigError(
                f"prompt {name_or_path!r}: neither a .txt file nor a packaged template ({', '.join(known)})"
            )
        text, name = packaged.read_text(encoding="utf-8"), name_or_path
        opened(Path(str(packaged)))
    missing = [f for f in fields if "{" + f + "}" not in text]
    if missing:
        raise ConfigError(
            f"prompt {name_or_path!r} lacks the placeholder(s) {', '.join('{' + f + '}' for f in missing)}"
        )
    return PromptTemplate(name, text, fields)
