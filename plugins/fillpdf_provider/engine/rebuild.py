"""Build a form exactly from a schema: the second half of reviewing a conversion.

A person checks a conversion's schema and previews, edits the schema (adds, drops, moves,
renames or retypes fields, moves radio options between groups) and has the form written
from it, with no detection. Every entry is checked before anything is written, and an
error names the entry (its place in the list and its name) and what to change.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, NoReturn

from pypdf import PdfReader

from fillpdf_provider.engine.acroform_writer import date_format_for
from fillpdf_provider.engine.dates import readable, shortest_date
from fillpdf_provider.engine.detect.model import Detected, Rect
from fillpdf_provider.engine.errors import SchemaError
from fillpdf_provider.engine.form import page_box, read_fields
from fillpdf_provider.engine.schema import FIELD_TYPES, Field

#: Most widgets one schema may make (entries, and the buttons of radio groups).
MAX_WIDGETS = 5000
#: Longest name, and longest option (radio options are PDF names: 127 bytes at most).
MAX_NAME = 255
MAX_OPTION = 100
MAX_TEXT = 1000
_TYPES = ", ".join(FIELD_TYPES)
_FLAGS = ("required", "read_only", "multiline", "comb")
#: The keys an entry may have: what ``convert`` and ``inspect --json`` write. ``confidence``
#: is the detector's and is not used (built fields report 1).
ENTRY_KEYS = (
    "name", "type", "page", "rect", "label", "confidence", "required", "multiline",
    "max_length", "options", "read_only", "comb", "widgets", "date_format",
)  # fmt: skip
WIDGET_KEYS = ("export", "page", "rect")
#: How far (PDF points) a rect may run past its page's box: what rounding to 3 decimals moves.
EDGE_SLACK = 0.01

Fail = Callable[[str], NoReturn]
SchemaInput = str | bytes | Mapping[str, Any] | Sequence[Field | Mapping[str, Any]]


@dataclass
class SchemaField(Detected):
    """A widget to write, from a schema entry: what detection gives, and what a person may
    add (choice options, required, read-only). ``entry`` and ``part`` place it in the schema
    for error messages."""

    options: tuple[str, ...] | None = None
    required: bool = False
    read_only: bool = False
    entry: int = 0
    part: str = ""


def parse_schema(schema: SchemaInput) -> list[SchemaField]:
    """The widgets ``schema`` describes, in its order; raises ``SchemaError`` on a bad entry.

    ``schema`` is the list of entries ``convert`` returns (dicts or ``Field``), that whole
    result (a dict with ``schema``), or either as JSON text. Only ``name``, ``type``, ``page``
    and ``rect`` are needed; a radio group with ``widgets`` needs no ``rect``.
    """
    fields: list[SchemaField] = []
    owners: dict[str, tuple[int, str]] = {}
    exports: dict[str, set[str]] = {}
    entries = entries_of(schema)
    if not entries:
        raise SchemaError(
            "The schema has no entries, so it would build a form with no fields; give at "
            "least one entry ({'name', 'type', 'page', 'rect'})."
        )
    for index, data in enumerate(entries):
        made = _entry(index, data)
        name, kind = made[0].name, made[0].type
        if name in owners and not (kind == "radio" and owners[name][1] == "radio"):
            raise SchemaError(
                f"schema[{owners[name][0]}] has the same name; names must be unique (only "
                "the entries of one radio group may share one). Rename one of them.",
                index=index,
                name=name,
            )
        owners.setdefault(name, (index, kind))
        if kind == "radio":
            taken = exports.setdefault(name, set())
            for button in made:
                if button.export in taken:
                    raise SchemaError(
                        f"option {button.export!r} is already in radio group {name!r}; give "
                        "each button of a group its own option.",
                        index=index,
                        name=name,
                    )
                taken.add(button.export or "")
        fields.extend(made)
        if len(fields) > MAX_WIDGETS:
            raise SchemaError(f"The schema makes more than {MAX_WIDGETS} widgets; split the form.")
    for name, options in exports.items():
        if len(options) < 2:
            raise SchemaError(
                f"radio group {name!r} has one option ({_dump(sorted(options))}); a radio "
                "group lets a person pick one of several. Add its other options, or make it "
                "a checkbox.",
                index=owners[name][0],
                name=name,
            )
    return fields


def schema_digest(schema: SchemaInput) -> str:
    """What identifies the form ``schema`` builds: schemas that make the same widgets (in
    any order, rects to the 3 decimals written, confidences aside) have the same digest, so
    the schema a rebuilt form reports matches the schema it was built from."""
    widgets = []
    for field in parse_schema(schema):
        data = asdict(field)
        for key in ("entry", "part", "confidence", "cue", "group"):
            data.pop(key, None)
        data["rect"] = [round(v, 3) for v in field.rect]
        data["label"] = field.label or None
        widgets.append(json.dumps(data, sort_keys=True, ensure_ascii=False))
    return hashlib.sha256("\n".join(sorted(widgets)).encode()).hexdigest()


def entries_of(schema: SchemaInput) -> list[dict[str, Any]]:
    """The entries of ``schema`` as dicts, from any of the forms ``parse_schema`` takes."""
    given = _entry_list(_parsed(schema))
    if len(given) > MAX_WIDGETS:
        raise SchemaError(f"The schema has {len(given)} entries; at most {MAX_WIDGETS}.")
    entries = []
    for index, entry in enumerate(given):
        if isinstance(entry, Field):
            entries.append(entry.to_dict())
        elif isinstance(entry, Mapping):
            entries.append(dict(entry))
        else:
            raise SchemaError(
                f"each entry must be an object with name, type, page and rect, not "
                f"{_json_kind(entry)}.",
                index=index,
            )
    return entries


def _parsed(schema: SchemaInput) -> object:
    """``schema`` read from JSON when it is text (UTF-8 bytes or a string), else as given."""
    if isinstance(schema, bytes | bytearray | memoryview):
        try:
            schema = bytes(schema).decode("utf-8")
        except UnicodeDecodeError:
            raise SchemaError("The schema is not UTF-8 text; save it as UTF-8 JSON.") from None
    if not isinstance(schema, str):
        return schema
    try:
        return json.loads(schema)
    except (ValueError, RecursionError) as exc:
        raise SchemaError(
            f"The schema is not valid JSON ({exc}); give the list of entries "
            "`fillpdf convert --json` prints under 'schema', or that whole result."
        ) from None


def _entry_list(schema: object) -> Sequence[object]:
    """The list of entries: ``schema`` itself, or the ``schema`` list of a conversion result
    (or the ``fields`` of ``fillpdf inspect --json``)."""
    if isinstance(schema, Mapping):
        entries = schema.get("schema")
        if entries is None and isinstance(schema.get("fields"), list):
            entries = schema["fields"]  # `fillpdf inspect --json`
        if entries is None:
            raise SchemaError(
                "A schema object needs a 'schema' list, as in the result of "
                "`fillpdf convert --json`."
            )
        schema = entries
    if isinstance(schema, str | bytes) or not isinstance(schema, Sequence):
        raise SchemaError(
            "The schema must be a list of entries ({'name', 'type', 'page', 'rect'}), not "
            f"{_json_kind(schema)}."
        )
    return schema


def check_placement(fields: Sequence[SchemaField], reader: PdfReader) -> None:
    """Every widget on a page of the PDF and inside that page's visible box (a viewer shows
    nothing past the edge), with a name the PDF doesn't use yet."""
    pages = len(reader.pages)
    boxes: dict[int, Rect] = {}
    taken = {f.name for f in read_fields(reader)} if fields else set()
    for field in fields:
        fail = _failer(field.entry, field.name, field.part)
        if not field.page < pages:
            fail(
                f"page {field.page} is not in the PDF: it has {pages} page"
                f"{'s' if pages != 1 else ''}, numbered from 0 to {pages - 1}."
            )
        if field.page not in boxes:
            boxes[field.page] = page_box(reader.pages[field.page])
        _check_on_page(field, boxes[field.page], fail)
        if field.name in taken:
            fail(f"the PDF already has a field named {field.name!r}; rename this one.")


