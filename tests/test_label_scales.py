"""A judge's declared label scale (label_scale.py): every statistic reads the judge on its own scale, a label outside
the scale is one line naming the file, the line and the option, and the default scale changes no hash (stores
written before scales existed resume)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from judgebench import label_scale
from judgebench.exceptions import ConfigError, DataError
from judgebench.identity import component_hash
from judgebench.jobs import common
from judgebench.judges.qrels_file import QrelsFileJudge
from judgebench.metrics import label_agreement
from reference_impl import cohen_kappa
from shared_data import need_shared

REPO = Path(__file__).resolve().parents[1]
EXAM = {"labels": [0, 1, 2, 3, 4, 5], "to_human": [0, 0, 1, 1, 2, 3]}


def _qrels(labels, prefix="d"):
    return pd.DataFrame(
        {
            "query_id": [f"q{i % 7}" for i in range(len(labels))],
            "doc_id": [f"{prefix}{i}" for i in range(len(labels))],
            "relevance": labels,
        }
    )


def test_scales_from_their_config_values():
    assert label_scale.parse(None).is_graded and label_scale.parse("graded").is_graded
    binary = label_scale.parse("binary", relevant_from=2)
    assert (binary.labels, binary.to_human, binary.reaches_every_level) == ((0, 1), (0, 2), False)
    exam = label_scale.parse(EXAM)
    assert exam.reaches_every_level and list(exam.human([0, 1, 2, 3, 4, 5])) == [0, 0, 1, 1, 2, 3]
    assert label_scale.parse({"labels": [0, 1, 2], "to_human": {"0": 0, "1": 2, "2": 3}}).to_human == (0, 2, 3)
    assert label_scale.from_tag(exam.tag()) == exam and label_scale.from_tag(None).is_graded
    for bad, says in [
        ("ternary", "expected graded, binary or a map"),
        ({"labels": [0, 1], "to_human": [0]}, "one human level"),
        ({"labels": [0, 1], "to_human": [3, 0]}, "keeps the labels' order"),
        ({"labels": [1, 0], "to_human": [0, 1]}, "increasing"),
    ]:
        with pytest.raises(ConfigError, match=says):
            label_scale.parse(bad)


def test_a_binary_judge_has_only_the_binary_kappa():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 4, 400)
    judge = ((human >= 2) ^ (rng.random(400) < 0.2)).astype(int)
    out = label_agreement(_qrels(judge), _qrels(human), label_scale.parse("binary"))
    assert out["kappa_relevant"] == pytest.approx(cohen_kappa(list(judge), list((human >= 2).astype(int))), abs=1e-12)
    for graded in (
        "kappa_graded",
        "kappa_linear",
        "kappa_ge1",
        "kappa_ge2",
        "kappa_ge3",
        "alpha_ordinal",
        "kappa_query_median",
    ):
        assert math.isnan(out[graded]), graded  # not comparable: never a number read on the 0-3 scale
    assert out["judge_share_1"] == pytest.approx(judge.mean()) and math.isnan(out["judge_share_2"])
    # read on the 0-3 scale (no scale declared) the same labels gave numbers that mean nothing
    assert not math.isnan(label_agreement(_qrels(judge), _qrels(human))["kappa_graded"])
    # another collection's threshold moves the binary kappa's human cut
    at1 = label_agreement(_qrels(judge), _qrels(human), label_scale.parse("binary", relevant_from=1))
    assert at1["kappa_relevant"] == pytest.approx(cohen_kappa(list(judge), list((human >= 1).astype(int))), abs=1e-12)


def test_a_mapped_scale_is_compared_through_its_map():
    rng = np.random.default_rng(1)
    human = rng.integers(0, 4, 300)
    exam = np.clip(2 * human + rng.integers(-1, 2, 300), 0, 5)
    out = label_agreement(_qrels(exam), _qrels(human), label_scale.parse(EXAM))
    mapped = [EXAM["to_human"][x] for x in exam]
    assert out["kappa_graded"] == pytest.approx(cohen_kappa(mapped, list(human)), abs=1e-12)
    assert out["judge_share_3"] == pytest.approx(float((exam == 3).mean()))  # shares: its own labels


def test_the_exam_file_runs_with_its_map_and_is_refused_without():
    folder = need_shared("data/llm-qrels-dl", "the real LLM labels of TREC DL 2019/2020")
    from judgebench.data.trec_dl import load_trec_dl

    dataset = load_trec_dl(name="dl19", year=2019)
    path = folder / "exam-graded-max-gpt4.dl19.txt"
    with pytest.raises(DataError) as refused:
        QrelsFileJudge(path=str(path)).read(dataset)
    message = str(refused.value)
    first = next(n for n, line in enumerate(path.read_text().splitlines(), 1) if int(line.split()[3]) > 3)
    assert message.startswith(f"{path}:{first}: ") and "\n" not in message
    assert "judge.scale={labels:[0,1,2,3,4,5],to_human:[0,0,1,1,2,3]}" in message and "judge.scale=binary" in message
    judge = QrelsFileJudge(path=str(path), scale=EXAM)
    label_set = dataset.label_set()
    result = judge.judge(label_set[["query_id", "doc_id"]], dataset, {})
    own = pd.read_csv(path, sep=r"\s+", header=None, names=["q", "it", "d", "r"], dtype={"q": str, "d": str})
    expected = label_set[["query_id", "doc_id"]].merge(
        own.rename(columns={"q": "query_id", "d": "doc_id"}), on=["query_id", "doc_id"]
    )
    assert len(result.labels) == len(expected) == len(label_set) and result.labels["relevance"].max() == 5
    gains = judge.label_scale().gains(result.qrels).merge(expected, on=["query_id", "doc_id"])
    assert (gains["relevance"] == gains["r"].map(dict(enumerate(EXAM["to_human"])))).all()


def _composed(tmp: Path, *overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        return compose(
            config_name="config",
            overrides=[
                f"tracking_uri=sqlite:///{tmp}/m.db",
                f"artifact_root={tmp}/a",
                f"cache_dir={tmp}/c",
                "experiment_name=unit",
                *overrides,
            ],
        )


def test_the_default_scale_changes_no_hash(tmp_path):
    """Stores written before judge.scale and dataset.relevant_from existed resume: at their defaults the resume key
    and the judge hash are those of the config without them; another scale is another judge."""
    cfg = _composed(tmp_path, "judge=qrels", "judge.path=labels.txt", "dataset=dl19")
    tree = OmegaConf.to_container(cfg, resolve=True)
    assert tree["judge"]["scale"] == "graded" and tree["dataset"]["relevant_from"] == 2
    before = {
        **tree,
        "judge": {k: v for k, v in tree["judge"].items() if k != "scale"},
        "dataset": {k: v for k, v in tree["dataset"].items() if k != "relevant_from"},
    }
    assert common.config_hash(tree, {}) == common.config_hash(before, {})
    assert common.identity_tags(tree)["judge_hash"] == component_hash(before["judge"])
    for other in (
        "judge.scale=binary",
        "judge.scale={labels:[0,1,2,3,4,5],to_human:[0,0,1,1,2,3]}",
        "dataset.relevant_from=1",
    ):
        changed = OmegaConf.to_container(
            _composed(tmp_path, "judge=qrels", "judge.path=labels.txt", "dataset=dl19", other), resolve=True
        )
        assert common.config_hash(changed, {}) != common.config_hash(tree, {}), other
        assert (
            common.identity_tags(changed)["judge_hash"] != common.identity_tags(tree)["judge_hash"]
        ) == other.startswith("judge")


def test_label_entropy_compares_a_binary_judge_with_relevant_or_not():
    """A binary judge's labels (as human levels 0 and 2) against the humans' 0,1,2,3 seen through its scale (0,0,2,2):
    1 bit each, never its 1 bit against the humans' 2 bits of 0-3."""
    from judgebench.compare.sections.label_entropy import label_entropy

    binary = label_scale.parse("binary").tag()
    labels = pd.DataFrame(
        {
            "dataset": "d",
            "judge": "b",
            "text_view": "original",
            "query_id": "q",
            "doc_id": list("1234"),
            "relevance": [0, 2, 2, 0],
            "human": [0, 1, 2, 3],
            "label": [0, 1, 1, 0],
            "scale": binary,
        }
    )
    row = label_entropy(labels).iloc[0]
    assert (row["judge_bits"], row["human_bits"]) == (pytest.approx(1.0), pytest.approx(1.0))
    assert row["scale"].startswith("binary")
    graded = label_entropy(labels.drop(columns=["scale", "label"])).iloc[0]  # a run logged before scales: graded
    assert graded["human_bits"] == pytest.approx(2.0)


