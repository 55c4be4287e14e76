"""The assessor's sheet: what the planner hands to the people who label (beside its bare qrels template).

Per planned (dataset, judge) two files with the same pairs as ``human_budget_qrels_<dataset>_<judge>.txt``:

- ``labelling_sheet_<dataset>_<judge>.tsv``: a spreadsheet-friendly table (UTF-8, tab-separated, a header row,
  a few ``#`` lines of instructions above it) with ``query_id``, ``doc_id``, an empty ``label`` column, the query
  text and the passage text; the person fills ``label`` (0-3) and saves it as a TSV again;
- ``labelling_sheet_<dataset>_<judge>.html``: the same pairs to read, grouped by query, with the 0-3 scale in
  words and where to save (one self-contained page, nothing fetched).

The texts come from the dataset the grid ran on, loaded again by its configured name (``dataset=<name>``, so
``JUDGEBENCH_TREC_DL_DIR`` is where TREC DL passages are found); where the passages are not here the sheet
carries the doc id and says so. ``read`` takes a filled sheet back (``calibration.human_labels=`` accepts it
as it accepts the qrels file): queries with no label at all are not labelled (not sampled); a query labelled
in part is an error, as is a label outside 0-3, naming the file and the line.
"""

from __future__ import annotations

import csv
import html
import io
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from judgebench.compare.base import names
from judgebench.exceptions import CompareError

COLUMNS = ["query_id", "doc_id", "label", "query", "passage"]
# The TREC Deep Learning track's 0-3 relevance scale, as its assessors were given it.
SCALE = {
    3: "Perfectly relevant: the passage is dedicated to the query and contains the exact answer.",
    2: "Highly relevant: the passage has some answer for the query, but the answer may be a bit unclear, or hidden "
    "amongst extraneous information.",
    1: "Related: the passage seems related to the query but does not answer it.",
    0: "Irrelevant: the passage has nothing to do with the query.",
}


@dataclass
class Texts:
    """What the sheet can show of a dataset: query texts, passage texts (empty when not here) and why not."""

    queries: Mapping[str, str] = field(default_factory=dict)
    passages: Mapping[str, str] = field(default_factory=dict)
    note: str = ""


def sheet_name(dataset: str, judge: str, suffix: str) -> str:
    return f"labelling_sheet_{names.file_part(dataset)}_{names.file_part(judge)}.{suffix}"