def _check_on_page(field: SchemaField, box: Rect, fail: Fail) -> None:
    """Refuse a widget that runs past its page's visible ``box``."""
    x0, y0, x1, y1 = field.rect
    if not (x0 < box[2] and x1 > box[0] and y0 < box[3] and y1 > box[1]):
        fail(
            f"rect {_show(field.rect)} is outside page {field.page}, whose box is "
            f"{_show(box)}; move it onto the page."
        )
    slack = EDGE_SLACK
    if x0 < box[0] - slack or y0 < box[1] - slack or x1 > box[2] + slack or y1 > box[3] + slack:
        fail(
            f"rect {_show(field.rect)} runs past the edge of page {field.page}, whose box is "
            f"{_show(box)}; move or shrink it to lie inside."
        )


def fit_to_pages(detected: Sequence[Detected], reader: PdfReader) -> list[Detected]:
    """Detected fields cut to their page's visible box, so the schema a conversion returns
    builds again (``check_placement``): a drawn box may run past the edge of the page."""
    boxes: dict[int, Rect] = {}
    fitted = []
    for field in detected:
        if field.page not in boxes:
            boxes[field.page] = page_box(reader.pages[field.page])
        b = boxes[field.page]
        x0, y0, x1, y1 = field.rect
        rect = (max(x0, b[0]), max(y0, b[1]), min(x1, b[2]), min(y1, b[3]))
        if rect[0] < rect[2] and rect[1] < rect[3]:
            fitted.append(field if rect == field.rect else replace(field, rect=rect))
    return fitted