def test_the_early_file_check_reads_the_declared_scale(tmp_path):
    """run.py checks a file judge's labels before any import or store (checks/input_checks.py): with the judge's
    declared scale, so the EXAM config passes and the same file under the default scale is the one line naming
    judge.scale."""
    from judgebench.checks.input_checks import check_config_files

    folder = need_shared("data/llm-qrels-dl", "the real LLM labels of TREC DL 2019/2020")
    check_config_files(_composed(tmp_path, "dataset=dl19", "judge=dl_exam_gpt4", f"judge.root={folder}"))
    check_config_files(_composed(tmp_path, "dataset=dl20", "judge=dl_binary_gpt4o", f"judge.root={folder}"))
    with pytest.raises(
        DataError, match=r"exam-graded-max-gpt4\.dl19\.txt:\d+: .*label [45] is outside 0\.\.3.*judge\.scale="
    ):
        check_config_files(
            _composed(tmp_path, "dataset=dl19", "judge=qrels", f"judge.path={folder}/exam-graded-max-gpt4.dl19.txt")
        )
    with pytest.raises(DataError, match=r"is outside 0\.\.1.*declared judge\.scale is binary"):
        check_config_files(
            _composed(
                tmp_path,
                "dataset=dl19",
                "judge=qrels",
                "judge.scale=binary",
                f"judge.path={folder}/umbrela-gpt4.dl19.txt",
            )
        )
