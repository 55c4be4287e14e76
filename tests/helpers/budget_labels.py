"""An assessor simulated for the budget planner's tests: a labelling template sent back with the held-back human
labels filled in."""

from __future__ import annotations


def label_from_human(template, human, path):
    """What an assessor sends back: the template with the held-back human label filled in."""
    h = {(str(q), str(d)): int(r) for q, d, r in human[["query_id", "doc_id", "relevance"]].itertuples(index=False)}
    lines = [ln.split("\t") for ln in template.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(f"{q} 0 {d} {h[(q, d)]}\n" for q, _, d, _ in lines), encoding="utf-8")
    return path
