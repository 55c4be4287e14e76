"""`judgebench` console script: `judgebench run ...` (the grid, through Hydra), `cache ...`, `compare ...` and
`models ...`."""

from __future__ import annotations

import sys

USAGE = """usage: judgebench <command> [args]
  run [-m] key=value ... [--verbose]                        run grid cells through Hydra (see judgebench run --help)
  cache stats|verify|export FILE|import FILE|compact|migrate --to LAYOUT [--root DIR]
                                                            inspect, share, compact or convert the LLM call cache
  compare experiment=NAME [sweep=ID] [out=DIR] [...]        cross-judge tables and figures from MLflow \
(see judgebench-compare --help)
  models download [MODEL_ID ...] [group=option,... ...]     fetch the Hugging Face models those configs name \
into HF_HOME
In a clone, python run.py [-m] key=value ... is the same as judgebench run."""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "run":
        from judgebench.cli.run import cli as run_cli

        return run_cli(rest)
    if command == "cache":
        from judgebench.cache.cli import main as cache_main

        return cache_main(rest)
    if command == "compare":
        from judgebench.compare.entry import main as compare_main

        return compare_main(rest)
    if command == "models":
        from judgebench.cli.download_models import main as models_main

        return models_main(rest)
    print(f"judgebench: unknown command {command!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
