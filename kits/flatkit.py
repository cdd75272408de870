"""Build small flat (form-less) PDFs by hand: printed labels, ruled boxes, lines and circles.

Each page's content stream is written operator by operator, so a test says exactly which
drawing cue a detector has to find. Only pypdf's generic objects are used; the text font is
the standard Helvetica. Coordinates are PDF user space, bottom-left origin; a page whose
MediaBox starts away from the origin is drawn in the same user space (nothing is shifted).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pdfminer.fontmetrics import FONT_METRICS
from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    NameObject,
    NumberObject,
)

Rect = tuple[float, float, float, float]

LETTER: Rect = (0.0, 0.0, 612.0, 792.0)
#: Control-point distance of a four-Bézier circle, as a fraction of the radius.
KAPPA = 0.5523
_HELVETICA_WIDTHS = FONT_METRICS["Helvetica"][1]


def _num(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


def _pdf_string(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return f"({escaped})"


def text_width(text: str, size: float = 10.0) -> float:
    """Width of ``text`` in Helvetica at ``size`` pt."""
    return sum(_HELVETICA_WIDTHS.get(ch, 556) for ch in text) * size / 1000


@dataclass
class FlatPage:
    """One page: a MediaBox, an optional ``/Rotate`` and the content operators drawn so far."""

    mediabox: Rect = LETTER
    rotate: int = 0
    ops: list[str] = field(default_factory=list)

    def text(self, x: float, y: float, text: str, size: float = 10.0) -> float:
        """Print ``text`` with its baseline starting at ``(x, y)``; returns where it ends."""
        self.ops.append(f"BT /F1 {_num(size)} Tf {_num(x)} {_num(y)} Td {_pdf_string(text)} Tj ET")
        return x + text_width(text, size)

    def box(self, rect: Rect, width: float = 0.75) -> None:
        """A stroked rectangle (``re S``)."""
        x0, y0, x1, y1 = rect
        self.ops.append(
            f"{_num(width)} w {_num(x0)} {_num(y0)} {_num(x1 - x0)} {_num(y1 - y0)} re S"
        )

    def line(self, x0: float, y0: float, x1: float, y1: float, width: float = 0.75) -> None:
        """A stroked straight line (``m l S``)."""
        self.ops.append(f"{_num(width)} w {_num(x0)} {_num(y0)} m {_num(x1)} {_num(y1)} l S")

    def circle(self, cx: float, cy: float, r: float, width: float = 0.75) -> None:
        """A stroked circle made of four Bézier curves (``m c c c c S``)."""
        k = KAPPA * r
        quarter = [
            (cx + k, cy + r, cx + r, cy + k, cx + r, cy),
            (cx + r, cy - k, cx + k, cy - r, cx, cy - r),
            (cx - k, cy - r, cx - r, cy - k, cx - r, cy),
            (cx - r, cy + k, cx - k, cy + r, cx, cy + r),
        ]
        curves = " ".join(" ".join(_num(v) for v in q) + " c" for q in quarter)
        self.ops.append(f"{_num(width)} w {_num(cx)} {_num(cy + r)} m {curves} h S")

    def raw(self, operators: str) -> None:
        """Content operators as they are."""
        self.ops.append(operators)

    def content(self) -> bytes:
        return ("\n".join(self.ops) + "\n").encode("latin-1")


def build(pages: Sequence[FlatPage], *, password: str | None = None) -> bytes:
    """A PDF of ``pages`` (none is allowed), encrypted with ``password`` if given."""
    writer = PdfWriter()
    font = writer._add_object(
        DictionaryObject(
            {
                NameObject("/Type"): NameObject("/Font"),
                NameObject("/Subtype"): NameObject("/Type1"),
                NameObject("/BaseFont"): NameObject("/Helvetica"),
                NameObject("/Encoding"): NameObject("/WinAnsiEncoding"),
            }
        )
    )
    for spec in pages:
        x0, y0, x1, y1 = spec.mediabox
        page = writer.add_blank_page(x1 - x0, y1 - y0)
        page[NameObject("/MediaBox")] = ArrayObject(FloatObject(v) for v in spec.mediabox)
        if spec.rotate:
            page[NameObject("/Rotate")] = NumberObject(spec.rotate)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        stream = DecodedStreamObject()
        stream.set_data(spec.content())
        page[NameObject("/Contents")] = writer._add_object(stream)
    if password is not None:
        writer.encrypt(user_password=password, owner_password=password + "-owner")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def one_page(page: FlatPage) -> bytes:
    """A one-page PDF of ``page``."""
    return build([page])


def flat_form(pages: int = 1, *, password: str | None = None) -> bytes:
    """A flat form of ``pages`` pages: labelled boxes, an underline and two checkboxes each."""
    built = []
    for number in range(pages):
        page = FlatPage()
        page.text(72, 720, f"Application form, page {number + 1}", size=14)
        page.text(72, 662, "Full name")
        page.box((150, 655, 450, 675))
        page.text(72, 622, "Email")
        page.box((150, 615, 450, 635))
        page.text(72, 582, "City")
        page.line(150, 578, 450, 578)
        page.box((72, 540, 82, 550))
        page.text(88, 541, "Member")
        page.box((172, 540, 182, 550))
        page.text(188, 541, "Newsletter")
        built.append(page)
    return build(built, password=password)


def flat_form_schema() -> list[dict[str, Any]]:
    """A schema for ``flat_form(2)`` written by hand, as a person reviewing it would: minimal
    entries of every kind, a radio group on each page (beside the checkboxes) and a choice
    field in page two's name box. A fresh copy each call, free to edit."""
    return [
        {"name": "full_name", "type": "text", "page": 0, "rect": [150, 655, 450, 675]},
        {"name": "email", "type": "text", "page": 0, "rect": [150, 615, 450, 635]},
        {"name": "city", "type": "text", "page": 0, "rect": [150, 578, 450, 592]},
        {"name": "member", "type": "checkbox", "page": 0, "rect": [71, 539, 83, 551]},
        {
            "name": "plan",
            "type": "radio",
            "page": 0,
            "widgets": [
                {"export": "basic", "rect": [300, 539, 312, 551]},
                {"export": "gold", "rect": [360, 539, 372, 551]},
            ],
        },
        {
            "name": "size",
            "type": "radio",
            "page": 1,
            "widgets": [
                {"export": "s", "rect": [300, 539, 312, 551]},
                {"export": "m", "rect": [360, 539, 372, 551]},
            ],
        },
        {"name": "country", "type": "choice", "page": 1, "rect": [150, 655, 300, 675],
         "options": ["SE", "NO"]},
    ]  # fmt: skip


def merge_form_schema() -> list[dict[str, Any]]:
    """``flat_form_schema`` with a date field (page two's email box): every kind of field a
    mail-merge fills. A fresh copy each call."""
    return [
        *flat_form_schema(),
        {"name": "signed_on", "type": "date", "page": 1, "rect": [150, 615, 450, 635]},
    ]


def merge_form() -> bytes:
    """``flat_form(2)`` made fillable from ``merge_form_schema``: text, a date (mm/dd/yyyy),
    a checkbox, radio groups and a choice, as a converted form has them."""
    from fillpdf_provider.engine.convert import convert

    return convert(flat_form(2), schema=merge_form_schema()).pdf