# -- one entry ----------------------------------------------------------------------------


def _entry(index: int, data: dict[str, Any]) -> list[SchemaField]:
    name = data.get("name")
    fail = _failer(index, name if isinstance(name, str) else None)
    _check_keys(data, ENTRY_KEYS, "an entry", fail)
    name = _entry_name(name, fail)
    kind = _entry_type(data.get("type"), fail)
    page = _page(data.get("page"), fail)
    flags = {key: _flag(data.get(key), key, fail) for key in _FLAGS}
    label = data.get("label")
    if label is not None:
        label = _string(label, "label", fail, limit=MAX_TEXT, blank=True)
    max_length = _max_length(data.get("max_length"), fail)
    _check_flags(flags, kind, max_length, fail)
    options = _options(data.get("options"), kind, fail)
    date_format = _date_format(data.get("date_format"), kind, fail)
    _check_date_length(kind, date_format, max_length, fail)
    common: dict[str, Any] = dict(
        name=name, type=kind, label=label, confidence=1.0, multiline=flags["multiline"],
        max_length=max_length, comb=flags["comb"], options=options,
        required=flags["required"], read_only=flags["read_only"], date_format=date_format,
        entry=index,
    )  # fmt: skip
    if kind != "radio":
        rect = _rect(data.get("rect"), fail)
        return [SchemaField(page=page, rect=rect, **common)]
    return _radio(data.get("widgets"), data.get("rect"), page, options, common, fail)


def _check_keys(data: Mapping[str, Any], known: Sequence[str], what: str, fail: Fail) -> None:
    """Refuse a key nothing reads (a misspelt flag would be lost without a word)."""
    for key in data:
        if key in known:
            continue
        near = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]!r}? " if near else ""
        fail(f"unknown key {_dump(key)}: {hint}{what} takes {', '.join(known)}.")


def _date_format(value: Any, kind: str, fail: Fail) -> str | None:
    """A date field's format, Acrobat style (``mm/dd/yyyy``): what its values are written in."""
    if value is None:
        return None
    if kind != "date":
        fail(f"date_format is for date fields, not {kind}; set it to null.")
    text = _string(value, "date_format", fail, limit=40)
    if not readable(text) or not re.search(r"y", text) or not re.search(r"d", text):
        fail(
            f"date_format {_dump(value)} is not a date format: use Acrobat's letters, "
            "e.g. mm/dd/yyyy, dd.mm.yyyy or yyyy-mm-dd."
        )
    return text


