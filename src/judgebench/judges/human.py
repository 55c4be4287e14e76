"""The human qrels as a judge, so "human" is one more column of every table."""

from __future__ import annotations

from dataclasses import dataclass

from judgebench.judges.base import Judge, JudgeResult


@dataclass
class HumanJudge(Judge):
    name: str = "human"
    family: str = "human"
    model: str = "qrels"
    reads_texts = False  # a class attribute (ClassVar in Judge), not a config field

    def judge(self, pairs, dataset, texts) -> JudgeResult:
        labels = pairs[["query_id", "doc_id"]].merge(dataset.qrels, on=["query_id", "doc_id"], how="inner")
        labels = labels.assign(raw="qrels")
        return JudgeResult(labels=labels[["query_id", "doc_id", "relevance", "raw"]].reset_index(drop=True))
