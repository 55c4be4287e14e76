"""Independent reference implementations for tests: plain Python, no ir_measures, no scikit-learn.

A test that checks a number the product computed recomputes it here, by the textbook formula, so a
bug in the product (or in how it calls a library) cannot make both sides agree.
"""

from __future__ import annotations

import math
from collections import Counter


def ndcg10_judged(run_rows, qrels_rows, queries=None) -> dict[str, float]:
    """nDCG@10, judged only (unjudged documents removed before the cut), linear gain, log2 discount, in
    rank order; ideal DCG from all the qrels of the query. run_rows: (query, doc, rank); qrels_rows:
    (query, doc, label). A query of ``queries`` without qrels or without a run scores 0."""
    labels: dict[str, dict[str, int]] = {}
    for q, d, r in qrels_rows:
        labels.setdefault(str(q), {})[str(d)] = int(r)
    ranked: dict[str, list[tuple[int, str]]] = {}
    for q, d, rk in run_rows:
        ranked.setdefault(str(q), []).append((int(rk), str(d)))
    out = {}
    for q in queries if queries is not None else labels:
        lab = labels.get(str(q), {})
        docs = [d for _, d in sorted(ranked.get(str(q), []))]
        judged = [d for d in docs if d in lab][:10]
        dcg = sum(lab[d] / math.log2(i + 2) for i, d in enumerate(judged))
        ideal = sorted(lab.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
        out[str(q)] = dcg / idcg if idcg > 0 else 0.0
    return out


def frame_rows(frame, *columns):
    return list(zip(*(frame[c] for c in columns)))


def cohen_kappa(a, b) -> float:
    """Unweighted Cohen's kappa: (p_o - p_e) / (1 - p_e)."""
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    ca, cb = Counter(a), Counter(b)
    p_e = sum(ca[k] * cb[k] for k in set(ca) | set(cb)) / n**2
    return (p_o - p_e) / (1 - p_e)
