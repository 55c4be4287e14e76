"""Validated TREC I/O: every bad input fails with file, line and what was expected; real TREC DL files read."""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from judgebench.data.trec import (
    check_queries_known,
    read_passages,
    read_qrels,
    read_run,
    read_topics,
    write_qrels,
    write_run,
)
from judgebench.exceptions import DataError

READERS: dict[str, Callable[..., object]] = {
    "qrels": read_qrels,
    "run": read_run,
    "topics": read_topics,
    "passages": read_passages,
}


def case(id: str, reader: str, content: str | bytes, line: int | None, *phrases: str, **kwargs: object):
    """One bad-input row: reader name, file content, expected line (None: no line) and message phrases."""
    return pytest.param(reader, content, line, phrases, kwargs, id=id)


def _json_list(*hits: dict) -> str:
    return json.dumps([{"query": "q", "hits": list(hits)}], indent=2)


def _hit(docid: str = "d1", content: str = "some text", qid: int = 7) -> dict:
    return {"content": content, "qid": qid, "docid": docid, "rank": 1, "score": 1.0}


BAD_INPUTS = [
    # ---- qrels
    case(
        "qrels-3-fields",
        "qrels",
        "1 0 d1 1\n1 0 d2\n",
        2,
        "expected 4 fields 'query_id iteration doc_id relevance', got 3",
    ),
    case("qrels-5-fields", "qrels", "1 0 d1 1 x\n", 1, "expected 4 fields", "got 5"),
    case("qrels-label-word", "qrels", "1 Q0 d1 1\n1 Q0 d2 high\n", 2, "expected an integer relevance label", "'high'"),
    case("qrels-label-float", "qrels", "1 0 d1 1.5\n", 1, "expected an integer relevance label"),
    case("qrels-label-too-high", "qrels", "1 0 d1 4\n", 1, "expected a relevance label in 0..3, got 4"),
    case("qrels-label-minus-1", "qrels", "1 0 d1 0\n1 0 d2 -1\n", 2, "expected a relevance label in 0..3, got -1"),
    case("qrels-label-minus-2", "qrels", "1 0 d1 -2\n", 1, "expected a relevance label in 0..3, got -2"),
    case("qrels-label-above-custom-max", "qrels", "1 0 d1 2\n", 1, "in 0..1, got 2", max_label=1),
    case(
        "qrels-dup-different-label",
        "qrels",
        "1 0 d1 1\n1 0 d2 0\n1 0 d1 2\n",
        3,
        "duplicate judgment for query 1 doc d1",
        "line 1",
        "expected one judgment per (query, doc)",
    ),
    case("qrels-dup-same-label", "qrels", "1 0 d1 1\n\n1 0 d1 1\n", 3, "duplicate judgment", "line 1"),
    case("qrels-empty", "qrels", "", None, "no judgments", "expected at least one"),
    case("qrels-blank-only", "qrels", "\n  \n", None, "no judgments"),
    case(
        "qrels-non-utf8",
        "qrels",
        b"1 0 d1 1\n1 0 d\xff2 1\n",
        2,
        "invalid UTF-8 byte 0xff at byte offset 14",
        "expected UTF-8",
    ),
    # ---- runs
    case(
        "run-5-fields",
        "run",
        "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 1.0\n",
        2,
        "expected 6 fields 'query_id Q0 doc_id rank score tag', got 5",
    ),
    case("run-7-fields", "run", "1 Q0 d1 1 2.0 t extra\n", 1, "expected 6 fields", "got 7"),
    case("run-rank-word", "run", "1 Q0 d1 first 2.0 t\n", 1, "expected an integer rank", "'first'"),
    case("run-rank-float", "run", "1 Q0 d1 1.0 2.0 t\n", 1, "expected an integer rank"),
    case("run-score-word", "run", "1 Q0 d1 1 high t\n", 1, "expected a finite number as score", "'high'"),
    case("run-score-nan", "run", "1 Q0 d1 1 2.0 t\n1 Q0 d2 2 nan t\n", 2, "expected a finite number as score"),
    case("run-score-inf", "run", "1 Q0 d1 1 inf t\n", 1, "expected a finite number as score"),
    case(
        "run-dup-doc",
        "run",
        "1 Q0 d1 1 3.0 t\n2 Q0 d1 1 3.0 t\n1 Q0 d1 2 2.0 t\n",
        3,
        "duplicate doc d1 for query 1",
        "line 1",
        "expected each doc once per query",
    ),
    case(
        "run-rank-score-disagree",
        "run",
        "1 Q0 d1 1 3.0 t\n1 Q0 d2 2 2.0 t\n1 Q0 d3 3 2.5 t\n",
        3,
        "rank and score disagree",
        "line 2",
        "expected scores non-increasing with rank",
        'order_by="rank"',
        'order_by="score"',
    ),
    case(
        "run-disagree-file-out-of-rank-order",
        "run",
        "1 Q0 d2 2 5.0 t\n1 Q0 d1 1 4.0 t\n",
        1,
        "rank and score disagree",
        "line 2",
    ),
    case(
        "run-dup-rank",
        "run",
        "1 Q0 d1 1 3.0 t\n1 Q0 d2 1 2.0 t\n",
        2,
        "rank 1 also on line 1",
        "expected distinct ranks",
    ),
    case(
        "run-dup-rank-order-by-rank",
        "run",
        "1 Q0 d1 1 3.0 t\n1 Q0 d2 1 2.0 t\n",
        2,
        "expected distinct ranks",
        order_by="rank",
    ),
    case("run-empty", "run", "", None, "no run lines", "expected at least one"),
    case(
        "run-non-utf8",
        "run",
        b"1 Q0 d1 1 3.0 t\n\n\xc3\x28 Q0 d2 2 2.0 t\n",
        3,
        "invalid UTF-8 byte 0xc3 at byte offset 17",
        "byte 1 of the line",
    ),
    # ---- topics
    case(
        "topics-space-not-tab",
        "topics",
        "1\tfirst\n2 second query\n",
        2,
        "expected 2 tab-separated fields 'query_id<TAB>text', got 1",
    ),
    case("topics-3-fields", "topics", "1\tfirst\tmore\n", 1, "expected 2 tab-separated fields", "got 3"),
    case(
        "topics-dup-id",
        "topics",
        "1\tfirst\n2\tsecond\n1\tagain\n",
        3,
        "duplicate query id 1",
        "line 1",
        "expected each query once",
    ),
    case("topics-empty-text", "topics", "1\tfirst\n2\t  \n", 2, "empty text for query 2", "expected the query text"),
    case("topics-empty-id", "topics", "\tfirst\n", 1, "expected a query id"),
    case("topics-empty", "topics", "", None, "no topics", "expected at least one"),
    case("topics-non-utf8", "topics", b"1\tcaf\xe9\n", 1, "invalid UTF-8 byte 0xe9 at byte offset 5"),
    # ---- passages: JSONL
    case(
        "jsonl-bad-json",
        "passages",
        '{"docid": "d1", "text": "a"}\n{"docid": "d2", "text": \n',
        2,
        "invalid JSON",
        "expected one JSON object per line",
    ),
    case(
        "jsonl-not-object",
        "passages",
        '{"docid": "d1", "text": "a"}\n"just text"\n',
        2,
        "expected a JSON object per line, got str",
    ),
    case(
        "jsonl-no-text-key",
        "passages",
        '{"docid": "d1", "text": "a"}\n{"docid": "d2"}\n',
        2,
        "doc d2: expected the passage text under one of the keys text, contents, content, passage",
    ),
    case(
        "jsonl-no-id",
        "passages",
        '{"docid": "d1", "text": "a"}\n{"title": "x", "text": "b"}\n',
        2,
        "expected a doc id",
        "docid, doc_id, id, _id",
    ),
    case(
        "jsonl-empty-text",
        "passages",
        '{"docid": "d1", "text": "a"}\n{"_id": "d2", "contents": ""}\n',
        2,
        "doc d2: empty text",
        "expected a non-empty passage text",
    ),
    case("jsonl-whitespace-text", "passages", '{"id": 5, "passage": " \\n\\t "}\n', 1, "doc 5: empty text"),
    case(
        "jsonl-two-texts",
        "passages",
        '{"doc_id": "d1", "text": "a"}\n{"doc_id": "d2", "text": "b"}\n{"doc_id": "d1", "text": "c"}\n',
        3,
        "doc d1 on line 3 has a different text than on line 1",
        "expected one text per doc",
    ),
    case(
        "json-list-of-strings", "passages", '["d1", "a"]\n', None, "list entry 0: expected an object with a 'hits' list"
    ),
    # ---- passages: rank_llm JSON list
    case(
        "json-bad-json",
        "passages",
        '[\n  {"query": "q",\n   "hits": [}\n]\n',
        3,
        "invalid JSON",
        "expected a rank_llm JSON list",
    ),
    case(
        "json-empty-content",
        "passages",
        _json_list(_hit("d1"), _hit("d2", "  ", qid=42)),
        None,
        "docid d2 (qid 42): empty 'content'",
        "expected a non-empty passage text",
    ),
    case(
        "json-missing-docid",
        "passages",
        json.dumps([{"query": "q", "hits": [{"content": "x", "qid": 3}]}]),
        None,
        "(qid 3), hit 0: expected an object with a 'docid'",
    ),
    case(
        "json-no-hits",
        "passages",
        json.dumps([{"query": "q"}]),
        None,
        "list entry 0: expected an object with a 'hits' list",
    ),
    case(
        "json-two-texts",
        "passages",
        json.dumps(
            [{"query": "a", "hits": [_hit("d1", "one", qid=1)]}, {"query": "b", "hits": [_hit("d1", "two", qid=2)]}]
        ),
        None,
        "doc d1 under qid 2 has a different text than under qid 1",
    ),
    case("passages-empty", "passages", "  \n", None, "empty file", "expected JSONL passages or a rank_llm JSON list"),
    case(
        "passages-non-utf8",
        "passages",
        b'{"docid": "d1", "text": "a"}\n{"docid": "d2", "text": "\x80"}\n',
        2,
        "invalid UTF-8 byte 0x80 at byte offset 54",
    ),
]


