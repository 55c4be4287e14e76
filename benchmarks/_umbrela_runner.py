"""Runs UMBRELA's GPTJudge inside its own venv (never imports judgebench). Used by benchmarks.versus.

    <umbrela-venv>/bin/python benchmarks/_umbrela_runner.py IN.json OUT.json

IN.json: {"prompt_file": path, "model": name, "queries": [{"query": text, "passages": [text, ...]}, ...]}.
OUT.json: {"seconds": judging wall time, "version": ..., "judgments": [{"judgment", "prediction"}, ...]}.
The OpenAI base URL and key come from the environment (OPENAI_BASE_URL, OPEN_AI_API_KEY, DEPLOYMENT_NAME).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import time
import types


def stub_pyserini() -> None:
    """UMBRELA 0.0.7 imports pyserini at load time only for its few-shot data helpers (qrels, topics, index);
    with few_shot_count=0 they are never called. Stub exactly those names; the judging path stays UMBRELA's."""

    def unavailable(*args, **kwargs):
        raise RuntimeError("pyserini is stubbed in this benchmark: few-shot examples are not used")

    pkg = types.ModuleType("pyserini")
    index = types.ModuleType("pyserini.index")
    lucene = types.ModuleType("pyserini.index.lucene")
    search = types.ModuleType("pyserini.search")
    lucene.IndexReader = type("IndexReader", (), {"from_prebuilt_index": staticmethod(unavailable)})
    search.get_qrels = search.get_topics = unavailable
    pkg.index, pkg.search, index.lucene = index, search, lucene
    sys.modules.update(
        {"pyserini": pkg, "pyserini.index": index, "pyserini.index.lucene": lucene, "pyserini.search": search}
    )


def main() -> None:
    src, dst = sys.argv[1], sys.argv[2]
    spec = json.load(open(src, encoding="utf-8"))
    stub_pyserini()
    from importlib.metadata import version

    from umbrela.gpt_judge import GPTJudge

    judge = GPTJudge(qrel="dl19-passage", prompt_file=spec["prompt_file"], few_shot_count=0, engine=spec["model"])
    out = []
    log = io.StringIO()
    started = time.perf_counter()
    with contextlib.redirect_stdout(log):  # it prints one "Invalid response" line per unparsed answer
        for q in spec["queries"]:
            request = {"query": {"text": q["query"]}, "candidates": [{"doc": {"segment": p}} for p in q["passages"]]}
            for j in judge.judge(request, max_new_tokens=spec.get("max_new_tokens", 100)):
                out.append({"judgment": j["judgment"], "prediction": j["predition"]})
    seconds = time.perf_counter() - started
    json.dump(
        {
            "seconds": seconds,
            "version": version("umbrela"),
            "judgments": out,
            "invalid_lines": log.getvalue().count("Invalid response"),
        },
        open(dst, "w", encoding="utf-8"),
    )


if __name__ == "__main__":
    main()
