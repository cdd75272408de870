"""Tables and filled values for tests: a CSV written as a user's spreadsheet exports it, and
the values a filled PDF's fields hold, read back with pypdf."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

from pypdf import PdfReader


def write_csv(path: Path, rows: Sequence[Mapping[str, object]]) -> Path:
    """``rows`` as a CSV with a header of the first row's keys."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def people_csv(folder: Path, count: int) -> Path:
    """``folder``/people.csv: ``count`` rows for the sample form, each its own person."""
    people = [{"full_name": f"Person {i}", "city": f"Town {i}"} for i in range(1, count + 1)]
    return write_csv(folder / "people.csv", people)


def table(header: Sequence[str], *rows: Sequence[object]) -> list[dict[str, object]]:
    """Rows as dicts, from a header and one sequence of cells per row."""
    return [dict(zip(header, row, strict=True)) for row in rows]


def field_values(pdf: Path) -> dict[str, object]:
    """Each field's value (``/V``) as pypdf reads it, None where it has none."""
    return {k: v.get("/V") for k, v in (PdfReader(pdf).get_fields() or {}).items()}