@pytest.mark.parametrize(("reader", "content", "line", "phrases", "kwargs"), BAD_INPUTS)
def test_bad_input_raises_data_error(tmp_path: Path, reader, content, line, phrases, kwargs) -> None:
    path = tmp_path / f"bad-{reader}.txt"
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    with pytest.raises(DataError) as info:
        READERS[reader](path, **kwargs)
    err, msg = info.value, str(info.value)
    assert isinstance(err, ValueError)
    assert path.name in msg
    assert err.line == line
    assert msg.startswith(f"{path}:{line}: " if line is not None else f"{path}: "), msg
    for phrase in phrases:
        assert phrase in msg, f"{phrase!r} not in {msg!r}"


@pytest.mark.parametrize("reader", sorted(READERS))
def test_missing_file_and_directory(tmp_path: Path, reader: str) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(DataError, match="file not found") as info:
        READERS[reader](missing)
    assert str(info.value) == f"{missing}: file not found"
    with pytest.raises(DataError, match="is a directory, expected a file") as info:
        READERS[reader](tmp_path)
    assert str(tmp_path) in str(info.value)


def test_data_error_format_and_pickle() -> None:
    assert str(DataError("a/b.txt", "expected x", 7)) == "a/b.txt:7: expected x"
    assert str(DataError(Path("a/b.txt"), "expected x")) == "a/b.txt: expected x"
    err = pickle.loads(pickle.dumps(DataError("f", "m", 3)))
    assert (err.path, err.message, err.line, str(err)) == ("f", "m", 3, "f:3: m")


