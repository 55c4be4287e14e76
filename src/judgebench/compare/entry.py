"""The ``judgebench-compare`` console script: the quick refusals first, then the compare itself (compare/cli.py).

Kept free of heavy imports on purpose: ``--help`` and a mistyped experiment name are answered before
MLflow, pandas and matplotlib are imported (compare/quick_checks.py).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not any(a in ("-h", "--help") for a in argv):
        from judgebench.compare import quick_checks

        message = quick_checks.unknown_experiment(argv)
        if message is not None:
            from judgebench.errors import print_error

            print_error(message, quick_checks.PROGRAM)
            return 2
    from judgebench.compare.cli import main as compare

    return compare(argv)


if __name__ == "__main__":
    raise SystemExit(main())
