"""Labels someone already made, as a judge: any TREC qrels file (an LLM's, UMBRELA's, a challenge run's).

Researchers hold judgments they paid for; judging them again would cost the calls and might not even
reproduce them. The file's labels are the judge's labels for the label set, with no calls. A label-set
pair the file does not label is a failure (listed, counted in ``calls_failed``, so ``max_failed_share``
applies), never a 0. Form errors (bad line, non-integer label, a query the dataset does not have) always
stop the job with file, line and value; labels outside the judge's declared scale (``scale``: graded 0-3 by
default, binary, or labels with a map onto the human levels, label_scale.py) and conflicting duplicates do too,
unless the user opts into a policy (``out_of_range=clip``, ``duplicates=last``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from judgebench import label_scale
from judgebench.config.resolvers import file_stem
from judgebench.data.trec import read_judge_qrels
from judgebench.exceptions import DataError
from judgebench.judges.base import Judge, JudgeResult, JudgeUsage
from judgebench.judges.human import HumanJudge

log = logging.getLogger("judgebench")
_KEYS = ["query_id", "doc_id"]
# judge.path=human: the dataset's own human qrels, so that one judge.path sweep (+experiment=llmjudge_oracles)
# holds the human judge beside the files; it is then the human judge (name, family, labels), no file is read.
HUMAN_PATH = "human"


@dataclass
class QrelsFileJudge(Judge):
    name: str | None = None  # null: the file's stem
    family: str = "file"
    model: str = "file"
    path: str = ""
    root: str | None = None  # a relative path is read from here (null: the working directory)
    out_of_range: str = "error"  # error | clip
    duplicates: str = "error"  # error | last
    scale: str | dict | None = "graded"  # graded | binary | {labels: [...], to_human: [...]} (label_scale.py)
    reads_texts = False  # a class attribute (ClassVar in Judge), not a config field

    def __post_init__(self) -> None:
        if not self.path:
            raise DataError(
                "judge.path", "the qrels judge needs a file: judge.path=FILE (TREC qrels 'query_id 0 doc_id label')"
            )
        self.name = self.name or file_stem(self.path)
        if self.path == HUMAN_PATH:
            self.name, self.family, self.model = HUMAN_PATH, "human", "qrels"

    def label_scale(self, relevant_from: int = label_scale.RELEVANT_FROM) -> label_scale.LabelScale:
        """The declared scale of the file's labels (the human judge's: graded)."""
        return label_scale.parse(None if self.path == HUMAN_PATH else self.scale, relevant_from)

    @property
    def file(self) -> Path:
        p = Path(self.path).expanduser()
        return p if p.is_absolute() or not self.root else Path(self.root).expanduser() / p

    def input_files(self) -> list[Path]:
        """Read when it judges, hashed into the resume key before (a label edited in place reruns the cell)."""
        return [] if self.path == HUMAN_PATH else [self.file]

    def read(self, dataset) -> pd.DataFrame:
        """The file's labels with dataset ids (query_id, doc_id, relevance, line, label); a query the dataset
        does not know is an error naming its line."""
        scale = self.label_scale(getattr(dataset, "relevant_from", label_scale.RELEVANT_FROM))
        labels = read_judge_qrels(
            self.file,
            out_of_range=self.out_of_range,
            duplicates=self.duplicates,
            max_label=max(scale.labels),
            hint=label_scale.out_of_scale_hint(scale),
        )
        foreign = ~labels["relevance"].isin(scale.labels)
        if foreign.any():  # a gap in a declared scale (labels 0, 2, 4): no clip can say what such a label means
            row = labels[foreign].iloc[0]
            raise DataError(
                self.file,
                f"query {row['query_id']} doc {row['doc_id']}: label {row['label']} is not one of the "
                f"declared judge.scale labels {list(scale.labels)}",
                int(row["line"]),
            )
        aliases = getattr(dataset, "id_aliases", None) or {}
        if aliases:  # ids of the original collection (e.g. TREC DL 2023 qids) mapped to the dataset's
            labels["query_id"] = labels["query_id"].map(lambda q: aliases.get("query", {}).get(q, q))
            labels["doc_id"] = labels["doc_id"].map(lambda d: aliases.get("doc", {}).get(d, d))
        known = set(dataset.queries) | set(getattr(dataset, "topic_ids", ()) or ())
        unknown = labels[~labels["query_id"].isin(known)]
        if len(unknown):
            row = unknown.iloc[0]
            raise DataError(
                self.file,
                f"query {row['query_id']} (doc {row['doc_id']}, label {row['label']}) is not a query of dataset "
                f"{dataset.name} ({len(unknown)} such lines); expected labels for the dataset's queries "
                f"(a qrels file of another collection?)",
                int(row["line"]),
            )
        if labels.duplicated(_KEYS).any():  # two ids of the file mapped to one pair of the dataset
            row = labels[labels.duplicated(_KEYS, keep=False)].iloc[-1]
            raise DataError(
                self.file,
                f"query {row['query_id']} doc {row['doc_id']} is labelled twice (under two ids)",
                int(row["line"]),
            )
        return labels

    def judge(self, pairs, dataset, texts) -> JudgeResult:
        if self.path == HUMAN_PATH:
            return HumanJudge().judge(pairs, dataset, texts)
        labels = self.read(dataset)
        merged = pairs[_KEYS].merge(labels, on=_KEYS, how="left")
        have = merged["relevance"].notna()
        found, missing = merged[have].copy(), merged[~have]
        clipped = found["label"] != found["relevance"]
        found["relevance"] = found["relevance"].astype(int)
        where = self.file.name
        found["raw"] = [
            f"{where}:{int(n)}" + (f" (clipped from {int(w)})" if c else "")
            for n, w, c in zip(found["line"], found["label"], clipped)
        ]
        failed = pd.DataFrame(
            {
                "query_id": missing["query_id"],
                "doc_id": missing["doc_id"],
                "raw": "",
                "error": f"not labelled in {self.file}",
            }
        )
        outside = len(labels) - len(found)
        usage = JudgeUsage(calls_failed=len(missing))
        if len(missing):
            usage.errors["missing"] = len(missing)
            shown = ", ".join(f"{q}/{d}" for q, d in missing[_KEYS].head(5).itertuples(index=False))
            log.warning(
                "judge %s: %d of %d label-set pairs are not in %s (failures, not 0s), e.g. %s",
                self.name,
                len(missing),
                len(pairs),
                self.file,
                shown,
            )
        if clipped.any():
            usage.errors["clipped"] = int(clipped.sum())
            log.warning(
                "judge %s: %d labels outside its scale clamped into range (out_of_range=clip), lines %s",
                self.name,
                int(clipped.sum()),
                ", ".join(str(int(n)) for n in found.loc[clipped, "line"].head(10)),
            )
        if outside:
            log.info(
                "judge %s: %d labelled pairs of %s are outside the label set (ignored)", self.name, outside, self.file
            )
        out = found[["query_id", "doc_id", "relevance", "raw"]].reset_index(drop=True)
        return JudgeResult(labels=out, failed=failed.reset_index(drop=True), usage=usage)
