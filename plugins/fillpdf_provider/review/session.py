"""One form under review: its pages as pictures, the schema being edited, and saving it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pypdfium2 as pdfium

from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.errors import DamagedPdfError, SchemaError
from fillpdf_provider.engine.files import write_atomic
from fillpdf_provider.engine.rebuild import entries_of
from fillpdf_provider.engine.schema import FIELD_TYPES

#: Bitmap pixels per PDF point of the page pictures (108 dpi): boxes a few points tall stay
#: big enough to grab.
SCALE = 1.5
#: Fields less sure than this are marked for a closer look.
LOW_CONFIDENCE = 0.5
#: PDFium maps points to whole pixels: a span this long gives the matrix to 1/1000 px.
_SPAN = 1000.0
#: How the engine's schema errors cite an entry: its place in the list, then maybe its name.
_CITED = re.compile(r"""schema\[(\d+)\](?: \((?:'[^']*'|"[^"]*")\))?""")


@dataclass(frozen=True)
class PageView:
    """A page as the editor shows it: its picture and where PDF points land on it."""

    index: int
    width: int  # bitmap pixels
    height: int
    #: user space to bitmap pixels: X = a*x + c*y + e, Y = b*x + d*y + f (any /Rotate)
    matrix: tuple[float, float, float, float, float, float]
    png: bytes


@dataclass(frozen=True)
class Saved:
    """Where a save went: the schema always, the fillable PDF when one was built."""

    schema: str
    pdf: str | None
    fields: int


class Sink(Protocol):
    """Where a review saves: local files for the CLI, a store for the Airflow UI."""

    def save_schema(self, data: bytes) -> str: ...

    def save_pdf(self, data: bytes) -> str: ...


@dataclass(frozen=True)
class FileSink:
    """Saves beside each other on local disk, each file whole (temp name, then rename)."""

    schema_path: Path
    pdf_path: Path

    def save_schema(self, data: bytes) -> str:
        return str(write_atomic(self.schema_path, data))

    def save_pdf(self, data: bytes) -> str:
        return str(write_atomic(self.pdf_path, data))


class ReviewSession:
    """A flat PDF, the schema a person starts from, and where saving writes."""

    def __init__(self, pdf: bytes, schema: Any, sink: Sink, *, name: str = "form.pdf") -> None:
        self.pdf = pdf
        self.name = name
        self.schema = entries_of(schema) if schema else []
        self.sink = sink
        self.pages = render_pages(pdf)

    def document(self) -> dict[str, Any]:
        """What the editor loads: the pages (without their pictures) and the schema."""
        return {
            "name": self.name,
            "scale": SCALE,
            "low_confidence": LOW_CONFIDENCE,
            "types": list(FIELD_TYPES),
            "pages": [
                {"index": p.index, "width": p.width, "height": p.height, "matrix": p.matrix}
                for p in self.pages
            ],
            "schema": self.schema,
        }

    def save(self, schema: Sequence[Any], *, build: bool) -> Saved:
        """Check ``schema`` by building the form from it (``SchemaError`` names a bad entry),
        then write the schema, and the fillable PDF with ``build``. Nothing is written for
        a schema that can't build."""
        check_names(schema)
        result = convert(self.pdf, schema=list(schema))
        text = json.dumps(list(schema), indent=2, ensure_ascii=False) + "\n"
        where = self.sink.save_schema(text.encode("utf-8"))
        built = self.sink.save_pdf(result.pdf) if build else None
        self.schema = entries_of(list(schema))
        return Saved(where, built, len(result.schema))


def check_names(schema: Sequence[Any]) -> None:
    """Refuse two fields of one name, saying which by their names, types and places: the
    engine's own check cites places in the schema list, which the editor never shows."""
    first: dict[str, dict[str, Any]] = {}
    for entry in schema:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue  # the engine's check names what is wrong with it
        name = entry["name"]
        seen = first.setdefault(name, entry)
        if seen is entry or entry.get("type") == seen.get("type") == "radio":
            continue  # a radio group's options share its name
        raise SchemaError(
            f"Two fields are named {name!r}: {_described(seen)} and {_described(entry)}. "
            "Names must be unique (only the options of one radio group share a name); "
            "rename one of them.",
            name=name,
        )


def _described(entry: dict[str, Any]) -> str:
    """``a text field on page 1 at (150, 615)``: enough to tell two fields of one name
    apart on the page (a radio group by its first button)."""
    widgets = entry.get("widgets")
    first = widgets[0] if isinstance(widgets, list) and widgets else {}
    where = {**entry, **first} if isinstance(first, dict) else entry
    page, rect = where.get("page"), where.get("rect")
    kind = entry.get("type")
    text = f"a {kind} field" if kind else "a field"
    if isinstance(page, int):
        text += f" on page {page + 1}"
    if isinstance(rect, list) and _numbers(rect, 4):
        text += f" at ({rect[0]:g}, {rect[1]:g})"
    return text


def _numbers(values: list[Any], count: int) -> bool:
    return len(values) == count and all(isinstance(v, int | float) for v in values)


def in_field_names(message: str, schema: Sequence[Any]) -> str:
    """``message`` with each ``schema[N] ('name')`` the engine wrote said as ``field 'name'``:
    a person in the editor knows the fields by name, not by their place in the list."""

    def named(match: re.Match[str]) -> str:
        index = int(match.group(1))
        entry = schema[index] if index < len(schema) else None
        name = entry.get("name") if isinstance(entry, dict) else None
        return f"field {name!r}" if isinstance(name, str) and name else "a field with no name"

    return _CITED.sub(named, message)


def render_pages(pdf: bytes, scale: float = SCALE) -> list[PageView]:
    """Every page as a PNG, with the matrix that places PDF points on it."""
    from fillpdf_provider.engine.preview import png_bytes

    try:
        doc = pdfium.PdfDocument(pdf)
    except pdfium.PdfiumError as exc:
        raise DamagedPdfError(
            "The PDF could not be opened for review: it is damaged or locked with a password; "
            "re-save it with a PDF editor and try again."
        ) from exc
    views = []
    try:
        for index in range(len(doc)):
            page = doc[index]
            try:
                bitmap = page.render(scale=scale, may_draw_forms=False)
                conv = bitmap.get_posconv(page)
                (ox, oy), (xx, xy), (yx, yy) = (
                    conv.to_bitmap(0, 0), conv.to_bitmap(_SPAN, 0), conv.to_bitmap(0, _SPAN)
                )  # fmt: skip
                matrix = (
                    (xx - ox) / _SPAN, (xy - oy) / _SPAN, (yx - ox) / _SPAN, (yy - oy) / _SPAN,
                    float(ox), float(oy),
                )  # fmt: skip
                image = bitmap.to_pil().convert("RGB")
            finally:
                page.close()
            views.append(PageView(index, image.width, image.height, matrix, png_bytes(image)))
    finally:
        doc.close()
    return views