# --------------------------------------------------------------------------- good paths


def test_qrels_round_trip_and_formats(tmp_path: Path) -> None:
    src = tmp_path / "in.qrels"
    src.write_text("\ufeff1 Q0 d1 3\r\n1 0 d2 0\n\n2 Q0 d1 1\n", encoding="utf-8")  # BOM, CRLF, blank line
    qrels = read_qrels(src)
    assert qrels.to_dict("list") == {"query_id": ["1", "1", "2"], "doc_id": ["d1", "d2", "d1"], "relevance": [3, 0, 1]}
    assert str(qrels["relevance"].dtype) == "int64"
    out = tmp_path / "out.qrels"
    write_qrels(qrels, out)
    assert out.read_text().splitlines()[0] == "1 0 d1 3"
    pd.testing.assert_frame_equal(read_qrels(out), qrels)


def test_run_round_trip_exact_scores(tmp_path: Path) -> None:
    run = pd.DataFrame(
        {
            "query_id": ["b", "b", "b", "a"],
            "doc_id": ["d1", "d2", "d3", "d1"],
            "score": [1 / 3, 1e-17, 1e-17, -2.5],
            "rank": [1, 2, 3, 1],
        }
    )
    path = tmp_path / "run.trec"
    write_run(run, path, tag="mytag")
    assert path.read_text().splitlines()[0] == f"b Q0 d1 1 {1 / 3!r} mytag"
    back = read_run(path)
    pd.testing.assert_frame_equal(back, run)
    assert back["score"].tolist() == run["score"].tolist()  # bit-identical
    with pytest.raises(ValueError, match="tag"):
        write_run(run, path, tag="two words")


