"""Metrics: nDCG@10 (ir_measures), label agreement (kappa), system-ordering
correlation (Kendall's tau) and paired significance tests."""

from judgebench.metrics.agreement import binarize, confusion, label_agreement
from judgebench.metrics.correlation import kendall_tau
from judgebench.metrics.ndcg import mean_ndcg, per_query_ndcg
from judgebench.metrics.significance import classify_decisions, pairwise_ttests

__all__ = [
    "binarize",
    "classify_decisions",
    "confusion",
    "kendall_tau",
    "label_agreement",
    "mean_ndcg",
    "pairwise_ttests",
    "per_query_ndcg",
]
