"""+experiment=dl_llm_judges: real LLM labels of every NIST-judged DL19/DL20 pair (../shared/data/llm-qrels-dl), each
judge on its own label scale, checked against numbers recomputed here from the shared files by plain reference code
(tests/helpers/reference_impl.py): judged-only nDCG@10 over the BM25 pool with the ideal DCG from the judge's own
labels, and Cohen's kappa on the merged pairs (binary judges: relevant or not, humans at >= 2; UMBRELA: 0-3).

The fast test runs a few cells of one year through the real pipeline; the slow one runs the whole experiment and its
report (Table 1 of both years for the four judges, Table 2's kappas). Both skip without ../shared (fail under CI).
"""

from __future__ import annotations

import math

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from cli_runner import ERROR_PREFIX, REPO, run, warm_store
from judgebench.data.trec_dl import SHIPPED
from reference_impl import cohen_kappa, ndcg10_judged
from shared_data import need_shared

# judge config -> (name in the report, file stem, scale)
JUDGES = {
    "dl_umbrela_gpt4": ("umbrela-gpt4", "umbrela-gpt4", "graded"),
    "dl_binary_gpt4": ("binary-gpt4", "binary-gpt4", "binary"),
    "dl_binary_gpt4o": ("binary-gpt4o", "binary-gpt4o", "binary"),
    "dl_binary_llama32": ("binary-llama3.2", "binary-llama3.2", "binary"),
}
RUN_FILES = {
    "BM25": "bm25.{ds}.top100.trec",
    "RankGPT-gpt-3.5": "reranker-runs/rankgpt-gpt-3.5-turbo.bm25top100.{ds}.trec",
    "RankVicuna-7B": "reranker-runs/rankvicuna-7b.bm25top100.{ds}.trec",
}


def _qrels(path) -> dict[tuple[str, str], int]:
    frame = pd.read_csv(path, sep=r"\s+", header=None, names=["q", "it", "d", "label"], dtype=str)
    return {(q, d): int(r) for q, d, r in zip(frame["q"], frame["d"], frame["label"])}


def _run(path) -> list[tuple[str, str, int]]:
    frame = pd.read_csv(path, sep=r"\s+", header=None, names=["q", "it", "d", "rank", "score", "tag"], dtype=str)
    return [(q, d, int(r)) for q, d, r in zip(frame["q"], frame["d"], frame["rank"])]


class Reference:
    """What every number of a (dataset, judge) should be, from the shared files alone."""

    def __init__(self, dataset: str, stem: str, scale: str):
        folder = need_shared("data/llm-qrels-dl", "the real LLM labels of TREC DL 2019/2020")
        human = _qrels(SHIPPED / f"qrels.{dataset}-passage.txt")
        pool = {(q, d) for q, d, _ in _run(SHIPPED / f"bm25.{dataset}.top100.trec")}
        self.queries = sorted({q for q, _ in human})
        self.label_set = {p: h for p, h in human.items() if p in pool}  # what every judge is asked for
        own = _qrels(folder / f"{stem}.{dataset}.txt")
        self.judge = {p: own[p] for p in self.label_set if p in own}  # a missing pair is a failure, not a 0
        self.scale = scale

    def ndcg(self, run_rows) -> float:
        """Judged-only nDCG@10 under the judge's labels; binary 1 counts as human level 2 (any positive gain gives the
        same value: the ideal DCG comes from the same labels)."""
        gain = (lambda x: 2 * x) if self.scale == "binary" else (lambda x: x)
        per_query = ndcg10_judged(run_rows, [(q, d, gain(r)) for (q, d), r in self.judge.items()], self.queries)
        return sum(per_query.values()) / len(self.queries)

    def kappa_relevant(self) -> float:
        """Relevant or not on both sides: the judge's label as a human level (binary 1 -> 2) >= 2, the humans' >= 2."""
        level = (lambda x: 2 * x) if self.scale == "binary" else (lambda x: x)
        pairs = list(self.judge)
        return cohen_kappa(
            [int(level(self.judge[p]) >= 2) for p in pairs], [int(self.label_set[p] >= 2) for p in pairs]
        )

    def kappa(self) -> float:
        pairs = list(self.judge)
        if self.scale == "binary":
            return cohen_kappa([int(self.judge[p] == 1) for p in pairs], [int(self.label_set[p] >= 2) for p in pairs])
        return cohen_kappa([self.judge[p] for p in pairs], [self.label_set[p] for p in pairs])


def _args(store, experiment: str) -> list[str]:
    return [
        f"tracking_uri=sqlite:///{store}/mlflow.db",
        f"artifact_root={store}/artifacts",
        f"cache_dir={store}/cache",
        "progress=false",
        f"experiment_name={experiment}",
        f"hydra.sweep.dir={store}/sweep",
    ]


