"""Make a flat PDF fillable: each detected field becomes an AcroForm widget.

The form is appended as an incremental update, so the original bytes (and any signature
over them) stay as they were. Every widget comes with its appearance streams, so viewers
need no ``/NeedAppearances`` and our own ``Template`` can inspect and fill the result.
Output is a function of the input alone: the same PDF and fields give the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from pypdf import PdfReader
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, NameObject, NumberObject

from fillpdf_provider.engine.appearance import Box, check_stream, form_xobject, widget_box
from fillpdf_provider.engine.detect.model import Detected
from fillpdf_provider.engine.errors import FillPdfError
from fillpdf_provider.engine.fonts import HELVETICA_OBJECT
from fillpdf_provider.engine.form import (
    FF_COMB,
    FF_COMBO,
    FF_MULTILINE,
    FF_RADIO,
    FF_READ_ONLY,
    FF_REQUIRED,
    acroform_of,
    read_fields,
)
from fillpdf_provider.engine.incremental import append_update
from fillpdf_provider.engine.pdfsyntax import dict_without, name, ref, serialize, text_string
from fillpdf_provider.engine.schema import FIELD_TYPES
from fillpdf_provider.engine.source import PdfInput, open_pdf, reading_pdf

FF_NO_TOGGLE_TO_OFF = 1 << 14
ANNOT_PRINT = 1 << 2
TEXT_DA = "/Helv 0 Tf 0 g"  # size 0: auto size, so any box height reads well
BUTTON_DA = "/ZaDb 0 Tf 0 g"
DATE_FORMAT = "mm/dd/yyyy"

_ZAPF_DINGBATS = b"<</Type/Font/Subtype/Type1/BaseFont/ZapfDingbats>>"
_CHECK_GLYPH = "4"  # ZapfDingbats check mark, what viewers redraw a checkbox with
_DOT_GLYPH = "l"  # ZapfDingbats filled circle, for radio buttons
_EMPTY_TEXT = b"/Tx BMC\nEMC"
_BLACK = b"0 g"
_Object = tuple[int, int, bytes]


def write_acroform(
    pdf: PdfInput, fields: Sequence[Detected], *, rename_taken: bool = False
) -> bytes:
    """``pdf`` with ``fields`` as fillable widgets, appended as an incremental update.

    Radio buttons sharing a ``name`` become one radio group whose options are their
    ``export`` values. Raises ``FillPdfError`` for fields that cannot be placed (unknown
    type, missing or clashing name, page out of range, empty rectangle). With
    ``rename_taken`` (names the detector chose), a name the PDF's own fields already use
    gets a free suffix (``name_2``) instead.
    """
    opened = open_pdf(pdf)
    reader = opened.reader
    with reading_pdf():
        taken = _existing_names(reader)
        if rename_taken and taken:
            fields = _renamed(fields, taken)
        groups = _group(fields, len(reader.pages), taken)
        update = _Update(reader, opened.base.size)
        for group in groups:
            update.add_group(group)
        objects = update.finish()
    return append_update(opened.base, objects)


# -- checking the input -------------------------------------------------------------------


def _renamed(fields: Sequence[Detected], taken: set[str]) -> list[Detected]:
    """``fields`` with each name the PDF already uses given the first free ``_2``, ``_3``
    suffix (a radio group's buttons keep one name between them)."""
    used = set(taken) | {d.name for d in fields}
    chosen: dict[str, str] = {}
    out = []
    for detected in fields:
        if detected.name in taken:
            new = chosen.get(detected.name)
            if new is None:
                number = 2
                while f"{detected.name}_{number}" in used:
                    number += 1
                new = chosen[detected.name] = f"{detected.name}_{number}"
                used.add(new)
            detected = replace(detected, name=new)
        out.append(detected)
    return out


def _existing_names(reader: PdfReader) -> set[str]:
    return {f.name for f in read_fields(reader)}


def _group(fields: Sequence[Detected], pages: int, taken: set[str]) -> list[list[Detected]]:
    """Fields in input order, radio buttons gathered under their group's first place."""
    groups: dict[str, list[Detected]] = {}
    for detected in fields:
        _check_field(detected, pages)
        if detected.name in taken:
            raise FillPdfError(
                f"The PDF already has a field named {detected.name!r}: give the new field "
                f"another name in the schema, or leave it out if it is the same field "
                f"(`fillpdf inspect` lists the {len(taken)} fields the PDF has).",
                param=detected.name,
            )
        group = groups.setdefault(detected.name, [])
        if group and not (detected.type == "radio" and group[0].type == "radio"):
            raise FillPdfError(
                f"Two fields are named {detected.name!r}; only radio buttons of one group "
                "may share a name.",
                param=detected.name,
            )
        group.append(detected)
    for group in groups.values():
        if group[0].type == "radio":
            _check_exports(group)
    return list(groups.values())


def _check_field(detected: Detected, pages: int) -> None:
    label = detected.name or "a field"
    if detected.type not in FIELD_TYPES:
        raise FillPdfError(f"{label}: unknown field type {detected.type!r}.", param=detected.name)
    if not detected.name:
        raise FillPdfError(f"A {detected.type} field on page {detected.page + 1} has no name.")
    if not 0 <= detected.page < pages:
        raise FillPdfError(
            f"{label}: page {detected.page} is not in the PDF (it has {pages}).",
            param=detected.name,
        )
    x0, y0, x1, y1 = _rect(detected)
    if not (x1 - x0 > 0 and y1 - y0 > 0):
        raise FillPdfError(f"{label}: its rectangle is empty.", param=detected.name)


def _check_exports(group: list[Detected]) -> None:
    seen: set[str] = set()
    for index, button in enumerate(group):
        export = _export(button, index)
        if export == "Off" or export in seen:
            raise FillPdfError(
                f"{button.name}: radio option {export!r} is repeated or reserved; give each "
                "button of a group its own export value.",
                param=button.name,
            )
        seen.add(export)


def _export(button: Detected, index: int) -> str:
    """A radio button's on-state: its export value, else its place in the group."""
    return button.export or str(index)


def _rect(detected: Detected) -> tuple[float, float, float, float]:
    """The rect as written (3 decimals), so appearances are sized from the same numbers as
    ``/Rect`` and a form rebuilt from its schema comes out byte for byte the same."""
    x0, y0, x1, y1 = (round(float(v), 3) for v in detected.rect)
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


# -- writing ------------------------------------------------------------------------------


def _number(value: float) -> bytes:
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return (text if text not in ("-0", "") else "0").encode("ascii")


def _rect_bytes(rect: tuple[float, float, float, float]) -> bytes:
    return b"[" + b" ".join(_number(v) for v in rect) + b"]"


def _script_action(script: str) -> bytes:
    return b"<</S/JavaScript/JS" + text_string(script) + b">>"


#: Date formats from the longest, for a box that limits its characters: an 8-cell comb
#: (MMDDYYYY on the page) can't hold mm/dd/yyyy, and a format it can't hold refuses every date.
DATE_FORMATS = (DATE_FORMAT, "mmddyyyy", "mmddyy")


def date_format_for(max_length: int | None) -> str:
    """The longest date format a field of ``max_length`` characters holds (the usual one
    when none does: no date fits such a box either way)."""
    for candidate in DATE_FORMATS:
        if not max_length or len(candidate) <= max_length:
            return candidate
    return DATE_FORMAT


def _date_actions(af_format: str) -> bytes:
    """The format and keystroke actions that make a text field a date field."""
    return (
        b"/AA<</F"
        + _script_action(f'AFDate_FormatEx("{af_format}");')
        + b"/K"
        + _script_action(f'AFDate_KeystrokeEx("{af_format}");')
        + b">>"
    )


@dataclass
class _Page:
    ref: IndirectObject
    rotation: int
    widgets: list[int] = field(default_factory=list)


class _Update:
    """The objects of the update, numbered from the PDF's first free object number."""

    def __init__(self, reader: PdfReader, first_free: int) -> None:
        self._reader = reader
        self._next = first_free
        self._objects: list[_Object] = []
        self._shared: dict[bytes, int] = {}
        self._roots: list[int] = []
        self._pages: dict[int, _Page] = {}

    def _reserve(self) -> int:
        number = self._next
        self._next += 1
        return number

    def _put(self, number: int, body: bytes, generation: int = 0) -> None:
        self._objects.append((number, generation, body))

    def _add(self, body: bytes) -> int:
        number = self._reserve()
        self._put(number, body)
        return number

    def _add_shared(self, body: bytes) -> int:
        """One object for identical bodies: same-sized boxes share their appearances."""
        if body not in self._shared:
            self._shared[body] = self._add(body)
        return self._shared[body]

    def _page(self, index: int) -> _Page:
        if index not in self._pages:
            page = self._reader.pages[index]
            page_ref = page.indirect_reference
            if page_ref is None:
                raise FillPdfError(f"Page {index + 1} is not an indirect object.")
            self._pages[index] = _Page(page_ref, int(page.get("/Rotate", 0) or 0) % 360)
        return self._pages[index]

    # -- fields

    def add_group(self, group: list[Detected]) -> None:
        if group[0].type == "radio":
            self._add_radio(group)
        else:
            self._add_single(group[0])

    def _add_single(self, detected: Detected) -> None:
        page = self._page(detected.page)
        rect = _rect(detected)
        box = _box(rect, page.rotation)
        if detected.type == "checkbox":
            body = _field_entries(detected) + self._button_widget(box, False, "Yes")
        else:
            content = b"" if detected.type == "signature" else _EMPTY_TEXT
            ap = self._add_shared(form_xobject(box, content))
            body = _field_entries(detected) + b"/AP<</N %d 0 R>>" % ap
        number = self._add(self._widget(page, rect, detected.type) + body + b">>")
        page.widgets.append(number)
        self._roots.append(number)

    def _add_radio(self, group: list[Detected]) -> None:
        parent = self._reserve()
        kids = []
        for index, button in enumerate(group):
            page = self._page(button.page)
            rect = _rect(button)
            box = _box(rect, page.rotation)
            state = self._button_widget(box, True, _export(button, index))
            body = self._widget(page, rect, "radio") + b"/Parent %d 0 R" % parent + state + b">>"
            number = self._add(body)
            page.widgets.append(number)
            kids.append(b"%d 0 R" % number)
        flags = FF_RADIO | FF_NO_TOGGLE_TO_OFF | _marks(group[0])
        labels = {b.label for b in group}
        label = labels.pop() if len(labels) == 1 else None
        tooltip = b"/TU" + text_string(label) if label else b""
        self._put(
            parent,
            b"<</FT/Btn/Ff %d/T%s%s/DA%s/V/Off/Kids[%s]>>"
            % (flags, text_string(group[0].name), tooltip, text_string(BUTTON_DA), b" ".join(kids)),
        )
        self._roots.append(parent)

    def _widget(self, page: _Page, rect: tuple[float, float, float, float], kind: str) -> bytes:
        mk = b""
        if kind in ("checkbox", "radio"):
            mk += b"/CA" + text_string(_DOT_GLYPH if kind == "radio" else _CHECK_GLYPH)
        if page.rotation:
            mk += b"/R %d" % page.rotation
        return b"<</Type/Annot/Subtype/Widget/Rect%s/P %s/F %d%s" % (
            _rect_bytes(rect),
            ref(page.ref),
            ANNOT_PRINT,
            b"/MK<<" + mk + b">>" if mk else b"",
        )

    def _button_widget(self, box: Box, radio: bool, on_state: str) -> bytes:
        """A button's appearances (drawn on, blank off), shown off."""
        on = self._add_shared(form_xobject(box, check_stream(box, radio, True, _BLACK)))
        off = self._add_shared(form_xobject(box, check_stream(box, radio, False, _BLACK)))
        return b"/AS/Off/AP<</N<<%s %d 0 R/Off %d 0 R>>>>" % (name(on_state), on, off)

    # -- pages and the form

    def finish(self) -> list[_Object]:
        for index in sorted(self._pages):
            self._rewrite_page(index, self._pages[index])
        self._write_form()
        return self._objects

    def _rewrite_page(self, index: int, page: _Page) -> None:
        obj = self._reader.pages[index]
        annots = obj.get("/Annots")
        annots = annots.get_object() if annots is not None else None
        kept = [serialize(a) for a in annots] if isinstance(annots, ArrayObject) else []
        entries = kept + [b"%d 0 R" % n for n in page.widgets]
        body = dict_without(obj, frozenset({"/Annots"}))
        body += b"/Annots[" + b" ".join(entries) + b"]>>"
        self._put(page.ref.idnum, body, page.ref.generation)

    def _write_form(self) -> None:
        """The AcroForm with the PDF's own fields (if any) followed by ours."""
        root_ref = self._reader.trailer.raw_get("/Root")
        root = root_ref.get_object()
        existing = acroform_of(self._reader) or DictionaryObject()
        fields = [serialize(f) for f in existing.get("/Fields", ArrayObject()) or []]
        fields += [b"%d 0 R" % n for n in self._roots]
        body = dict_without(existing, frozenset({"/Fields", "/DR", "/XFA"}))
        body += b"/Fields[" + b" ".join(fields) + b"]/DR" + self._resources(existing)
        if "/DA" not in existing:
            body += b"/DA" + text_string(TEXT_DA)
        body += b">>"
        raw = root.raw_get("/AcroForm") if "/AcroForm" in root else None
        if isinstance(raw, IndirectObject) and "/NeedsRendering" not in root:
            self._put(raw.idnum, body, raw.generation)
            return
        form = self._add(body)
        catalog = dict_without(root, frozenset({"/AcroForm", "/NeedsRendering"}))
        self._put(root_ref.idnum, catalog + b"/AcroForm %d 0 R>>" % form, root_ref.generation)

    def _resources(self, acroform: DictionaryObject) -> bytes:
        """``/DR`` with the form's own fonts, plus Helvetica and ZapfDingbats if missing."""
        dr = acroform.get("/DR")
        dr = dr.get_object() if dr is not None else DictionaryObject()
        fonts = dr.get("/Font")
        fonts = fonts.get_object() if fonts is not None else DictionaryObject()
        entries = [name(k[1:]) + b" " + serialize(fonts.raw_get(k)) for k in fonts]
        for key, font in (("Helv", HELVETICA_OBJECT), ("ZaDb", _ZAPF_DINGBATS)):
            if "/" + key not in fonts:
                entries.append(name(key) + b" %d 0 R" % self._add(font))
        rest = dict_without(dr, frozenset({"/Font"}))
        return rest + b"/Font<<" + b"".join(entries) + b">>>>"


def _box(rect: tuple[float, float, float, float], rotation: int) -> Box:
    """The appearance box, turned with the page so the text reads upright on screen."""
    mk = DictionaryObject({NameObject("/R"): NumberObject(rotation)})
    return widget_box(DictionaryObject({NameObject("/MK"): mk}), rect)


def _field_entries(detected: Detected) -> bytes:
    """The field half of a merged field/widget dictionary."""
    kind = detected.type
    head = b"/T" + text_string(detected.name)
    if detected.label:
        head += b"/TU" + text_string(detected.label)
    marks = _marks(detected)
    if kind == "checkbox":
        ff = b"/Ff %d" % marks if marks else b""
        return b"/FT/Btn" + head + ff + b"/DA" + text_string(BUTTON_DA) + b"/V/Off"
    head += b"/DA" + text_string(TEXT_DA)
    if kind == "signature":
        return b"/FT/Sig" + head + (b"/Ff %d" % marks if marks else b"")
    if kind == "choice":
        options = getattr(detected, "options", None) or ()
        opt = b" ".join(text_string(str(o)) for o in options)
        return b"/FT/Ch" + head + b"/Ff %d/Opt[%s]" % (FF_COMBO | marks, opt)
    af_format = detected.date_format or date_format_for(detected.max_length)
    dates = _date_actions(af_format) if kind == "date" else b""
    return b"/FT/Tx" + head + _text_flags(detected) + dates


def _marks(detected: Detected) -> int:
    """Required and read-only flags: detection never sets them, a schema entry may."""
    flags = FF_REQUIRED if getattr(detected, "required", False) else 0
    return flags | (FF_READ_ONLY if getattr(detected, "read_only", False) else 0)


def _text_flags(detected: Detected) -> bytes:
    """``/Ff`` and ``/MaxLen``: comb needs a length and excludes multiline."""
    length = detected.max_length if detected.max_length and detected.max_length > 0 else None
    flags = _marks(detected)
    if detected.comb and length and detected.type == "text":
        flags |= FF_COMB
    elif detected.multiline and detected.type == "text":  # as the form reader reports it
        flags |= FF_MULTILINE
    out = b"/Ff %d" % flags if flags else b""
    return out + (b"/MaxLen %d" % length if length else b"")
