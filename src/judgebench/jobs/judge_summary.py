"""Statistics of a judge as a whole, logged once per (dataset, judge, text view) as its own MLflow run.

κ, the label distribution and the label-set counts do not depend on the ranker: copied onto every
system's run they read as per-system values. Each job instead makes sure one FINISHED run of kind
``judge_summary`` exists for its judge's labels (keyed by the judge's config hash, the text view, the
metric version and a digest of the labels themselves) and creates it when none does; compare reads
the judge-level numbers from there.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd

from judgebench.evaluation import METRIC_VERSION
from judgebench.identity.run_tags import RunTags
from judgebench.label_scale import LabelScale
from judgebench.locks import exclusive
from judgebench.metrics import AGREEMENT_COLUMNS, label_agreement
from judgebench.tracking import job_run

KIND = "judge_summary"


def labels_digest(qrels: pd.DataFrame, label_set: pd.DataFrame) -> str:
    """Digest of the judge's labels and of the pairs it was asked for: same digest, same statistics."""
    lines = sorted(
        f"{q}\t{d}\t{r}" for q, d, r in zip(*(qrels[c].tolist() for c in ("query_id", "doc_id", "relevance")))
    )
    asked = sorted(f"{q}\t{d}" for q, d in zip(label_set["query_id"].tolist(), label_set["doc_id"].tolist()))
    return hashlib.sha256("\n".join([*lines, "--", *asked]).encode()).hexdigest()[:16]


def statistics(
    judge_qrels: pd.DataFrame, label_set: pd.DataFrame, failed_pairs: int, scale: LabelScale | None = None
) -> dict[str, float]:
    """Every agreement statistic on the label set (metrics.AGREEMENT: kappas, alphas, per-query kappa,
    label shares of judge and humans on the pairs both labelled), the judge read on its ``scale``, and the
    label-set counts."""
    agreement = label_agreement(judge_qrels, label_set, scale)
    return {
        **{name: agreement[name] for name in AGREEMENT_COLUMNS},
        "label_set_size": len(label_set),
        "labelled_pairs": len(judge_qrels),
        "failed_pairs": int(failed_pairs),
    }


def ensure(
    client,
    experiment_id: str,
    tags: dict[str, str],
    judge_qrels: pd.DataFrame,
    label_set: pd.DataFrame,
    failed_pairs: int,
    lock_dir: str | Path | None = None,
    scale: LabelScale | None = None,
) -> str:
    """The run id of the judge summary for these labels, logging it first when none exists yet."""
    digest = labels_digest(judge_qrels, label_set)
    with exclusive(lock_dir, f"judge-summary-{digest}"):  # parallel jobs of one judge would each log a summary
        return _ensure(client, experiment_id, tags, judge_qrels, label_set, failed_pairs, digest, scale)


def _ensure(client, experiment_id, tags, judge_qrels, label_set, failed_pairs, digest, scale=None) -> str:
    filt = RunTags.where(
        kind=KIND,
        labels_digest=digest,
        judge_hash=tags[RunTags.name("judge_hash")],
        metric_version=METRIC_VERSION,
        status="FINISHED",
    )
    found = client.search_runs([experiment_id], filter_string=filt, max_results=50)
    for r in found:  # the filter cannot say text_view or dataset safely (free text): check them here
        same = [
            RunTags.name(f) for f in ("dataset", "text_view", "dataset_hash", "judge_scale")
        ]  # scale: its relevant_from
        if all(r.data.tags.get(k) == tags.get(k) for k in same):
            return r.info.run_id
    note = (
        f"{tags['dataset']}: judge-level statistics of {tags['judge']} on the label set ({len(label_set)} pairs, "
        "text view "
        f"{tags['text_view']}): kappa, alpha, label shares; shared by every system's run of this judge"
    )
    run = job_run.JobRun(
        client,
        experiment_id,
        f"judge/{tags['dataset']}/{tags['judge']}/{tags['text_view']}",
        {**tags, **RunTags(kind=KIND, labels_digest=digest).to_tags()},
        note=note,
    )
    try:
        run.log_metrics(statistics(judge_qrels, label_set, failed_pairs, scale))
    except BaseException:
        run.finish("FAILED")
        raise
    run.finish()
    return run.run_id