def _check_date_length(
    kind: str, date_format: str | None, max_length: int | None, fail: Fail
) -> None:
    """Refuse a date field whose max_length holds no date: read back, it would be text."""
    if kind != "date" or not max_length:
        return
    af_format = date_format or date_format_for(max_length)
    if shortest_date(af_format) > max_length:
        fail(
            f"max_length {max_length} holds no date in the format {af_format} (at least "
            f"{shortest_date(af_format)} characters); raise max_length, give a shorter "
            "date_format (e.g. mmddyy), or make the field type 'text'."
        )


def _entry_name(name: Any, fail: Fail) -> str:
    if name is None:
        fail("needs a 'name', the key its value is filled by.")
    text = _string(name, "name", fail, limit=MAX_NAME)
    if "." in text:
        fail("a name may not contain '.', which PDF uses to nest field names; use '_'.")
    return text


def _entry_type(kind: Any, fail: Fail) -> str:
    if kind is None:
        fail(f"needs a 'type', one of {_TYPES}.")
    if kind not in FIELD_TYPES:
        fail(f"type {_dump(kind)} is not one of {_TYPES}.")
    return str(kind)


def _max_length(value: Any, fail: Fail) -> int | None:
    if value is not None and not (
        isinstance(value, int) and not isinstance(value, bool) and value > 0
    ):
        fail(f"max_length must be a positive whole number or null, not {_dump(value)}.")
    return value


def _check_flags(flags: dict[str, bool], kind: str, max_length: int | None, fail: Fail) -> None:
    """Refuse what only some types take: comb and multiline text, a text or date length."""
    if flags["comb"] and (kind != "text" or not max_length):
        fail("comb (one box per character) needs type 'text' and a max_length; set comb false.")
    if flags["multiline"] and kind != "text":
        fail(f"multiline is for text fields, not {kind}; set multiline false.")
    if max_length and kind not in ("text", "date"):
        fail(f"max_length is for text and date fields, not {kind}; set it to null.")


def _radio(
    widgets: Any,
    rect: Any,
    page: int,
    options: tuple[str, ...] | None,
    common: dict[str, Any],
    fail: Fail,
) -> list[SchemaField]:
    """A radio group's buttons: one per widget, or one at ``rect`` for a single option."""
    common = {**common, "options": None}
    if widgets is None:
        return [_lone_button(rect, page, options, common, fail)]
    if not isinstance(widgets, list) or not widgets:
        fail('widgets must be a non-empty list of {"export", "rect", "page"} objects.')
    if len(widgets) > MAX_WIDGETS:
        fail(f"has {len(widgets):,} widgets; a schema makes at most {MAX_WIDGETS:,}.")
    buttons = [_button(number, widget, page, common) for number, widget in enumerate(widgets)]
    given = [b.export for b in buttons]
    if len(set(given)) != len(given):
        fail(f"its widgets repeat an option ({_dump(given)}); give each its own export.")
    if options is not None and set(options) != set(given):
        fail(
            f"options {_dump(list(options))} and the widgets' exports {_dump(given)} differ; "
            "edit both, or leave options out."
        )
    return buttons


def _lone_button(
    rect: Any, page: int, options: tuple[str, ...] | None, common: dict[str, Any], fail: Fail
) -> SchemaField:
    """The one button of a radio group given a ``rect`` and a single option."""
    if not options:
        fail(
            'a radio group needs its options: \'widgets\': [{"export": option, "rect": '
            "[x0, y0, x1, y1]}, ...], one per button."
        )
    if len(options) > 1:
        fail(
            f"lists {len(options)} options but has one rect; give each option its own "
            'place in \'widgets\': [{"export": option, "rect": [x0, y0, x1, y1]}, ...].'
        )
    return SchemaField(page=page, rect=_rect(rect, fail), export=options[0], **common)


