"""`judgebench` console script: `judgebench cache ...` and `judgebench compare ...`."""

from __future__ import annotations

import sys

USAGE = """usage: judgebench <command> [args]
  cache stats|verify|export FILE|import FILE [--root DIR]   inspect or share the LLM call cache
  compare experiment=NAME [sweep=ID] [out=DIR] [...]        cross-judge tables and figures from MLflow (see judgebench-compare --help)
The grid itself runs through Hydra: python run.py [-m] key=value ..."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "cache":
        from judgebench.cache.cli import main as cache_main

        return cache_main(rest)
    if command == "compare":
        from judgebench.compare.cli import main as compare_main

        return compare_main(rest)
    print(f"judgebench: unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
