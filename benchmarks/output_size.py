#!/usr/bin/env python3
"""How many bytes a filled form takes against its template plus the values put into it.

At a million rows a mail-merge writes a million PDFs, so every kilobyte a fill adds to its
template is a gigabyte of object storage. For each form of the development corpus
(``../shared/corpus/forms``) and of the wild corpus (``../shared/corpus/wild/forms``), this
fills every field a user could fill with the values ``benchmarks/wild_eval.py`` gives it
(text sized to the box, long text in multiline fields, dates in the field's format, buttons
on, an option of each choice), and prints

    ratio = filled bytes / (template bytes + bytes of the values, UTF-8)

per corpus and over both (median, 90th percentile, worst, with the worst forms named). The
goal is a median of at most 1.2. ``--baseline DIR`` fills the same forms with the engine of
another checkout as well (``git worktree add DIR <commit>``), in a subprocess, and prints
both side by side.

    .venv-bench/bin/python benchmarks/output_size.py [--baseline /tmp/base] [--out -]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

CORPORA = {
    "development": REPO_ROOT.parent / "shared" / "corpus" / "forms",
    "wild": REPO_ROOT.parent / "shared" / "corpus" / "wild" / "forms",
}
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "output_size.txt"
#: The goal for the median ratio over both corpora.
GOAL = 1.2


def value_bytes(values: dict[str, Any]) -> int:
    """The bytes of the values as a row would carry them (UTF-8 text; a box ticked is 1)."""
    return sum(len(str(value).encode()) if not isinstance(value, bool) else 1
               for value in values.values())  # fmt: skip


def measure_forms(paths: Sequence[Path]) -> list[dict[str, Any]]:
    """Per form: template, values and filled bytes (the engine of the importing checkout)."""
    from benchmarks.wild_eval import fill_ours, ours_plan, reference_slots

    rows = []
    for path in paths:
        template = path.read_bytes()
        try:
            values, _ = ours_plan(template, reference_slots(template))
            values.update(_dates(template, values))
            filled = fill_ours(template, values)
        except Exception as exc:  # a form the engine refuses is reported, not measured
            rows.append({"form": path.name, "error": f"{type(exc).__name__}: {exc}"[:200]})
            continue
        rows.append(
            {
                "form": path.name,
                "template": len(template),
                "values": value_bytes(values),
                "filled": len(filled),
            }
        )
    return rows


def _dates(template: bytes, values: dict[str, Any]) -> dict[str, str]:
    """An ISO date for each date field the plan gave other text (the engine reads the
    field's date format from its script, which the plan does not)."""
    from fillpdf_provider.engine import Template

    dated = {f.name for f in Template(template).fields if f.type == "date"}
    return {name: "2025-03-05" for name in dated if name in values}


def ratio(row: dict[str, Any]) -> float:
    return float(row["filled"]) / (row["template"] + row["values"])


def _quantile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary_lines(label: str, rows: Sequence[dict[str, Any]]) -> list[str]:
    measured = [r for r in rows if "filled" in r]
    if not measured:
        return [f"  {label:<12} no forms measured"]
    ratios = [ratio(r) for r in measured]
    worst = sorted(measured, key=ratio, reverse=True)[:3]
    added = [r["filled"] - r["template"] for r in measured]
    return [
        f"  {label:<12} forms {len(measured):>3}   median {statistics.median(ratios):.3f}   "
        f"p90 {_quantile(ratios, 0.9):.3f}   worst {max(ratios):.3f}   "
        f"median bytes added {statistics.median(added):,.0f}",
        "               worst: " + ", ".join(f"{r['form'][:40]} {ratio(r):.2f}" for r in worst),
    ]


def run_baseline(baseline: Path, paths: Sequence[Path]) -> list[dict[str, Any]]:
    """The same measurement with ``baseline``'s engine, in a subprocess."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(baseline / "plugins"), str(REPO_ROOT)])}
    command = [sys.executable, str(Path(__file__).resolve()), "--rows-json", *map(str, paths)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True)
    return list(json.loads(done.stdout))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout to compare")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="results file ('-': none)")
    parser.add_argument("--rows-json", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.rows_json is not None:  # the baseline's side
        print(json.dumps(measure_forms([Path(p) for p in args.rows_json])))
        return 0
    paths = {name: sorted(folder.glob("*.pdf")) for name, folder in CORPORA.items()}
    if not any(paths.values()):
        print(f"output size: skipped, no corpus at {', '.join(map(str, CORPORA.values()))}")
        return 0
    sides = {"this checkout": {name: measure_forms(p) for name, p in paths.items()}}
    if args.baseline:
        sides = {
            "baseline": {name: run_baseline(args.baseline, p) for name, p in paths.items()},
            **sides,
        }
    lines = ["Output size: filled bytes / (template bytes + value bytes)"]
    if args.baseline:
        lines.append(f"baseline: {args.baseline}")
    failed = False
    for side, corpora in sides.items():
        lines.append(f"\n{side}")
        for name, rows in corpora.items():
            lines.extend(summary_lines(name, rows))
            lines.extend(f"  refused: {r['form']}: {r['error']}" for r in rows if "error" in r)
        both = [r for rows in corpora.values() for r in rows]
        lines.extend(summary_lines("both", both))
        median = statistics.median(ratio(r) for r in both if "filled" in r)
        met = median <= GOAL
        lines.append(f"  goal: median over both <= {GOAL}: {'met' if met else 'NOT met'}")
        failed = not met
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out != "-":
        Path(args.out).write_text(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