def load_texts(dataset: str, config_yaml: str | None = None) -> Texts:
    """The dataset's texts: loaded from the dataset node of a grid cell's own config (``config_yaml``, its logged
    ``config.yaml``: a ``dataset=trec`` or ``irds`` grid names its files there), else by its config name as
    ``judgebench run dataset=<name>`` would; a dataset that cannot be loaded here gives a sheet of ids and a note
    saying why."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate
    from omegaconf import OmegaConf, open_dict

    from judgebench.config.config_dir import CONF_DIR
    from judgebench.data.corpus import available

    if config_yaml:
        try:
            node = OmegaConf.create(config_yaml)["dataset"]
            with open_dict(node):
                node.pop(
                    "relevant_from", None
                )  # a setting of the jobs (jobs/common.py load_dataset), no loader's argument
            ds = instantiate(node)
            if available(ds.corpus):
                return Texts(ds.queries, ds.corpus)
        except Exception:  # noqa: BLE001 (moved files, another machine: the name-based load below says why)
            pass
    if not (CONF_DIR / "dataset" / f"{dataset}.yaml").is_file():
        return Texts(
            note=f"dataset {dataset!r} is not one of judgebench's dataset configs: no query or passage texts here"
        )
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cache = os.environ.get("JUDGEBENCH_CACHE_DIR") or str(
                Path.cwd() / ".cache" / "judgebench"
            )  # as run's default, no Hydra run
            node = compose("config", overrides=[f"dataset={dataset}", f"cache_dir={cache}"]).dataset
            with open_dict(node):
                node.pop(
                    "relevant_from", None
                )  # a setting of the jobs (jobs/common.py load_dataset), no loader's argument
            ds = instantiate(node)
    except Exception as e:  # noqa: BLE001 (the sheet is still written, with ids, and the note says why)
        return Texts(note=f"dataset {dataset!r} could not be loaded here ({type(e).__name__}: {e}): ids only")
    if not available(ds.corpus):
        return Texts(
            ds.queries,
            {},
            f"passage texts of {dataset} are not here (TREC DL: set JUDGEBENCH_TREC_DL_DIR to the "
            "folder holding passages/, see docs/datasets.md): look each passage up by its doc id",
        )
    return Texts(ds.queries, ds.corpus)


def plan_pairs(plan, labels: pd.DataFrame) -> pd.DataFrame:
    """The pairs of the plan's qrels template: the judge's labelled pairs on the selected queries, sorted."""
    chosen = {q for q, s in zip(plan.queries, plan.selected) if s}
    lab = labels[(labels["dataset"] == plan.dataset) & (labels["judge"] == plan.judge)]
    lab = lab[lab["query_id"].astype(str).isin(chosen)].drop_duplicates(["query_id", "doc_id"])
    return lab.sort_values(["query_id", "doc_id"], key=lambda c: c.astype(str))[["query_id", "doc_id"]].astype(str)


def _one_line(text: str) -> str:
    return re.sub(r"\s+", " ", str(text)).strip()


def _instructions(tsv: str, readback: str) -> list[str]:
    return [
        "Label each passage for its query on this scale (the TREC Deep Learning track's):",
        *[f"  {level} = {words}" for level, words in SCALE.items()],
        f"Fill the label column of {tsv} (one whole number 0-3 per row; a query you skip entirely is fine, a query "
        "labelled in part is not) and save it as a tab-separated file under a new name, e.g. labels.tsv.",
        f"Then read it back: {readback}",
    ]


def write_sheet(dataset: str, judge: str, pairs: pd.DataFrame, texts: Texts, out: Path, readback: str) -> list[Path]:
    """The TSV and the HTML page of one plan's pairs."""
    tsv, page = out / sheet_name(dataset, judge, "tsv"), out / sheet_name(dataset, judge, "html")
    rows = [
        (q, d, "", _one_line(texts.queries.get(q, "")), _one_line(texts.passages.get(d, "")) or f"(not here: doc {d})")
        for q, d in pairs.itertuples(index=False)
    ]
    buf = io.StringIO()
    for line in [*_instructions(tsv.name, readback), *([texts.note] if texts.note else [])]:
        buf.write(f"# {line}\n")
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(COLUMNS)
    w.writerows(rows)
    tsv.write_text(buf.getvalue(), encoding="utf-8")
    page.write_text(_page(dataset, judge, rows, texts, tsv.name, readback), encoding="utf-8")
    return [tsv, page]


def _page(dataset: str, judge: str, rows, texts: Texts, tsv: str, readback: str) -> str:
    e = html.escape
    queries: dict[str, list] = {}
    for q, d, _, qt, passage in rows:
        queries.setdefault(q, [qt, []])[1].append((d, passage))
    scale = "".join(f"<li><b>{level}</b> {e(words)}</li>" for level, words in SCALE.items())
    body = "".join(
        f"<h2>Query {e(q)}: {e(qt) or '(query text not here)'}</h2><table><tr><th>doc id</th><th>passage</th>"
        f"<th>label</th></tr>"
        + "".join(f"<tr><td>{e(d)}</td><td>{e(p)}</td><td></td></tr>" for d, p in docs)
        + "</table>"
        for q, (qt, docs) in queries.items()
    )
    note = f"<p class=note>{e(texts.note)}</p>" if texts.note else ""
    return f"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Labelling sheet: {e(dataset)} / {e(judge)}</title><style>
