"""Metrics: nDCG@10 (ir_measures), label agreement (kappa, alpha, label shares), system-ordering
correlation (Kendall's tau, tau_AP, Spearman's rho) and paired significance tests."""

from judgebench.metrics.agreement import AGREEMENT, AGREEMENT_COLUMNS, binarize, confusion, label_agreement
from judgebench.metrics.correlation import ORDERING, ORDERING_COLUMNS, kendall_tau, tau_ap, tau_b
from judgebench.metrics.ndcg import per_query_ndcg
from judgebench.metrics.significance import classify_decisions, pairwise_ttests

__all__ = [
    "AGREEMENT",
    "AGREEMENT_COLUMNS",
    "ORDERING",
    "ORDERING_COLUMNS",
    "binarize",
    "classify_decisions",
    "confusion",
    "kendall_tau",
    "label_agreement",
    "pairwise_ttests",
    "per_query_ndcg",
    "tau_ap",
    "tau_b",
]
