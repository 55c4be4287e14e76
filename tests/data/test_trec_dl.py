"""The real TREC DL 2019/2020 files through the whole pipeline: the paper's human-judged facts."""

import pytest

from judgebench.data.trec_dl import load_trec_dl
from judgebench.evaluation import cut
from judgebench.exceptions import DataError
from judgebench.metrics import per_query_ndcg
from judgebench.rankers.bm25 import BM25Ranker
from judgebench.rankers.oracle import OracleRanker
from judgebench.rankers.perturbation import Perturbation
from judgebench.rankers.runfile import RunFileRanker

ORACLES = [
    ("Perfect", []),
    ("Swap[3]", [3]),
    ("Swap[2]", [2]),
    ("Swap[1]", [1]),
    ("Swap[2,3]", [2, 3]),
    ("Swap[1,2]", [1, 2]),
]
FACTS = {  # year: (queries, pool ∩ qrels, BM25, Perfect, RankGPT, RankVicuna)
    2019: (43, 2257, 0.5058, 0.8922, 0.6832, 0.6730),
    2020: (54, 2859, 0.4829, 0.8707, 0.6441, 0.6619),
}


@pytest.fixture(scope="module", params=[2019, 2020])
def dl(request):
    """The shipped files only: nothing in this module reads a passage text."""
    year = request.param
    return year, load_trec_dl(f"dl{year % 100}", year)


def test_counts(dl):
    year, ds = dl
    queries, judged_pairs = FACTS[year][:2]
    summary = ds.summary()
    assert summary["judged_queries"] == len(ds.queries) == queries
    assert summary["pool_judged"] == len(ds.label_set()) == judged_pairs
    assert summary["pool_size"] == queries * 100


def test_bm25_is_the_pool_and_scores_as_published(dl, tmp_path):
    year, ds = dl
    run = BM25Ranker(name="BM25", cache_dir=str(tmp_path), progress=False).rank(ds, ds.corpus)
    assert per_query_ndcg(run, ds.qrels)["value"].mean() == pytest.approx(FACTS[year][2], abs=1e-4)


def test_oracles_score_and_order_as_the_paper(dl):
    year, ds = dl
    perfect = OracleRanker(name="Oracle").rank(ds, ds.corpus)
    values = [per_query_ndcg(cut(Perturbation(n, s).apply(perfect), 10), ds.qrels)["value"].mean() for n, s in ORACLES]
    assert values[0] == pytest.approx(FACTS[year][3], abs=1e-4)
    assert all(a > b for a, b in zip(values, values[1:])), dict(zip([n for n, _ in ORACLES], values))


def test_real_llm_reranker_runs(dl, trec_dl_files):
    year, ds = dl
    for stem, expected in (("rankgpt-gpt-3.5-turbo", FACTS[year][4]), ("rankvicuna-7b", FACTS[year][5])):
        path = trec_dl_files / "reranker-runs" / f"{stem}.bm25top100.dl{year % 100}.trec"
        run = RunFileRanker(name=stem, kind="llm", path=str(path)).rank(ds, ds.corpus)
        assert per_query_ndcg(run, ds.qrels)["value"].mean() == pytest.approx(expected, abs=1e-3)


def test_texts_are_read_only_when_needed_and_online_mode_fails_clearly(
    trec_dl_files, tmp_path, monkeypatch, no_network
):
    # one file overridden, the rest shipped; without passages the corpus says how to get them when read
    ds = load_trec_dl("dl19", 2019, qrels=str(trec_dl_files / "qrels.dl19-passage.txt"))
    assert len(ds.label_set()) == 2257 and ds.summary()["corpus"].startswith("not available")
    with pytest.raises(
        DataError, match=r"passage texts of dl19 are not shipped .* dataset.data_dir=DIR or JUDGEBENCH_TREC_DL_DIR"
    ):
        ds.corpus[ds.pool["doc_id"].iloc[0]]
    with pytest.raises(DataError, match="year 2021 is not a TREC DL passage year"):
        load_trec_dl("dl21", 2021)
    # offline whatever the machine's network (the no_network fixture): the download fails instead of fetching 2 GB
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path / "ird"))
    with pytest.raises(DataError, match="ir_datasets could not provide msmarco-passage/trec-dl-2019/judged"):
        load_trec_dl("dl19", 2019, cache_dir=str(tmp_path), online=True)


def test_qrels_of_another_dataset_are_refused(trec_dl_files):
    with pytest.raises(DataError, match="no query of these qrels is in the topics"):
        load_trec_dl("dl19", 2019, qrels=str(trec_dl_files / "qrels.dl20-passage.txt"))


def test_the_passage_texts_load_from_a_data_dir(trec_dl_dir):
    ds = load_trec_dl("dl19", 2019, data_dir=str(trec_dl_dir))
    assert ds.summary()["corpus"] == ds.pool["doc_id"].nunique() == 4297 and all(
        ds.corpus[d] for d in ds.pool["doc_id"]
    )
