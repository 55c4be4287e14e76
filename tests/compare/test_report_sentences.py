"""Round 5's weak report cases (class 3, "a sentence where one is due"): the title shows a name as written (no
doubled backslashes), a 2,500-character name wraps inside report.html, and the read-back command a plan prints is
the whole command: the same store (its URI masked) and the same selection."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from judgebench.compare.base.report_model import Options
from judgebench.compare.renderers import html
from judgebench.compare.renderers.markdown import report_title
from judgebench.compare.sections.budget_plan import readback_command
from judgebench.compare.sections.header import plain_title


def test_sentence_the_title_shows_backslashes_as_written(tmp_path):
    name = "runs\\2024\\dl19"
    page = html.render(report_title(name, None) + "\n\ntext\n", tmp_path, {}, f"judgebench compare: {name}")
    h1 = re.search(r"<h1[^>]*>(.*?)</h1>", page, re.S).group(1)
    assert "'runs\\2024\\dl19'" in h1 and "\\\\" not in h1
    assert plain_title(name, None) == "judgebench compare: experiment 'runs\\2024\\dl19'"


def test_sentence_a_long_name_wraps_inside_the_page(tmp_path):
    page = html.render(f"# judge {'x' * 2500}\n\ntext\n", tmp_path, {"judges": "y" * 2500}, "t")
    style = re.search(r"<style>(.*?)</style>", page, re.S).group(1)
    body_rule = re.search(r"(?m)^body \{[^}]*\}", style).group(0)
    assert "overflow-wrap: anywhere" in body_rule  # every text (headings, findings, the header box) wraps anywhere
    assert "overflow-wrap: anywhere" in re.search(r"(?m)^th \{[^}]*\}", style).group(0)


def test_sentence_the_readback_command_names_the_store_and_the_selection(tmp_path):
    r = SimpleNamespace(
        experiment="e",
        sweep="s1",
        tracking_uri="https://user:secret@mlflow.example/",
        options=Options(datasets=["dl19", "dl20"], judges=["gpt"]),
    )
    command = readback_command(r, Path(tmp_path / "out" / "plan"))
    assert command == (
        f"judgebench-compare experiment=e tracking_uri=https://***@mlflow.example/ sweep=s1 datasets=dl19,dl20 "
        f"judges=gpt out={tmp_path / 'out'} calibration.human_labels={tmp_path / 'out' / 'plan' / 'labels.tsv'}"
    )
    assert "secret" not in command


def test_sentence_a_trec_grid_sheet_carries_its_passages_from_the_cells_config(tmp_path):
    """A plan on a ``dataset=trec`` grid (dataset.name=mine: no config of judgebench's) loads the texts from the dataset
    node of a cell's logged config.yaml, not a sheet of ids saying "not one of judgebench's dataset configs"."""
    from judgebench.compare.budget import labelling_sheet
    from trec_collection import TEXTS, collection

    files = collection(tmp_path / "c", "tsv")
    config = "dataset:\n  _target_: judgebench.data.trec_files.load_trec\n  name: mine\n" + "".join(
        f"  {k}: {v}\n" for k, v in files.items()
    )
    texts = labelling_sheet.load_texts("mine", config)
    assert not texts.note and dict(texts.passages) == TEXTS and texts.queries["t1"] == "cheap flights to lisbon"
    assert "not one of judgebench's dataset configs" in labelling_sheet.load_texts("mine").note  # what it gave before
