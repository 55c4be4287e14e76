"""Class 2 of round 5: one reader rule for every label and pool source. A pool is cut by position, not rank
value; a duplicate judgment gives the same line whichever loader reads the qrels; an assessor's sheet reads as
spreadsheet tools write it (every field quoted, unquoted, CRLF) and a row it cannot read is an error, not a
query silently "not labelled"; TSV passages refuse an empty text as JSONL does."""

from __future__ import annotations

import uuid
from pathlib import Path

import pandas as pd
import pytest

from judgebench.compare.budget import labelling_sheet
from judgebench.data.trec_files import load_trec
from judgebench.exceptions import CompareError, DataError
from trec_collection import TOPICS, collection


def _files(root: Path, run_lines: list[str]) -> dict[str, str]:
    files = {k: str(v) for k, v in collection(root, passages=None).items()}
    Path(files["pool"]).write_text("".join(run_lines), encoding="utf-8")
    return files


@pytest.mark.parametrize("first, step", [(10, 10), (0, 1)], ids=["ranks-10-20-to-250", "ranks-from-0"])
def test_reader_pool_is_cut_by_position_not_rank_value(tmp_path, first, step):
    docs = [f"d{i}" for i in range(25)] + ["a", "b", "c"]
    lines = [f"{q} Q0 {d} {first + i * step} {100 - i} mine\n" for q in ("t1", "t2") for i, d in enumerate(docs)]
    files = _files(tmp_path, lines)
    whole = load_trec("mine", **files)  # default depth 100: every document of the run
    assert whole.pool.groupby("query_id").size().to_dict() == {"t1": 28, "t2": 28}
    assert whole.pool["rank"].tolist() == list(range(1, 29)) * 2  # ranked 1..n: positions, as every reader counts them
    for depth in (3, 10):
        cut = load_trec("mine", **files, pool_depth=depth)
        assert cut.pool.groupby("query_id").size().to_dict() == {"t1": depth, "t2": depth}
        assert cut.pool["doc_id"].tolist() == docs[:depth] * 2


def test_reader_a_duplicate_judgment_is_one_line_from_trec_files_and_irds_alike(tmp_path):
    ir_datasets = pytest.importorskip("ir_datasets")
    assert ir_datasets
    from judgebench.data.irds import load_irds

    files = collection(tmp_path / "c", "tsv")
    Path(files["qrels"]).write_text("t1 0 a 2\nt1 0 b 0\nt2 0 e 1\nt1 0 a 3\n", encoding="utf-8")
    (tmp_path / "queries.tsv").write_text(TOPICS, encoding="utf-8")
    with pytest.raises(DataError) as trec:
        load_trec("mine", **{k: str(v) for k, v in files.items()})
    with pytest.raises(DataError) as irds:
        load_irds(
            "mine",
            id=f"judgebench-test/{uuid.uuid4().hex[:8]}",
            pool=str(files["pool"]),
            cache_dir=str(tmp_path / "cache"),
            local={
                "docs": str(files["passages"]),
                "queries": str(tmp_path / "queries.tsv"),
                "qrels": str(files["qrels"]),
            },
        )
    assert str(irds.value) == str(trec.value)
    assert str(trec.value) == (
        f"{files['qrels']}:4: duplicate judgment for query t1 doc a (label 3; line 1 has label 2), "
        "expected one judgment per (query, doc)"
    )


def test_reader_tsv_passages_refuse_an_empty_text_as_jsonl_does(tmp_path):
    files = {k: str(v) for k, v in collection(tmp_path, "tsv").items()}
    Path(files["passages"]).write_text("a\tone\nb\t  \nc\tthree\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"passages.tsv:2: doc b: empty text, expected a non-empty passage text"):
        load_trec("mine", **files)


# ------------------------------------------------------------------ the assessor's sheet

PLAN = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "selected": [1, 1, 1]})
ROWS = [
    ("q1", "d1", "2", "what is rye", '"Rye" is a grass, she said'),
    ("q1", "d2", "0", "what is rye", "nothing here"),
    ("q2", "d3", "1", "lisbon flights", '"cheap flights to lisbon, one quote'),
    ("q2", "d4", "3", "lisbon flights", "flights, lisbon"),
    ("q3", "d5", "2", "bake bread", 'knead the dough "well"'),
]
EXPECTED = [(q, d, int(label)) for q, d, label, _, _ in ROWS]


def _sheet(path: Path, quote, newline: str = "\n") -> Path:
    """A filled sheet as a spreadsheet tool saves it: ``quote`` renders each cell."""
    lines = [
        "# Label each passage",
        "\t".join(map(quote, labelling_sheet.COLUMNS)),
        *("\t".join(map(quote, row)) for row in ROWS),
    ]
    path.write_bytes((newline.join(lines) + newline).encode("utf-8"))
    return path


def _quoted(cell: str) -> str:
    return '"' + cell.replace('"', '""') + '"'


def _minimal(cell: str) -> str:
    return _quoted(cell) if '"' in cell else cell


@pytest.mark.parametrize(
    "quote, newline",
    [(str, "\n"), (str, "\r\n"), (_quoted, "\n"), (_quoted, "\r\n"), (_minimal, "\n")],
    ids=["unquoted", "unquoted-crlf", "all-quoted", "all-quoted-crlf", "quoted-as-needed"],
)
def test_reader_a_sheet_reads_as_spreadsheet_tools_write_it(tmp_path, quote, newline):
    path = _sheet(tmp_path / "labels.tsv", quote, newline)
    assert labelling_sheet.is_sheet(path)
    got = labelling_sheet.read(path, PLAN)
    assert list(got.itertuples(index=False, name=None)) == EXPECTED


def test_reader_a_sheet_row_that_cannot_be_read_is_an_error(tmp_path):
    path = _sheet(tmp_path / "labels.tsv", str)
    text = path.read_text(encoding="utf-8").replace(
        "q2\td3\t1\tlisbon flights\t", "q2 d3 1\t"
    )  # cells merged by an editor
    path.write_text(text, encoding="utf-8")
    with pytest.raises(CompareError, match=r"labels.tsv, line 5: 2 tab-separated cells, expected 5"):
        labelling_sheet.read(path, PLAN)