def _button(number: int, widget: Any, page: int, common: dict[str, Any]) -> SchemaField:
    """Button ``number`` of a radio group's ``widgets``; ``page`` is the entry's."""
    part = f"widgets[{number}]"
    at = _failer(common["entry"], common["name"], part)
    if not isinstance(widget, Mapping):
        at("must be an object with export and rect (page defaults to the entry's).")
    _check_keys(widget, WIDGET_KEYS, "a widget", at)
    export = _string(widget.get("export"), "export", at, limit=MAX_OPTION)
    if export == "Off":
        at("export 'Off' is what PDF calls no choice; name the option otherwise.")
    button_page = _page(widget["page"], at) if widget.get("page") is not None else page
    return SchemaField(
        page=button_page, rect=_rect(widget.get("rect"), at), export=export, part=part, **common
    )


def _page(value: Any, fail: Fail) -> int:
    if value is None:
        fail("needs a 'page', the 0-based page index.")
    whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if isinstance(value, bool) or not whole or value < 0:
        fail(f"page must be a whole number from 0 (the first page), not {_dump(value)}.")
    return int(value)


def _rect(value: Any, fail: Fail) -> Rect:
    if value is None:
        fail("needs a 'rect': [x0, y0, x1, y1] in PDF points, from the page's bottom left.")
    numbers = isinstance(value, list | tuple) and len(value) == 4
    if not numbers or not all(_number(v) for v in value):
        fail(f"rect must be 4 numbers [x0, y0, x1, y1] in PDF points, not {_dump(value)}.")
    x0, y0, x1, y1 = (round(float(v), 3) for v in value)  # as the PDF will have it
    if not (x1 > x0 and y1 > y0):
        fail(
            f"rect {_show((x0, y0, x1, y1))} has no area; give [x0, y0, x1, y1] with x1 > x0 "
            "and y1 > y0."
        )
    return (x0, y0, x1, y1)


def _options(value: Any, kind: str, fail: Fail) -> tuple[str, ...] | None:
    if value is None:
        if kind == "choice":
            fail("a choice field needs 'options', the list of values to pick from.")
        return None
    if not isinstance(value, list):
        fail(f"options must be a list of non-empty strings, not {_dump(value)}.")
    limit = MAX_OPTION if kind == "radio" else MAX_TEXT
    value = [_string(o, "each option", fail, limit=limit) for o in value]
    _check_options(value, kind, fail)
    return tuple(value)


def _check_options(options: list[str], kind: str, fail: Fail) -> None:
    if kind == "radio" and "Off" in options:
        fail("option 'Off' is what PDF calls no choice; name the option otherwise.")
    if kind == "choice" and not options:
        fail("a choice field needs at least one option.")
    if len(set(options)) != len(options):
        fail(f"options repeat a value ({_dump(options)}); list each once.")


def _string(value: Any, what: str, fail: Fail, *, limit: int, blank: bool = False) -> str:
    """Text the PDF can hold: a string, not blank (unless ``blank``), not too long."""
    if not isinstance(value, str) or not (blank or value.strip()):
        fail(f"{what} must be a non-empty string, not {_dump(value)}.")
    if len(value) > limit:
        fail(f"{what} is {len(value):,} characters long; at most {limit:,}.")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        fail(f"{what} {_dump(value)} holds a lone surrogate, which no PDF text can; fix it.")
    return value


def _flag(value: Any, key: str, fail: Fail) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        fail(f"{key} must be true or false, not {_dump(value)}.")
    return value


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _failer(index: int, name: str | None, part: str = "") -> Fail:
    """A function that raises the entry's ``SchemaError`` with a message."""

    def fail(message: str) -> NoReturn:
        raise SchemaError(f"{part}: {message}" if part else message, index=index, name=name)

    return fail


def _show(rect: Sequence[float]) -> str:
    return "[" + ", ".join(f"{v:g}" for v in rect) + "]"


def _dump(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _json_kind(value: Any) -> str:
    if isinstance(value, str | bytes):
        return "a string"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    return "a list" if isinstance(value, Sequence) else type(value).__name__
