"""A judge's label scale: which labels it gives and what each means on the human 0-3 scale.

Why: a binary judge's 1 means "relevant", not the humans' 1 ("related"); read on the 0-3 scale its labels
make every graded statistic a number pretending. So a judge declares its scale (``judge.scale``):

- ``graded`` (the default): 0-3, the humans' own scale, each label its own gain;
- ``binary``: 0/1, 1 = relevant; its 1 counts as the collection's lowest relevant human level
  (``dataset.relevant_from``, 2 in TREC DL), 0 as 0 (docs/protocol.md says why);
- any ordered set of integer labels with a map onto the human levels, e.g. EXAM's 0-5:
  ``{labels: [0,1,2,3,4,5], to_human: [0,0,1,1,2,3]}`` (``to_human[i]`` is the human level of ``labels[i]``).

Every statistic then reads the judge on its own scale (metrics/agreement.py): nDCG gains are the mapped human
levels, the binary kappa compares relevant-or-not on both sides, graded kappa and alpha are computed only when
the map reaches every human level, and label shares are the judge's own labels. The scale as a cell applied it
travels as the ``judge_scale`` tag (:meth:`LabelScale.tag`), which compare reads back (:func:`from_tag`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from judgebench.exceptions import ConfigError

HUMAN_LEVELS = (0, 1, 2, 3)
RELEVANT_FROM = 2  # TREC DL: 2 and 3 are relevant (the binary measures' convention)
GRADED = "graded"
BINARY = "binary"
EXAMPLE = "judge.scale={labels:[0,1,2,3,4,5],to_human:[0,0,1,1,2,3]}"


@dataclass(frozen=True)
class LabelScale:
    """``labels``: the judge's labels in order; ``to_human``: the human level of each; ``relevant_from``: the
    human level from which a pair counts as relevant in this collection (the binary kappa's cut)."""

    name: str
    labels: tuple[int, ...]
    to_human: tuple[int, ...]
    relevant_from: int = RELEVANT_FROM

    @property
    def is_graded(self) -> bool:
        """The humans' own scale, label for label: every statistic reads as it always did."""
        return self.labels == HUMAN_LEVELS and self.to_human == HUMAN_LEVELS

    @property
    def reaches_every_level(self) -> bool:
        """Graded statistics (kappa on 0-3, weighted kappa, alpha, per-query kappa) compare a judge with the humans
        level by level: they mean something only when the judge's map reaches every human level."""
        return set(self.to_human) == set(HUMAN_LEVELS)

    def human(self, labels) -> np.ndarray:
        """The human level (the nDCG gain) of each of the judge's labels."""
        lookup = dict(zip(self.labels, self.to_human))
        return np.array([lookup[int(x)] for x in np.asarray(labels).tolist()], dtype=int)

    def gains(self, qrels: pd.DataFrame) -> pd.DataFrame:
        """The judge's qrels with ``relevance`` as its mapped human level: what nDCG scores with."""
        return qrels if self.is_graded else qrels.assign(relevance=self.human(qrels["relevance"]))

    def coarsen_human(self, levels) -> np.ndarray:
        """Human levels seen through this scale: each to the highest level the judge's map reaches at or below it
        (binary in TREC DL: 0, 1 -> 0 and 2, 3 -> 2), so two label distributions of one scale are compared."""
        reach = np.array(sorted(set(self.to_human)))
        h = np.asarray(levels, dtype=int)
        idx = np.searchsorted(reach, h, side="right") - 1
        return reach[np.clip(idx, 0, None)]

    def describe(self) -> str:
        if self.is_graded:
            return "graded 0-3"
        if self.name == BINARY:
            return f"binary 0/1 (1 = human >= {self.relevant_from})"
        pairs = ", ".join(f"{a}->{b}" for a, b in zip(self.labels, self.to_human))
        return f"{self.name} ({pairs})"

    def tag(self) -> str:
        """The scale as the ``judge_scale`` run tag: compact JSON, read back by :func:`from_tag`."""
        return json.dumps(
            {
                "name": self.name,
                "labels": list(self.labels),
                "to_human": list(self.to_human),
                "relevant_from": self.relevant_from,
            },
            separators=(",", ":"),
        )


def out_of_scale_hint(scale: LabelScale) -> str:
    """What a file judge's reader says after a label outside ``scale``: the option to set."""
    clip = "judge.out_of_range=clip clamps such labels into range"
    if scale.is_graded:
        return (
            f"a judge on another scale declares it: judge.scale=binary, or {EXAMPLE} (labels and their human levels); "
            f"{clip}"
        )
    return f"the declared judge.scale is {scale.describe()}; {clip}"


def graded(relevant_from: int = RELEVANT_FROM) -> LabelScale:
    return LabelScale(GRADED, HUMAN_LEVELS, HUMAN_LEVELS, relevant_from)


def parse(value, relevant_from: int = RELEVANT_FROM, key: str = "judge.scale") -> LabelScale:
    """A scale from its config value: null/"graded", "binary", or {labels: [...], to_human: [...] or {label: level},
    name: optional}. A value that cannot be a scale is a ConfigError naming ``key``."""
    if value is None or value == GRADED:
        return graded(relevant_from)
    if value == BINARY:
        return LabelScale(BINARY, (0, 1), (0, relevant_from), relevant_from)
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}={value!r}: expected graded, binary or a map such as {EXAMPLE}")
    labels, to_human = value.get("labels"), value.get("to_human")
    if not isinstance(labels, Sequence) or isinstance(labels, str) or not labels:
        raise ConfigError(f"{key}.labels: expected the judge's labels in order, e.g. {EXAMPLE}")
    try:
        labels = tuple(int(x) for x in labels)
        if isinstance(to_human, Mapping):
            given = {int(k): int(v) for k, v in to_human.items()}
            to_human = tuple(given[x] for x in labels)
        else:
            to_human = tuple(int(x) for x in (to_human or ()))
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(
            f"{key}.to_human: expected the human level (0-3) of every label, e.g. {EXAMPLE} ({exc})"
        ) from None
    if len(set(labels)) != len(labels) or list(labels) != sorted(labels):
        raise ConfigError(f"{key}.labels={list(labels)}: expected distinct labels in increasing order")
    if len(to_human) != len(labels) or not set(to_human) <= set(HUMAN_LEVELS):
        raise ConfigError(
            f"{key}.to_human={list(to_human)}: expected one human level (0-3) per label of {list(labels)}"
        )
    if list(to_human) != sorted(to_human):
        raise ConfigError(f"{key}.to_human={list(to_human)}: expected a map that keeps the labels' order")
    name = str(value.get("name") or f"{labels[0]}-{labels[-1]}")
    if (labels, to_human) == (HUMAN_LEVELS, HUMAN_LEVELS):
        return graded(relevant_from)
    return LabelScale(name, labels, to_human, relevant_from)


def from_tag(text: str | None, relevant_from: int = RELEVANT_FROM) -> LabelScale:
    """The scale a run was logged with; runs logged before scales existed were graded."""
    if not text or (isinstance(text, float) and np.isnan(text)):
        return graded(relevant_from)
    d = json.loads(text)
    return LabelScale(
        str(d["name"]), tuple(d["labels"]), tuple(d["to_human"]), int(d.get("relevant_from", relevant_from))
    )