RUN_DISAGREEING = """\
q2 Q0 x1 1 9.0 t
q1 Q0 d1 2 5.0 t
q1 Q0 d2 1 1.0 t
q1 Q0 d3 3 3.0 t
q1 Q0 d4 4 3.0 t
"""


@pytest.mark.parametrize(
    ("order_by", "q1_docs", "q1_ranks", "q1_scores"),
    [
        ("rank", ["d2", "d1", "d3", "d4"], [1, 2, 3, 4], [1.0, 5.0, 3.0, 3.0]),
        ("score", ["d1", "d3", "d4", "d2"], [1, 2, 3, 4], [5.0, 3.0, 3.0, 1.0]),  # d3/d4 tie keeps file order
    ],
)
def test_run_order_by(tmp_path: Path, order_by: str, q1_docs, q1_ranks, q1_scores) -> None:
    path = tmp_path / "run.trec"
    path.write_text(RUN_DISAGREEING)
    with pytest.raises(DataError, match=r'order_by="rank" or order_by="score"') as info:
        read_run(path)
    assert info.value.line == 2  # rank 2 (line 2) outscores rank 1 (line 3)
    run = read_run(path, order_by=order_by)
    assert run["query_id"].tolist() == ["q2"] + ["q1"] * 4  # first-appearance query order
    q1 = run[run["query_id"] == "q1"]
    assert (q1["doc_id"].tolist(), q1["rank"].tolist(), q1["score"].tolist()) == (q1_docs, q1_ranks, q1_scores)


def test_run_sorted_by_rank_and_score_ties_accepted(tmp_path: Path) -> None:
    path = tmp_path / "run.trec"
    path.write_text("q Q0 c 3 1.0 t\nq Q0 a 1 2.0 t\nq Q0 b 2 2.0 t\n")
    run = read_run(path)
    assert run["doc_id"].tolist() == ["a", "b", "c"]
    assert run["rank"].tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="order_by"):
        read_run(path, order_by="scores")


def test_topics_and_jsonl_passages(tmp_path: Path) -> None:
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\t what is x \r\n2\tcafé ☕\r\n")
    assert read_topics(topics) == {"1": "what is x", "2": "café ☕"}
    passages = tmp_path / "p.jsonl"
    passages.write_text('{"docid": "d1", "text": "a"}\n{"_id": 2, "contents": "b"}\n{"id": "d1", "passage": "a"}\n')
    assert read_passages(passages) == {"d1": "a", "2": "b"}


def test_check_queries_known() -> None:
    df = pd.DataFrame({"query_id": [str(i) for i in (1, 2, 3, 4, 5, 6, 7, 7)]})
    check_queries_known(df, {str(i) for i in range(1, 8)}, "run.trec")
    check_queries_known(df, {str(i): "t" for i in range(1, 8)}, "run.trec")
    with pytest.raises(DataError) as info:
        check_queries_known(df, {"1"}, "run.trec")
    assert str(info.value) == (
        "run.trec: 6 query id(s) not in the topics: 2, 3, 4, 5, 6 (and 1 more); expected every query to have a topic"
    )


