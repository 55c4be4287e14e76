"""A small TREC collection written from literals (topics, qrels, a run as pool, passages), for the tests of
dataset=trec and of the readers and keys that take any collection from files."""

from __future__ import annotations

from pathlib import Path

# a small collection: 2 judged queries (and one unjudged), a run of 4 documents each, labels on some of them
TOPICS = "t1\tcheap flights to lisbon\nt2\thow to bake rye bread\nt3\tunjudged topic\n"
QRELS = [("t1", "a", 2), ("t1", "b", 0), ("t1", "c", 3), ("t1", "z", 1), ("t2", "e", 1), ("t2", "f", 2)]
RUN = [
    ("t1", "a", 4),
    ("t1", "b", 3),
    ("t1", "c", 2),
    ("t1", "d", 1),
    ("t2", "e", 4),
    ("t2", "f", 3),
    ("t2", "g", 2),
    ("t2", "h", 1),
    ("t3", "a", 1),
]
TEXTS = {d: f"passage {d} about flights and bread" for d in "abcdefgh"}


def collection(root: Path, passages: str | None = "tsv") -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    files = {"topics": root / "topics.tsv", "qrels": root / "qrels.txt", "pool": root / "run.trec"}
    files["topics"].write_text(TOPICS, encoding="utf-8")
    files["qrels"].write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS), encoding="utf-8")
    ranks = {}
    files["pool"].write_text(
        "".join(f"{q} Q0 {d} {ranks.setdefault(q, []).append(d) or len(ranks[q])} {s}.0 mine\n" for q, d, s in RUN),
        encoding="utf-8",
    )
    if passages == "tsv":
        files["passages"] = root / "passages.tsv"
        files["passages"].write_text("".join(f"{d}\t{t}\n" for d, t in TEXTS.items()), encoding="utf-8")
    elif passages == "jsonl":
        files["passages"] = root / "passages.jsonl"
        files["passages"].write_text(
            "".join(f'{{"docid": "{d}", "text": "{t}"}}\n' for d, t in TEXTS.items()), encoding="utf-8"
        )
    return files
