"""The schema entry: one field of a form, as the contract defines it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

FieldType = Literal["text", "date", "checkbox", "radio", "choice", "signature"]
FIELD_TYPES: tuple[str, ...] = ("text", "date", "checkbox", "radio", "choice", "signature")
Rect = tuple[float, float, float, float]


@dataclass(frozen=True)
class OptionWidget:
    """One button of a radio group: the option it sets and where it sits.

    A group's entry has one ``rect``; its buttons each need their own place for the form
    to be rebuilt from the schema, and for options to be moved between groups.
    """

    export: str
    page: int
    rect: Rect

    def to_dict(self) -> dict[str, Any]:
        return {"export": self.export, "page": self.page, "rect": [round(v, 3) for v in self.rect]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OptionWidget:
        return cls(
            export=str(data["export"]),
            page=int(data.get("page", 0)),
            rect=tuple(float(v) for v in data["rect"]),  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class Field:
    """A field a user can fill, with what a caller needs to map a column to it.

    ``name`` is the key of the fill values: the fully qualified field name on a fillable
    PDF, a snake_case name derived from the printed label on a converted one.
    """

    name: str
    type: FieldType
    page: int
    rect: Rect
    label: str | None = None
    confidence: float = 1.0
    required: bool = False
    multiline: bool = False
    max_length: int | None = None
    options: tuple[str, ...] | None = None
    read_only: bool = False
    comb: bool = False
    #: Radio groups with several buttons: each button's option and place (else None).
    widgets: tuple[OptionWidget, ...] | None = None
    #: Date fields: the format values are written in, Acrobat style (``mm/dd/yyyy``).
    date_format: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON schema entry of the contract (plus ``read_only`` and ``comb``,
        ``widgets`` for a radio group of several buttons and ``date_format`` for a date
        field; absent elsewhere)."""
        entry: dict[str, Any] = {
            "name": self.name,
            "type": self.type,
            "page": self.page,
            "rect": [round(v, 3) for v in self.rect],
            "label": self.label,
            "confidence": self.confidence,
            "required": self.required,
            "multiline": self.multiline,
            "max_length": self.max_length,
            "options": list(self.options) if self.options is not None else None,
            "read_only": self.read_only,
            "comb": self.comb,
        }
        if self.widgets is not None:
            entry["widgets"] = [w.to_dict() for w in self.widgets]
        if self.type == "date":
            entry["date_format"] = self.date_format
        return entry

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Field:
        """Read a schema entry back, e.g. the ``fields`` of a fill request."""
        options = data.get("options")
        widgets = data.get("widgets")
        return cls(
            name=str(data["name"]),
            type=data["type"],
            page=int(data.get("page", 0)),
            rect=tuple(float(v) for v in data.get("rect") or (0, 0, 0, 0)),  # type: ignore[arg-type]
            label=data.get("label"),
            confidence=float(data.get("confidence", 1.0)),
            required=bool(data.get("required", False)),
            multiline=bool(data.get("multiline", False)),
            max_length=data.get("max_length"),
            options=tuple(str(o) for o in options) if options is not None else None,
            read_only=bool(data.get("read_only", False)),
            comb=bool(data.get("comb", False)),
            widgets=tuple(OptionWidget.from_dict(w) for w in widgets) if widgets else None,
            date_format=data.get("date_format"),
        )
