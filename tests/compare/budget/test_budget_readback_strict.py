"""The assessors' labels of a budget plan are read strictly: ASCII 0-3 only, only the template's pairs, every
selected query whole or absent, a spreadsheet's byte-order mark accepted; and the package's qrels readers share
one reader (data/trec.qrels_fields) with the same strict labels."""

from __future__ import annotations

import re

import pytest

from budget_labels import label_from_human
from judgebench.compare.budget import files as budget_files
from judgebench.compare.budget import plan as budget_plan
from judgebench.data import trec
from judgebench.exceptions import CompareError, DataError


@pytest.fixture
def planned(toy_cell, tmp_path):  # noqa: F811
    plan = budget_plan.make(toy_cell["cell"], "uniform", 6, seed=1)
    files = budget_files.write([plan], toy_cell["labels"], tmp_path)
    rows = budget_files.read_plan(files[0])
    filled = label_from_human(files[1], toy_cell["human"], tmp_path / "all.txt").read_text().splitlines()
    return rows, budget_files.templates(rows, toy_cell["labels"]), filled, files[1].name


def _read(tmp_path, rows, template, lines: list[str], prefix: bytes = b""):
    path = tmp_path / "labels.txt"
    path.write_bytes(prefix + ("\n".join(lines) + "\n").encode("utf-8"))
    return budget_files.read_labels(path, rows, template)


def _estimates(toy_cell, rows, qrels):  # noqa: F811
    est = budget_files.readback([toy_cell["cell"]], rows, qrels, toy_cell["runs"])
    return est[est["target"] == "mean"].set_index("system")["estimate"]


@pytest.mark.parametrize("label", ["²", "٣", "+3", "03", "3.0"])
def test_a_label_other_than_an_ascii_digit_0_to_3_is_one_line(planned, tmp_path, label):
    rows, template, filled, _ = planned
    q, it, d, _ = filled[0].split()
    with pytest.raises(
        CompareError, match=rf"labels.txt, line 1: label '{re.escape(label)}': expected a whole number 0 to 3"
    ):
        _read(tmp_path, rows, template, [f"{q} {it} {d} {label}", *filled[1:]])


def test_a_pair_the_template_never_asked_for_is_one_line_naming_the_template(planned, tmp_path):
    rows, template, filled, name = planned
    q = filled[0].split()[0]
    with pytest.raises(
        CompareError,
        match=rf"labels.txt, line {len(filled) + 1}: pair \({q}, d999\) is not one the template "
        rf"asked for \({name}\)",
    ):
        _read(tmp_path, rows, template, [*filled, f"{q} 0 d999 3"])


def test_a_query_with_deleted_lines_is_one_line_and_a_query_deleted_whole_reads_back(
    toy_cell,  # noqa: F811 (the imported fixture)
    planned,
    tmp_path,
):
    rows, template, filled, name = planned
    q = filled[0].split()[0]
    of_q = [ln for ln in filled if ln.split()[0] == q]
    assert len(of_q) >= 2
    partial = [ln for ln in filled if ln != of_q[-1]]
    with pytest.raises(
        CompareError, match=rf"line 1: query '{q}' has {len(of_q) - 1} of the {len(of_q)} pairs of {name} labelled"
    ):
        _read(tmp_path, rows, template, partial)
    # the whole query deleted: a smaller sample, the same numbers as the lenient reader gives on those lines
    without = [ln for ln in filled if ln.split()[0] != q]
    strict = _estimates(toy_cell, rows, _read(tmp_path, rows, template, without))
    lenient = _estimates(toy_cell, rows, _read(tmp_path, rows, None, without))
    assert (strict == lenient).all()


def test_a_byte_order_mark_is_accepted(toy_cell, planned, tmp_path):  # noqa: F811
    rows, template, filled, _ = planned
    with_bom = _read(tmp_path, rows, template, filled, prefix=b"\xef\xbb\xbf")
    plain = _read(tmp_path, rows, template, filled)
    assert with_bom.equals(plain) and len(plain) == len(filled)


def test_the_package_qrels_readers_take_ascii_integer_labels_only(tmp_path):
    path = tmp_path / "q.txt"
    path.write_bytes(b"\xef\xbb\xbfq1 0 d1 2\nq1 0 d2 0\n")
    assert trec.read_qrels(path)["relevance"].tolist() == [2, 0]
    for bad in ("\u0663", "1_0", "\u00b2"):
        path.write_text(f"q1 0 d1 {bad}\n", encoding="utf-8")
        with pytest.raises(DataError, match="expected an integer relevance label"):
            trec.read_qrels(path)
        with pytest.raises(DataError, match="expected an integer relevance label"):
            trec.read_judge_qrels(path)
