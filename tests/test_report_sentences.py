"""Round 5's weak report cases (class 3, "a sentence where one is due"): the title shows a name as written (no
doubled backslashes), a 2,500-character name wraps inside report.html, and the read-back command a plan prints is
the whole command: the same store (its URI masked) and the same selection."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from judgebench.compare.renderers import html
from judgebench.compare.renderers.markdown import report_title
from judgebench.compare.report_model import Options
from judgebench.compare.sections.header import plain_title
from judgebench.compare.sections.wrapped import readback_command


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
    r = SimpleNamespace(experiment="e", sweep="s1", tracking_uri="https://user:secret@mlflow.example/",
                        options=Options(datasets=["dl19", "dl20"], judges=["gpt"]))
    command = readback_command(r, Path(tmp_path / "out" / "plan"))
    assert command == (f"judgebench-compare experiment=e tracking_uri=https://***@mlflow.example/ sweep=s1 datasets=dl19,dl20 "
                       f"judges=gpt out={tmp_path / 'out'} calibration.human_labels={tmp_path / 'out' / 'plan' / 'labels.tsv'}")
    assert "secret" not in command