# --------------------------------------------------------------------------- real TREC DL files

YEARS = {  # year: (qrels, topics, bm25 run, judged queries, qrels lines, topics)
    "dl19": ("qrels.dl19-passage.txt", "topics.dl19-passage.txt", "bm25.dl19.top100.trec", 43, 9260, 43),
    "dl20": ("qrels.dl20-passage.txt", "topics.dl20.txt", "bm25.dl20.top100.trec", 54, 11386, 200),
}


@pytest.mark.parametrize("year", sorted(YEARS))
def test_real_trec_dl(trec_dl_files: Path, year: str) -> None:
    """The TREC DL files shipped with the package."""
    trec_dl_dir = trec_dl_files
    qrels_f, topics_f, run_f, n_queries, n_qrels, n_topics = YEARS[year]
    qrels = read_qrels(trec_dl_dir / qrels_f)
    assert (qrels["query_id"].nunique(), len(qrels)) == (n_queries, n_qrels)
    assert set(qrels["relevance"]) == {0, 1, 2, 3}
    topics = read_topics(trec_dl_dir / topics_f)
    assert len(topics) == n_topics
    check_queries_known(qrels, topics, trec_dl_dir / qrels_f)

    run = read_run(trec_dl_dir / run_f)  # order_by=None: must accept DL20 42255's tied scores
    sizes = run.groupby("query_id").size()
    assert len(sizes) == n_queries and (sizes == 100).all()
    assert set(run["query_id"]) == set(qrels["query_id"])
    check_queries_known(run, topics, trec_dl_dir / run_f)
    for _, hits in run.groupby("query_id", sort=False):
        assert hits["rank"].tolist() == list(range(1, 101))

    for reranker in sorted((trec_dl_dir / "reranker-runs").glob(f"*.{year}.trec")):
        reranked = read_run(reranker)
        assert len(reranked) == len(run), reranker.name
        assert set(zip(reranked["query_id"], reranked["doc_id"])) == set(zip(run["query_id"], run["doc_id"]))


@pytest.mark.parametrize("year", sorted(YEARS))
def test_real_trec_dl_passages(trec_dl_dir: Path, trec_dl_files: Path, year: str) -> None:
    """The passage texts (not shipped) cover every pool document."""
    run = read_run(trec_dl_files / YEARS[year][2])
    passages = read_passages(trec_dl_dir / "passages" / f"bm25.{year}.top100.passages.json")
    assert set(run["doc_id"]) <= set(passages)
    assert all(passages[d].strip() for d in run["doc_id"])


def test_real_dl20_tied_scores(trec_dl_files: Path) -> None:
    trec_dl_dir = trec_dl_files
    run = read_run(trec_dl_dir / "bm25.dl20.top100.trec")
    q = run[run["query_id"] == "42255"].set_index("rank")["score"]
    assert q[18] == q[19] and q[23] == q[24] and q[59] == q[60]
    assert q.is_monotonic_decreasing
    assert len(list((trec_dl_dir / "reranker-runs").glob("*.trec"))) == 4


@pytest.mark.parametrize("name", ["qrels.txt.gz", "qrels.txt"])  # told apart by content, whatever the name says
def test_gzip_files_are_read_transparently_with_line_numbers_of_their_text(
    tmp_path: Path, trec_dl_files: Path, name
) -> None:
    import gzip

    plain = trec_dl_files / "qrels.dl19-passage.txt"
    packed = tmp_path / name
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    pd.testing.assert_frame_equal(read_qrels(packed), read_qrels(plain))
    lines = plain.read_text(encoding="utf-8").splitlines()
    lines[6] = lines[6].rsplit(" ", 1)[0] + " 7"  # line 7 gets a label outside 0..3
    packed.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(DataError) as err:
        read_qrels(packed)
    assert str(err.value) == f"{packed}:7: expected a relevance label in 0..3, got 7"
    packed.write_bytes(gzip.compress(plain.read_bytes())[:200])  # cut short
    with pytest.raises(
        DataError, match=rf"^{packed}: is gzip-compressed but cannot be decompressed .*expected a complete \.gz file"
    ):
        read_qrels(packed)
