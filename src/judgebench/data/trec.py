"""Validated reading and writing of TREC-format files (qrels, runs, topics, passages).

A malformed input file must fail loudly, with the file, the line and what was expected,
instead of yielding a frame that quietly evaluates to a wrong number. Frames use the
ir_measures column names; query and doc ids are always ``str``.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from judgebench.data.reading import lines as _lines
from judgebench.data.reading import read_text as _read_text
from judgebench.exceptions import DataError

PathLike = str | os.PathLike[str]

_QRELS_FORMAT = "'query_id iteration doc_id relevance'"
_RUN_FORMAT = "'query_id Q0 doc_id rank score tag'"
_ID_KEYS = ("docid", "doc_id", "id", "_id")
_TEXT_KEYS = ("text", "contents", "content", "passage")


# --------------------------------------------------------------------------- helpers


def _as_id(value: Any) -> str | None:
    """A JSON id (string or integer, as rank_llm writes qids) as str; None when unusable."""
    if isinstance(value, bool) or not isinstance(value, str | int):
        return None
    s = str(value).strip()
    return s if s and len(s.split()) == 1 else None


def _require_columns(df: pd.DataFrame, columns: tuple[str, ...], what: str) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{what} frame lacks column(s) {missing}; expected {list(columns)}")


def _require_tokens(values: pd.Series, what: str) -> None:
    """Ids with whitespace would silently shift the columns of a whitespace-separated file."""
    bad = [v for v in values.astype(str).tolist() if not v or len(v.split()) != 1 or v != v.strip()]
    if bad:
        raise ValueError(f"{what} must be non-empty and without whitespace, got {bad[0]!r}")


# --------------------------------------------------------------------------- qrels

_INTEGER = re.compile(r"[+-]?[0-9]+")


def qrels_fields(path: PathLike) -> Iterator[tuple[int, list[str]]]:
    """(1-based line number, whitespace-split fields) of each non-blank line of a qrels file. The one reader of
    every qrels file the package reads (the human qrels, a judge's labels, the assessors' labels of a budget
    plan): strict UTF-8, a byte-order mark skipped (as spreadsheets save files), gzip read transparently."""
    for n, line in _lines(_read_text(path)):
        yield n, line.split()


def integer_label(text: str) -> int | None:
    """A label written as an ASCII integer (``3``, ``-1``, ``+2``); None otherwise: ``int()`` would also take
    ``1_0`` and non-ASCII digits such as ``٣``."""
    return int(text) if _INTEGER.fullmatch(text) else None


def _judgments(path: PathLike, name_pair: bool):
    """(line, query id, doc id, integer label) of each qrels line: four fields and an ASCII integer label, or a
    DataError naming the line (and the pair, with ``name_pair``)."""
    for n, fields in qrels_fields(path):
        if len(fields) != 4:
            raise DataError(path, f"expected 4 fields {_QRELS_FORMAT}, got {len(fields)}", n)
        qid, _, docid, label_s = fields
        label = integer_label(label_s)
        if label is None:
            where = f"query {qid} doc {docid}: " if name_pair else ""
            raise DataError(path, f"{where}expected an integer relevance label, got {label_s!r}", n)
        yield n, qid, docid, label


def read_qrels(path: PathLike, max_label: int = 3) -> pd.DataFrame:
    """TREC qrels ``query_id iteration doc_id relevance`` (iteration, e.g. Q0 or 0, is ignored).

    Labels must lie in 0..max_label: negative TREC labels (-1, -2) are rejected rather than
    guessed at. A (query, doc) judged twice is an error even with the same label.
    """
    seen: dict[tuple[str, str], tuple[int, int]] = {}  # (qid, docid) -> (line, label)
    for n, qid, docid, label in _judgments(path, name_pair=False):
        if not 0 <= label <= max_label:
            raise DataError(path, f"expected a relevance label in 0..{max_label}, got {label}", n)
        if (qid, docid) in seen:
            first, first_label = seen[(qid, docid)]
            raise DataError(
                path,
                f"duplicate judgment for query {qid} doc {docid} (label {label}; line {first} has label "
                f"{first_label}), expected one judgment per (query, doc)",
                n,
            )
        seen[(qid, docid)] = (n, label)
    if not seen:
        raise DataError(path, f"no judgments, expected at least one {_QRELS_FORMAT} line")
    return pd.DataFrame(
        {
            "query_id": [q for q, _ in seen],
            "doc_id": [d for _, d in seen],
            "relevance": pd.Series([lab for _, lab in seen.values()], dtype="int64"),
        }
    )


OUT_OF_RANGE = ("error", "clip")
DUPLICATES = ("error", "last")


def read_judge_qrels(
    path: PathLike,
    out_of_range: str = "error",
    duplicates: str = "error",
    max_label: int = 3,
    hint: str = "judge.out_of_range=clip clamps such labels into range",
) -> pd.DataFrame:
    """A judge's labels as TREC qrels: columns query_id, doc_id, relevance, line (1-based), label (as written).

    Stricter about form than about content, by policy: a malformed line or a non-integer label is always
    an error; a label outside 0..max_label is an error unless ``out_of_range="clip"`` (clamped into range,
    as the LLMJudge organisers did); the same pair twice with different labels is an error unless
    ``duplicates="last"`` (the later line wins). The same pair twice with the same label is fine.
    """
    if out_of_range not in OUT_OF_RANGE:
        raise DataError(path, f"out_of_range={out_of_range!r}: expected one of {', '.join(OUT_OF_RANGE)}")
    if duplicates not in DUPLICATES:
        raise DataError(path, f"duplicates={duplicates!r}: expected one of {', '.join(DUPLICATES)}")
    rows: dict[tuple[str, str], tuple[int, int, int]] = {}  # (qid, docid) -> (line, label as written, label)
    for n, qid, docid, written in _judgments(path, name_pair=True):
        label = min(max(written, 0), max_label)
        if label != written and out_of_range == "error":
            raise DataError(
                path,
                f"query {qid} doc {docid}: label {written} is outside 0..{max_label}, expected 0..{max_label} ({hint})",
                n,
            )
        if (qid, docid) in rows and rows[(qid, docid)][1] != written and duplicates == "error":
            first, first_label, _ = rows[(qid, docid)]
            raise DataError(
                path,
                f"query {qid} doc {docid} has label {written} here and label {first_label} on line {first}, expected "
                f"one label per (query, doc) (judge.duplicates=last keeps the later one)",
                n,
            )
        if (qid, docid) not in rows or rows[(qid, docid)][1] != written:  # an identical repeat keeps the first line
            rows[(qid, docid)] = (n, written, label)
    if not rows:
        raise DataError(path, f"no judgments, expected at least one {_QRELS_FORMAT} line")
    return pd.DataFrame(
        {
            "query_id": [q for q, _ in rows],
            "doc_id": [d for _, d in rows],
            "relevance": pd.Series([v[2] for v in rows.values()], dtype="int64"),
            "line": pd.Series([v[0] for v in rows.values()], dtype="int64"),
            "label": pd.Series([v[1] for v in rows.values()], dtype="int64"),
        }
    )


def write_qrels(qrels: pd.DataFrame, path: PathLike) -> None:
    """Standard TREC qrels ``query_id 0 doc_id relevance``, in frame order."""
    _require_columns(qrels, ("query_id", "doc_id", "relevance"), "qrels")
    _require_tokens(qrels["query_id"], "query ids")
    _require_tokens(qrels["doc_id"], "doc ids")
    lines = (
        f"{q} 0 {d} {int(r)}\n"
        for q, d, r in zip(qrels["query_id"].tolist(), qrels["doc_id"].tolist(), qrels["relevance"].tolist())
    )
    Path(path).write_text("".join(lines), encoding="utf-8")


# --------------------------------------------------------------------------- runs

_Hit = tuple[int, str, int, float]  # (line, doc_id, rank, score)


def _check_order(path: PathLike, qid: str, hits: list[_Hit], check_scores: bool) -> None:
    """Hits sorted by rank: ranks must be distinct and (unless told which to trust) scores non-increasing."""
    for (n0, _, r0, s0), (n1, _, r1, s1) in zip(hits, hits[1:]):
        if r1 == r0:
            raise DataError(
                path,
                f"query {qid}: rank {r1} also on line {n0}, expected distinct ranks per query "
                f'(pass order_by="score" to re-rank by score)',
                n1,
            )
        if check_scores and s1 > s0:
            raise DataError(
                path,
                f"query {qid}: rank and score disagree: rank {r1} has score {s1!r} but rank {r0} (line {n0}) "
                f"has the lower score {s0!r}; expected scores non-increasing with rank. "
                f'Pass order_by="rank" or order_by="score" to say which one to trust',
                n1,
            )


def read_run(path: PathLike, order_by: str | None = None) -> pd.DataFrame:
    """TREC run ``query_id Q0 doc_id rank score tag``, sorted by query (file order) then rank.

    Rank and score must agree; if they do not, ``order_by`` says which one to trust: "rank"
    keeps the file's ranks, "score" re-ranks by score descending (ties keep file order) with
    ranks recomputed 1..n. We never guess, since either choice changes every metric.
    """
    if order_by not in (None, "rank", "score"):
        raise ValueError(f"order_by must be None, 'rank' or 'score', got {order_by!r}")
    queries: dict[str, list[_Hit]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for n, line in _lines(_read_text(path)):
        fields = line.split()
        if len(fields) != 6:
            raise DataError(path, f"expected 6 fields {_RUN_FORMAT}, got {len(fields)}", n)
        qid, _, docid, rank_s, score_s, _ = fields
        try:
            rank = int(rank_s)
        except ValueError:
            raise DataError(path, f"expected an integer rank, got {rank_s!r}", n) from None
        try:
            score = float(score_s)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise DataError(path, f"expected a finite number as score, got {score_s!r}", n)
        if (qid, docid) in first_line:
            raise DataError(
                path,
                f"duplicate doc {docid} for query {qid} (also on line {first_line[(qid, docid)]}), "
                "expected each doc once per query",
                n,
            )
        first_line[(qid, docid)] = n
        queries.setdefault(qid, []).append((n, docid, rank, score))
    if not queries:
        raise DataError(path, f"no run lines, expected at least one {_RUN_FORMAT} line")

    rows: list[tuple[str, str, float, int]] = []
    for qid, hits in queries.items():
        if order_by == "score":
            ranked = sorted(hits, key=lambda h: -h[3])  # stable: score ties keep file order
            rows.extend((qid, d, s, r) for r, (_, d, _, s) in enumerate(ranked, start=1))
        else:
            ranked = sorted(hits, key=lambda h: h[2])
            _check_order(path, qid, ranked, check_scores=order_by is None)
            rows.extend((qid, d, s, r) for _, d, r, s in ranked)
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score", "rank"]).astype(
        {"score": "float64", "rank": "int64"}
    )


def write_run(run: pd.DataFrame, path: PathLike, tag: str = "judgebench") -> None:
    """Standard TREC run ``query_id Q0 doc_id rank score tag``, in frame order.

    Scores are written with ``repr`` (shortest exact form), so they read back bit-identical.
    """
    _require_columns(run, ("query_id", "doc_id", "score", "rank"), "run")
    _require_tokens(run["query_id"], "query ids")
    _require_tokens(run["doc_id"], "doc ids")
    _require_tokens(pd.Series([tag]), "the run tag")
    scores = [float(s) for s in run["score"].tolist()]
    if not all(math.isfinite(s) for s in scores):
        raise ValueError("run scores must be finite numbers")
    lines = (
        f"{q} Q0 {d} {int(r)} {s!r} {tag}\n"
        for q, d, r, s in zip(run["query_id"].tolist(), run["doc_id"].tolist(), run["rank"].tolist(), scores)
    )
    Path(path).write_text("".join(lines), encoding="utf-8")


# --------------------------------------------------------------------------- topics


def read_topics(path: PathLike) -> dict[str, str]:
    """Topics TSV ``query_id<TAB>text`` (anserini style) as {query_id: text}."""
    topics: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for n, line in _lines(_read_text(path)):
        fields = line.split("\t")
        if len(fields) != 2:
            raise DataError(path, f"expected 2 tab-separated fields 'query_id<TAB>text', got {len(fields)}", n)
        qid, text = fields[0].strip(), fields[1].strip()
        if not qid or len(qid.split()) != 1:
            raise DataError(path, f"expected a query id without whitespace before the tab, got {qid!r}", n)
        if not text:
            raise DataError(path, f"empty text for query {qid}, expected the query text after the tab", n)
        if qid in first_line:
            raise DataError(
                path, f"duplicate query id {qid} (also on line {first_line[qid]}), expected each query once", n
            )
        first_line[qid] = n
        topics[qid] = text
    if not topics:
        raise DataError(path, "no topics, expected at least one 'query_id<TAB>text' line")
    return topics


def check_queries_known(df: pd.DataFrame, topics: Mapping[str, str] | set[str], path: PathLike) -> None:
    """Fail when ``df`` (read from ``path``) has queries without a topic: they could not be judged."""
    known = set(topics)
    missing = [q for q in dict.fromkeys(df["query_id"].astype(str)) if q not in known]
    if missing:
        shown = ", ".join(missing[:5]) + (f" (and {len(missing) - 5} more)" if len(missing) > 5 else "")
        raise DataError(
            path, f"{len(missing)} query id(s) not in the topics: {shown}; expected every query to have a topic"
        )


# --------------------------------------------------------------------------- passages


def _add_passage(
    path: PathLike, passages: dict[str, str], where: dict[str, str], docid: str, text: str, here: str, line: int | None
) -> None:
    """Record a passage; the same doc may recur (across queries) but only with the same text."""
    if docid in passages and passages[docid] != text:
        raise DataError(
            path, f"doc {docid} {here} has a different text than {where[docid]}, expected one text per doc", line
        )
    passages.setdefault(docid, text)
    where.setdefault(docid, here)


def _read_jsonl(path: PathLike, text: str) -> dict[str, str]:
    passages: dict[str, str] = {}
    where: dict[str, str] = {}
    for n, line in _lines(text):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(
                path, f"invalid JSON ({e.msg} at column {e.colno}), expected one JSON object per line", n
            ) from None
        if not isinstance(obj, dict):
            raise DataError(path, f"expected a JSON object per line, got {type(obj).__name__}", n)
        id_key = next((k for k in _ID_KEYS if k in obj), None)
        text_key = next((k for k in _TEXT_KEYS if k in obj), None)
        docid = _as_id(obj[id_key]) if id_key else None
        if docid is None:
            raise DataError(
                path, f"expected a doc id (string or integer) under one of the keys {', '.join(_ID_KEYS)}", n
            )
        if text_key is None:
            raise DataError(
                path, f"doc {docid}: expected the passage text under one of the keys {', '.join(_TEXT_KEYS)}", n
            )
        body = obj[text_key]
        if not isinstance(body, str) or not body.strip():
            raise DataError(path, f"doc {docid}: empty text, expected a non-empty passage text", n)
        _add_passage(path, passages, where, docid, body, f"on line {n}", n)
    return passages


def _read_rank_llm_json(path: PathLike, text: str) -> dict[str, str]:
    """rank_llm retrieval output: ``[{"query": str, "hits": [{"content", "qid", "docid", "rank", "score"}]}]``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(
            path, f"invalid JSON ({e.msg} at column {e.colno}), expected a rank_llm JSON list", e.lineno
        ) from None
    if not isinstance(data, list):
        raise DataError(path, "expected a JSON list of {'query', 'hits'} objects")
    passages: dict[str, str] = {}
    where: dict[str, str] = {}
    for i, entry in enumerate(data):
        if not isinstance(entry, dict) or not isinstance(entry.get("hits"), list):
            raise DataError(path, f"list entry {i}: expected an object with a 'hits' list")
        for j, hit in enumerate(entry["hits"]):
            qid = hit.get("qid") if isinstance(hit, dict) else None
            docid = _as_id(hit.get("docid")) if isinstance(hit, dict) else None
            if docid is None:
                raise DataError(path, f"list entry {i} (qid {qid}), hit {j}: expected an object with a 'docid'")
            body = hit.get("content")
            if not isinstance(body, str) or not body.strip():
                raise DataError(path, f"docid {docid} (qid {qid}): empty 'content', expected a non-empty passage text")
            _add_passage(path, passages, where, docid, body, f"under qid {qid}", None)
    return passages


def read_passages(path: PathLike) -> dict[str, str]:
    """Passage texts {doc_id: text}, from JSONL or a rank_llm retrieval JSON list (told apart by the first
    character)."""
    text = _read_text(path)
    head = text.lstrip()
    if not head:
        raise DataError(path, "empty file, expected JSONL passages or a rank_llm JSON list")
    return _read_rank_llm_json(path, text) if head[0] == "[" else _read_jsonl(path, text)
