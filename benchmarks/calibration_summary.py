"""The Calibration section's tables, written from a calibration JSON so that docs/protocol.md's figures are the
committed run's and nothing else.

    python -m benchmarks.calibration_summary [--write docs/protocol.md]

docs/protocol.md marks each generated block with ``<!-- calibration-summary: benchmarks/results/NAME.json -->`` and
``<!-- /calibration-summary -->``; without --write the blocks are printed, with it they are replaced in the file
(tests/test_benchmarks.py checks that the committed blocks equal what the committed JSON gives).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "protocol.md"
BLOCK = re.compile(
    r"(<!-- calibration-summary: (?P<path>\S+) -->\n)(?P<body>.*?)(<!-- /calibration-summary -->)", re.DOTALL
)


def _range(values: list[float]) -> str:
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return f"{lo:.3f}" if lo == hi else f"{lo:.3f}–{hi:.3f}"


def summary(data: dict) -> str:
    """The block: the run's size and totals, per statistic the unflagged rows that meet / miss (+ flagged ones) and
    the range of the unflagged measured values, then every unflagged miss with its MC s.e."""
    rows = data["rows"]
    meets = sum(r["meets"] for r in rows)
    flagged = sum(r["flagged"] for r in rows)
    misses = [r for r in rows if not r["meets"] and not r["flagged"]]
    kind = "quick" if data.get("quick") else "full"
    lines = [
        f"{kind.capitalize()} run ({data['populations']} populations × {data['draws']} draws = "
        f"{data['replications']} replications a cell; "
        f"per-query τ rows {data.get('ordering_replications', data['replications'])}; "
        f"simulated power over {data.get('power_populations', 4 * data['populations'])} populations; "
        f"MC s.e. limit {data['se_limit']}; {data['seconds']:.0f} s): {len(rows)} rows, {meets} meet their target, "
        f"{flagged} flagged, {len(misses)} unflagged misses.",
        "",
        "| statistic | unflagged rows: meet / miss (+ flagged rows) | measured, unflagged rows |",
        "|---|---|---|",
    ]
    families: dict[str, list[dict]] = {}
    for r in rows:
        families.setdefault(r["statistic"], []).append(r)
    for name, group in families.items():
        quiet = [r for r in group if not r["flagged"]]
        values = [r["measured"] for r in quiet if r["measured"] == r["measured"]]
        lines.append(
            f"| {name} | {sum(r['meets'] for r in quiet)} / {sum(not r['meets'] for r in quiet)} "
            f"(+{len(group) - len(quiet)}) | {_range(values)} |"
        )
    lines += [
        "",
        "Unflagged misses: "
        + (
            "; ".join(
                f"{r['statistic']} ({r['setting']}, {r['n_queries']} queries, k = {r['k']}): "
                f"{r['measured']} ± {r['mc_se']}" + (f" against {r['nominal']}" if r["target"] == "+-0.05" else "")
                for r in misses
            )
            or "none"
        )
        + ".",
    ]
    return "\n".join(lines) + "\n"


def render(text: str, root: Path = ROOT) -> str:
    """``text`` with every marked block rewritten from the JSON its marker names (relative to ``root``)."""
    return BLOCK.sub(
        lambda m: m.group(1) + summary(json.loads((root / m.group("path")).read_text(encoding="utf-8"))) + m.group(4),
        text,
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", type=Path, default=None, help="rewrite the marked blocks of this file in place")
    args = ap.parse_args(argv)
    path = args.write or DOC
    text = path.read_text(encoding="utf-8")
    new = render(text)
    if args.write:
        path.write_text(new, encoding="utf-8")
        print(f"wrote {path}")
    else:
        print("\n".join(m.group("body") for m in BLOCK.finditer(new)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