body {{ font-family: system-ui, sans-serif; max-width: 1100px; margin: 1.5em auto; padding: 0 1em; line-height: 1.4; }}
table {{ border-collapse: collapse; width: 100%; }} \
th, td {{ border: 1px solid #ccc; padding: 3px 7px; vertical-align: top; }}
td:last-child {{ width: 4em; }} .how {{ background: #f6f8fa; border: 1px solid #ddd; padding: 4px 14px; }} \
.note {{ color: #a33; }}
</style></head><body><h1>Labelling sheet: {e(dataset)} / {e(judge)}: {len(queries)} queries, {len(rows)} passages</h1>
<div class="how"><p>Label each passage for its query on this scale (the TREC Deep Learning track's):</p><ul>{scale}</ul>
<p>Write the labels into the <code>label</code> column of <code>{e(tsv)}</code> \
(beside this page; it opens in any spreadsheet)
and save it as a tab-separated file under a new name, e.g. <code>labels.tsv</code>. \
Skipping a whole query is fine; a query
labelled in part is not. Then read it back: <code>{e(readback)}</code></p></div>{note}{body}</body></html>
"""


def write(
    plans: list, labels: pd.DataFrame, out: Path, readback: str, configs: Mapping[str, str] | None = None
) -> list[Path]:
    """Every plan's sheet (the texts of each dataset loaded once; ``configs``: a cell's config.yaml per dataset)."""
    texts: dict[str, Texts] = {}
    files = []
    for p in plans:
        if p.dataset not in texts:
            texts[p.dataset] = load_texts(p.dataset, (configs or {}).get(p.dataset))
        t = texts[p.dataset]
        files += write_sheet(p.dataset, p.judge, plan_pairs(p, labels), t, out, readback)
    return files


def counts(plans: list, labels: pd.DataFrame) -> list[str]:
    """What a budget means in work, per plan: the queries selected and the pairs (passages) to label."""
    lines = []
    for p in plans:
        pairs = plan_pairs(p, labels)
        n = pairs["query_id"].nunique()
        lines.append(
            f"sheet {names.plain(p.dataset)}/{names.plain(p.judge)}: budget {p.budget} = {n} queries, "
            f"{len(pairs)} pairs "
            f"(~{len(pairs) / max(n, 1):.0f} a query) -> {sheet_name(p.dataset, p.judge, 'html')}, .tsv"
        )
    return lines


def _cell(text: str) -> str:
    """One cell as a spreadsheet tool wrote it: quoted (``"a ""b"" c"``, as with every field quoted) or as it is (an
    unquoted passage that merely starts with ``"`` stays as it is)."""
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('""', '"')
    return text


def sheet_rows(text: str):
    """(line number, cells) of each physical line of a sheet: one row a line, whatever the quoting. A CSV reader
    would read a passage that starts with ``"`` in an unquoted export as an open quote and swallow the rows after
    it; the sheet's cells never hold a tab or a line break (``write_sheet`` writes each text on one line)."""
    for no, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        yield no, [_cell(c) for c in line.split("\t")]


def is_sheet(path: Path) -> bool:
    """A filled sheet (its header row after the # lines, quoted or not), not a TREC qrels file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return False
    first = next((cells for _, cells in sheet_rows(text) if any(cells) and not cells[0].startswith("#")), [])
    return first[:3] == COLUMNS[:3]


def read(path: Path, plan: pd.DataFrame, levels: int = 4, lines: bool = False) -> pd.DataFrame:
    """A filled sheet as qrels (query_id, doc_id, relevance) of the plan's selected queries (with each row's sheet
    ``line`` when ``lines``, for the read-back's template checks). Labels are ASCII digits: ``str.isdigit()`` and
    ``int()`` would also take '²' and '٣'."""
    chosen = set(plan.loc[plan["selected"] == 1, "query_id"].astype(str))
    text = path.read_text(encoding="utf-8-sig")
    rows, header, by_query = [], None, {}
    for no, cells in sheet_rows(text):
        if (header is None and cells[0].startswith("#")) or not any(c.strip() for c in cells):
            continue
        if header is None:
            if cells[:3] != COLUMNS[:3]:
                raise CompareError(f"{path}, line {no}: expected the sheet's header {', '.join(COLUMNS)}")
            header = cells
            continue
        if not 3 <= len(cells) <= len(header):
            raise CompareError(
                f"{path}, line {no}: {len(cells)} tab-separated cells, expected {len(header)} "
                f"({', '.join(header)}): a row that cannot be read is not left out"
            )
        q, d, label = cells[:3]
        q, d, label = q.strip(), d.strip(), label.strip()
        if q not in chosen:
            raise CompareError(
                f"{path}, line {no}: query {q!r} is not one the plan selected; label only the sheet's rows"
            )
        if label and label not in {str(v) for v in range(levels)}:
            raise CompareError(
                f"{path}, line {no}: label {label!r}: expected a whole number 0 to {levels - 1} (or empty: not "
                "labelled)"
            )
        by_query.setdefault(q, []).append((no, label))
        if label:
            rows.append((q, d, int(label), no))
    for q, entries in by_query.items():
        empty = [no for no, label in entries if not label]
        if empty and len(empty) < len(entries):
            raise CompareError(
                f"{path}, line {empty[0]}: query {q!r} is labelled in part ({len(entries) - len(empty)} of "
                f"{len(entries)} rows): label all its rows or none"
            )
    if not rows:
        raise CompareError(f"{path}: no labels in it (fill the label column with 0-3)")
    out = pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance", "line"])
    dup = out[out.duplicated(["query_id", "doc_id"], keep="first")]
    if len(dup):
        raise CompareError(
            f"{path}, line {dup['line'].iloc[0]}: pair ({dup['query_id'].iloc[0]}, {dup['doc_id'].iloc[0]}) "
            "labelled twice"
        )
    return out if lines else out.drop(columns="line")
