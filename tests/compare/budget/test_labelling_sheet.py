"""The assessor's sheet (compare/budget/labelling_sheet.py): written for a small plan on toy, filled from the
held-back human
qrels, read back through compare's read-back: the same estimates as the qrels template filled the same way."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from budget_labels import label_from_human
from judgebench.compare import report
from judgebench.compare.budget import files as budget_files
from judgebench.compare.budget import labelling_sheet
from judgebench.compare.budget import plan as budget_plan
from judgebench.data.datasets import load_toy
from judgebench.exceptions import CompareError


def _fill(sheet, human, path, skip=()):
    """What an assessor sends back: the sheet, label column filled with the human label (queries in ``skip`` left
    empty), saved as a spreadsheet would (csv's quoting, tabs)."""
    h = {(str(q), str(d)): int(r) for q, d, r in human[["query_id", "doc_id", "relevance"]].itertuples(index=False)}
    out = io.StringIO()
    w = csv.writer(out, delimiter="\t", lineterminator="\r\n")
    header = None
    for cells in csv.reader(io.StringIO(sheet.read_text(encoding="utf-8")), delimiter="\t"):
        if header is None and cells[0].startswith("#"):
            w.writerow(cells)
            continue
        if header is None:
            header = cells
        elif cells[0] not in skip:
            cells[2] = str(h[(cells[0], cells[1])])
        w.writerow(cells)
    path.write_text(out.getvalue(), encoding="utf-8")
    return path


@pytest.mark.parametrize("strategy", ["uniform", "active"])
def test_a_filled_sheet_reads_back_as_the_filled_template(toy_cell, strategy, tmp_path):  # noqa: F811
    cell = toy_cell["cell"]
    plan = budget_plan.make(cell, strategy, 6, seed=3)
    files = budget_files.write([plan], toy_cell["labels"], tmp_path)
    ds = load_toy()
    texts = labelling_sheet.Texts(ds.queries, ds.corpus)
    tsv, page = labelling_sheet.write_sheet(
        "toy",
        "sim",
        labelling_sheet.plan_pairs(plan, toy_cell["labels"]),
        texts,
        tmp_path,
        "judgebench-compare experiment=e calibration.human_labels=labels.tsv",
    )
    # the sheet holds exactly the template's pairs, with the query and passage texts and the scale in words
    template = [ln.split("\t")[0:3:2] for ln in files[1].read_text(encoding="utf-8").splitlines()]
    rows = list(csv.reader(io.StringIO(tsv.read_text(encoding="utf-8")), delimiter="\t"))
    body = [r for r in rows if not r[0].startswith("#")]
    assert body[0] == labelling_sheet.COLUMNS and [r[:2] for r in body[1:]] == template
    q, d = body[1][0], body[1][1]
    assert body[1][2] == "" and body[1][3] == ds.queries[q] and body[1][4] == " ".join(ds.corpus[d].split())
    text = tsv.read_text(encoding="utf-8")
    assert (
        "3 = Perfectly relevant" in text and "0 = Irrelevant" in text and "calibration.human_labels=labels.tsv" in text
    )
    page_text = page.read_text(encoding="utf-8")
    assert "Perfectly relevant" in page_text and ds.queries[q] in page_text and "labels.tsv" in page_text
    assert "<script" not in page_text

    rows_plan = budget_files.read_plan(files[0])
    chosen = [x for x, s in zip(plan.queries, plan.selected) if s]
    skip = chosen[:1]  # a query left out entirely: not sampled, in both paths
    filled = _fill(tsv, toy_cell["human"], tmp_path / "labels.tsv", skip)
    assert labelling_sheet.is_sheet(filled) and not labelling_sheet.is_sheet(files[1])
    from_sheet = labelling_sheet.read(filled, rows_plan)
    qrels_file = label_from_human(files[1], toy_cell["human"], tmp_path / "labels.txt")
    qrels_file.write_text(
        "".join(ln for ln in qrels_file.read_text().splitlines(keepends=True) if ln.split()[0] not in skip)
    )
    from_qrels = budget_files.read_labels(qrels_file, rows_plan)
    assert (
        from_sheet.sort_values(["query_id", "doc_id"])
        .reset_index(drop=True)
        .equals(from_qrels.sort_values(["query_id", "doc_id"]).reset_index(drop=True))
    )
    a = budget_files.readback([cell], rows_plan, from_sheet, toy_cell["runs"])
    b = budget_files.readback([cell], rows_plan, from_qrels, toy_cell["runs"])
    assert a["labelled_queries"].iloc[0] == len(chosen) - 1
    assert np.allclose(a["estimate"].astype(float), b["estimate"].astype(float), atol=0, rtol=0)
    assert np.allclose(a["high"].astype(float), b["high"].astype(float), atol=0, rtol=0)


def test_bad_sheets_name_the_file_and_line(toy_cell, tmp_path):  # noqa: F811
    plan = budget_plan.make(toy_cell["cell"], "uniform", 4, seed=0)
    rows_plan = budget_files.read_plan(budget_files.write([plan], toy_cell["labels"], tmp_path)[0])
    pairs = labelling_sheet.plan_pairs(plan, toy_cell["labels"])
    tsv, _ = labelling_sheet.write_sheet("toy", "sim", pairs, labelling_sheet.Texts(), tmp_path, "read back")
    lines = tsv.read_text(encoding="utf-8").splitlines()
    first = next(n for n, ln in enumerate(lines) if ln.startswith("query_id")) + 1  # 0-based index of the first pair
    q = pairs["query_id"].iloc[0]
    rest_of_q = [n for n in range(first, len(lines)) if lines[n].startswith(q + "\t")]

    def with_labels(values: dict[int, str]):
        out = []
        for n, ln in enumerate(lines):
            cells = ln.split("\t")
            if n in values:
                cells[2] = values[n]
            out.append("\t".join(cells))
        path = tmp_path / "filled.tsv"
        path.write_text("\n".join(out) + "\n", encoding="utf-8")
        return path

    with pytest.raises(CompareError, match=rf"filled.tsv, line {rest_of_q[1] + 1}: query '{q}' is labelled in part"):
        labelling_sheet.read(with_labels({rest_of_q[0]: "2"}), rows_plan)
    with pytest.raises(CompareError, match=rf"line {first + 1}: label '5': expected a whole number 0 to 3"):
        labelling_sheet.read(with_labels({first: "5"}), rows_plan)
    with pytest.raises(CompareError, match="no labels in it"):
        labelling_sheet.read(with_labels({}), rows_plan)
    assert "(not here: doc " in lines[first]  # no passage texts: the doc id and a note


def test_texts_of_a_dataset_by_its_config_name():
    toy = labelling_sheet.load_texts("toy")
    ds = load_toy()
    assert dict(toy.queries) == dict(ds.queries) and toy.passages[next(iter(ds.corpus))] and not toy.note
    assert "not one of judgebench's dataset configs" in labelling_sheet.load_texts("my_own").note


def test_a_report_folder_keeps_only_the_last_reports_files(tmp_path):
    """A compare of DL19 alone after one of DL19 and DL20 into the same folder: table1_dl20.csv goes; a file a
    person saved there (labels.tsv) stays."""
    for name in ("table1_dl19.csv", "table1_dl20.csv", "labels.tsv"):
        (tmp_path / name).write_text("x")
    report._prune(tmp_path, [tmp_path / "table1_dl19.csv", tmp_path / "table1_dl20.csv"])
    report._prune(tmp_path, [tmp_path / "table1_dl19.csv"])
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == ["labels.tsv", "table1_dl19.csv"]
