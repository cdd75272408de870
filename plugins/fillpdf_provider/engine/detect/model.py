"""What detection finds: one widget-to-be per entry."""

from __future__ import annotations

from dataclasses import dataclass

Rect = tuple[float, float, float, float]


@dataclass
class Detected:
    """A field found on a flat page, in PDF default user space (the space of ``/Rect``).

    Radio buttons of one group share ``name`` and differ by ``export``; every other field
    has a ``name`` of its own.
    """

    type: str  # text, date, checkbox, radio, choice, signature
    page: int
    rect: Rect
    name: str = ""
    label: str | None = None
    confidence: float = 0.5
    multiline: bool = False
    max_length: int | None = None
    comb: bool = False
    date_format: str | None = None  # date: Acrobat style (mm/dd/yyyy); None: one that fits
    export: str | None = None  # radio: this button's option
    group: int | None = None  # radio: buttons of one question share it (per page)
    cue: str = ""  # what on the page gave it away: box, cell, underline, comb, square, circle...