def test_a_few_cells_of_dl19_score_as_the_shared_files_say(tmp_path_factory):
    """Four cells through the real pipeline (run from the checkout, so the labels are found at ../shared): each
    judge's nDCG@10 and its judge-summary kappa on its own scale, as recomputed from the files."""
    need_shared("data/llm-qrels-dl", "the real LLM labels of TREC DL 2019/2020")
    store = warm_store(tmp_path_factory)
    res = run(
        [
            "-m",
            "+experiment=dl_llm_judges",
            *_args(store, "few"),
            "dataset=dl19",
            "+system=bm25,rankgpt_gpt35",
            "judge=dl_umbrela_gpt4,dl_binary_gpt4",
        ],
        cwd=REPO,
    )
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    exp = client.get_experiment_by_name("few").experiment_id
    jobs = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'job'")
    assert len(jobs) == 4
    for r in jobs:
        config = next(c for c, v in JUDGES.items() if v[0] == r.data.tags["judge"])
        ref = Reference("dl19", *JUDGES[config][1:])
        rows = _run(SHIPPED / RUN_FILES[r.data.tags["ranker"]].format(ds="dl19"))
        assert r.data.metrics["ndcg10_judge"] == pytest.approx(ref.ndcg(rows), abs=1e-9), r.data.tags["judge"]
        assert r.data.tags["ranker_family"] == {"BM25": "lexical", "RankGPT-gpt-3.5": "openai"}[r.data.tags["ranker"]]
        summary = client.get_run(r.data.tags["judgebench.judge_summary"]).data.metrics
        assert summary["kappa_relevant"] == pytest.approx(ref.kappa_relevant(), abs=1e-9)
        if JUDGES[config][2] == "binary":
            assert math.isnan(summary["kappa_graded"]) and math.isnan(summary["alpha_ordinal"])  # not comparable
            assert summary["labelled_pairs"] == len(ref.judge) < len(ref.label_set)  # GPT-4 left a pair unlabelled
        else:
            assert summary["kappa_graded"] == pytest.approx(ref.kappa(), abs=1e-9)


@pytest.mark.slow  # ~3 min idle (90 cells and the report; ~10 min on a loaded 2-core machine)
def test_the_experiment_and_its_report(tmp_path_factory, tmp_path):
    """The front-door command: Table 1 of both years for the four LLM judges (every system, the oracles' runs read
    from their cells' run files), Table 2's kappa per judge on its own scale, and the per-judge inversion findings."""
    need_shared("data/llm-qrels-dl", "the real LLM labels of TREC DL 2019/2020")
    store = warm_store(tmp_path_factory)
    res = run(["-m", "+experiment=dl_llm_judges", *_args(store, "dl_llm_judges")], cwd=REPO, timeout=1800)
    assert res.rc == 0, res
    out = tmp_path / "report"
    res = run(
        ["experiment=dl_llm_judges", f"tracking_uri=sqlite:///{store}/mlflow.db", f"out={out}", "bootstrap=0"],
        cwd=tmp_path,
        module="judgebench.compare",
        timeout=900,
    )
    assert res.rc == 0, res
    client = MlflowClient(f"sqlite:///{store}/mlflow.db")
    exp = client.get_experiment_by_name("dl_llm_judges").experiment_id
    jobs = client.search_runs([exp], filter_string="tags.`judgebench.kind` = 'job'", max_results=1000)
    assert len(jobs) == 2 * 9 * 5
    table2 = pd.read_csv(out / "table2.csv").set_index(["dataset", "judge"])
    for dataset in ("dl19", "dl20"):
        table1 = pd.read_csv(out / f"table1_{dataset}.csv", index_col=0)
        assert len(table1) == 9
        for config, (name, stem, scale) in JUDGES.items():
            ref = Reference(dataset, stem, scale)
            for r in (r for r in jobs if r.data.tags["dataset"] == dataset and r.data.tags["judge"] == name):
                system = r.data.tags["system"]
                rows = _run(client.download_artifacts(r.info.run_id, "run.trec", str(tmp_path)))
                if system in RUN_FILES:  # the file systems returned their shipped runs
                    assert rows == _run(SHIPPED / RUN_FILES[system].format(ds=dataset))
                assert table1.at[system, name] == pytest.approx(ref.ndcg(rows), abs=5e-5), (dataset, name, system)
            column = "kappa_relevant" if scale == "binary" else "kappa_graded"
            assert table2.at[(dataset, name), column] == pytest.approx(ref.kappa(), abs=5e-5), (dataset, name)
            if scale == "binary":
                assert math.isnan(table2.at[(dataset, name), "kappa_graded"])
    report = (out / "report.md").read_text(encoding="utf-8")
    for name, *_ in JUDGES.values():
        assert f"dl19 / {name}" in report and "LLM and oracle rankers" in report
    assert "tau_topK" in report and ERROR_PREFIX not in res.err
