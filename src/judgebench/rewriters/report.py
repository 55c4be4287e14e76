"""What a rewriter did to a cell's text view: the artifacts, the metrics, and its failure share.

A document whose rewrite failed keeps its original text; silently, a "rewritten" view would be partly
original. So the failures are warned with their count, listed (``rewrite_failures.tsv``: doc_id, error),
counted (``rewrite_failed``, ``rewrite_kept_original``), and above ``rewriter.max_failed_share`` (default:
the job's ``max_failed_share``) of the requested documents the job ends FAILED.
"""

from __future__ import annotations

import io
import logging

import pandas as pd

from judgebench.exceptions import TooManyRewriteFailures
from judgebench.identity.text_view import ORIGINAL

log = logging.getLogger("judgebench")


def _tsv(frame: pd.DataFrame) -> str:
    buf = io.StringIO()
    frame.to_csv(buf, sep="\t", index=False)
    return buf.getvalue()


def rewrite_report(rewriter, dataset, texts: dict[str, str], docs=None) -> tuple[dict[str, str], dict[str, float]]:
    """(artifacts, metrics) of the rewritten view; nothing for the original view."""
    if rewriter.view == ORIGINAL:
        return {}, {}
    docs = list(dataset.corpus) if docs is None else list(docs)
    changed = [d for d in docs if texts[d] != dataset.corpus[d]]
    failed = getattr(rewriter, "failed", {})
    files = {
        "rewrites.tsv": _tsv(
            pd.DataFrame(
                {
                    "doc_id": changed,
                    "original": [dataset.corpus[d] for d in changed],
                    "rewritten": [texts[d] for d in changed],
                }
            )
        ),
        "rewrite_failures.tsv": _tsv(
            pd.DataFrame({"doc_id": list(failed), "error": [str(e) for e in failed.values()]})
        ),
    }
    metrics = {
        "rewritten_docs": len(changed),
        "rewrite_failed": len(failed),
        "rewrite_kept_original": sum(1 for d in failed if texts.get(d) == dataset.corpus.get(d)),
        "rewrite_calls_made": getattr(rewriter, "made", 0),
    }
    if failed:
        requested = max(1, getattr(rewriter, "requested", 0))
        log.warning(
            "rewriter %s: %d of %d rewrites failed; these documents keep their original text (listed in "
            "rewrite_failures.tsv)",
            rewriter.name,
            len(failed),
            requested,
        )
    return files, metrics


def check_rewrite_failures(rewriter, default_limit: float, where: str) -> None:
    """Raise TooManyRewriteFailures when the failed share of the requested rewrites is above the limit."""
    failed, requested = len(getattr(rewriter, "failed", {})), getattr(rewriter, "requested", 0)
    if not failed or not requested:
        return
    own = getattr(rewriter, "max_failed_share", None)
    limit = float(default_limit if own is None else own)
    share = failed / requested
    if share > limit:
        raise TooManyRewriteFailures(
            f"{where}: {failed} of {requested} rewrites failed ({share:.1%}), above max_failed_share={limit:.1%} "
            f"(rewriter.max_failed_share, default max_failed_share); the run is marked FAILED and the documents are "
            f"listed in rewrite_failures.tsv (the rewrites made are cached: a rerun asks only for the failed ones)"
        )


def rewrites_checked(rewriter, dataset, texts: dict[str, str], job, default_limit: float, where: str, docs=None):
    """rewrite_report(), then the failure check; a FAILED job still gets the report's artifacts and metrics."""
    files, metrics = rewrite_report(rewriter, dataset, texts, docs)
    try:
        check_rewrite_failures(rewriter, default_limit, where)
    except TooManyRewriteFailures:
        job.log_metrics(metrics)
        job.log_files(files)
        raise
    return files, metrics
