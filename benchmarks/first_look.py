"""The reader's first look, timed: ``python run.py +experiment=quick`` then ``judgebench-compare experiment=quick``.

    python -m benchmarks.first_look            # both commands, as a new user runs them (fresh interpreters)
    python -m benchmarks.first_look --quick    # the same (it is already the quick demo), for the tests

Each command runs in a fresh empty directory, in its own interpreter, as the README's first lines say, so the
figures include Python's start-up and imports. Printed and written: each command's wall time, exit code, the
cells run, the findings line (does the simulated judge invert the LLM ranker and the oracles) and whether
report.html was written. The README's time for the first look is this benchmark's total.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import REPO, parser, table, write_json

STEPS = (
    ("run", [sys.executable, str(REPO / "run.py"), "+experiment=quick"]),
    ("compare", [sys.executable, "-m", "judgebench.compare", "experiment=quick"]),
)


def timed(cmd: list[str], cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=1800)
    return time.perf_counter() - started, done


def main(argv: list[str] | None = None) -> dict:
    args = parser(__doc__.splitlines()[0]).parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="first-look-") as tmp:
        where = Path(tmp)
        outputs = {}
        for name, cmd in STEPS:
            seconds, done = timed(cmd, where)
            if done.returncode != 0:
                sys.exit(f"{name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
            outputs[name] = done.stdout + done.stderr
            rows.append({"step": name, "seconds": round(seconds, 1), "exit": done.returncode})
        cells = re.search(r"judgebench sweep: (\d+) cells - (\d+) ran", outputs["run"])
        findings = [x.strip() for x in outputs["compare"].splitlines() if "inversion" in x]
        report = (where / "compare-out" / "quick" / "report.html").is_file()
    total = round(sum(r["seconds"] for r in rows), 1)
    rows.append({"step": "total", "seconds": total, "exit": 0})
    markdown = table(rows, ["step", "seconds", "exit"], title="First look: the quick demo and its report")  # printed
    print("\n".join(findings))
    data = {
        "rows": rows,
        "total_s": total,
        "cells": int(cells.group(1)) if cells else None,
        "cells_ran": int(cells.group(2)) if cells else None,
        "findings": findings,
        "report_html": report,
        "quick": args.quick,
        "markdown": markdown,
    }
    write_json("first_look", data, args.out)
    return data


if __name__ == "__main__":
    main()
