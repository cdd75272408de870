"""Regenerate include/sample_form.pdf, include/sample_rows.csv and the flat forms in
include/inbox/ from the test kits (kits/formkit, kits/flatkit).

The CSV spells checkbox values the many ways spreadsheets do (true/false, yes/no, x, empty),
so loaders are exercised on them.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kits.flatkit import flat_form  # noqa: E402
from kits.formkit import sample_form, sample_rows  # noqa: E402

ROWS = 25
TRUE_SPELLINGS = ("true", "yes", "x")
FALSE_SPELLINGS = ("false", "no", "")


def csv_value(value: Any, index: int) -> str:
    """Booleans as a rotating mix of truthy/falsy spellings; everything else as text."""
    if isinstance(value, bool):
        spellings = TRUE_SPELLINGS if value else FALSE_SPELLINGS
        return spellings[index % len(spellings)]
    return str(value)


def main() -> None:
    pdf, specs = sample_form()
    (ROOT / "include" / "sample_form.pdf").write_bytes(pdf)
    columns = [s.name for s in specs if s.kind != "signature"]
    with (ROOT / "include" / "sample_rows.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(columns)
        for i, row in enumerate(sample_rows(ROWS)):
            writer.writerow(csv_value(row[c], i + j) for j, c in enumerate(columns))
    inbox = ROOT / "include" / "inbox"
    inbox.mkdir(exist_ok=True)
    (inbox / "membership-application.pdf").write_bytes(flat_form(1))
    (inbox / "renewal-form.pdf").write_bytes(flat_form(2))


if __name__ == "__main__":
    main()
