"""Fill a form: a compiled template, then one small incremental update per row.

``Template`` parses the form once and prepares, for every field, the bytes of the objects a
value rewrites, minus the parts that change. Filling a row then validates the values, draws
appearance streams for what changed and appends the update to the template's bytes: the
cost of a row grows with the fields it sets, not with the size of the form.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, SupportsIndex, SupportsInt, TypeGuard

from pypdf import PageObject
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, StreamObject

from fillpdf_provider.engine import fonts, shaping
from fillpdf_provider.engine.appearance import (
    Box,
    DefaultAppearance,
    Fit,
    TextStyle,
    TextTooLong,
    check_stream,
    form_xobject,
    listbox_stream,
    most_chars,
    text_stream,
    visible_chars,
    widget_box,
)
from fillpdf_provider.engine.coerce import button_value
from fillpdf_provider.engine.dates import form_date, shortest_date
from fillpdf_provider.engine.errors import (
    FieldValueError,
    NoFormError,
    TextOverflowError,
    UnknownFieldError,
    given_value,
    quoted_value,
)
from fillpdf_provider.engine.files import write_atomic
from fillpdf_provider.engine.form import (
    FormField,
    Target,
    Widget,
    acroform_of,
    check_form_size,
    read_fields,
    top_field_ref,
)
from fillpdf_provider.engine.incremental import append_update
from fillpdf_provider.engine.pdfsyntax import dict_without, name, ref, serialize, text_string
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.engine.shaped_font import ShapedFont, ShapedGlyphs
from fillpdf_provider.engine.source import PdfInput, open_pdf, reading_pdf

_TEXT_KINDS = ("text", "date", "signature", "choice")
#: Kinds whose values are bounded by their box's room (a choice shows the form's options).
_ROOM_KINDS = ("text", "date", "signature")
#: Kinds whose value is one of a set (a tick, an option): read by the one value rule.
BUTTON_KINDS = ("checkbox", "radio", "choice")
#: A row's embedded subsets: fallback font index -> (subset, object number of its font).
_Unicode = dict[int, tuple[fonts.UnicodeSubset, int]]
#: The font a value is drawn with, when it is laid out by script (``shaping``) rather than
#: drawn character by character with one font.
SHAPED = -1
_DROP_TEXT = frozenset({"/V", "/AP", "/AS", "/I"})
_DROP_BUTTON = frozenset({"/V", "/AS"})
_DROP_BUTTON_AP = frozenset({"/V", "/AS", "/AP"})
_DROP_FLATTEN_PAGE = frozenset({"/Annots", "/Contents", "/Resources"})
_DROP_PARENT_TEXT = frozenset({"/V", "/I"})
_DROP_PARENT_BUTTON = frozenset({"/V"})
_NONE_ON: frozenset[str] = frozenset()


@dataclass
class _WidgetPlan:
    widget: Widget
    number: int
    generation: int
    prefix: bytes  # the widget dict without what a row sets, unclosed
    box: Box
    merged: bool  # the widget is also the field dictionary (it holds /V)
    da: DefaultAppearance  # the widget's own /DA where it has one, else the field's
    quadding: int
    aligned: bool  # the form states the alignment (else a right-to-left value goes right)
    style: TextStyle | None = None  # text-like fields: the form's own font, when usable
    helvetica: TextStyle | None = None  # ... and Helvetica in the widget's /DA, made once
    button_ap: bytes = b""  # buttons whose appearances we drew or renamed: their /AP entry ...
    button_on: int = 0  # ... and the object number of the drawn on-state (0: renamed)
    on_name: str = "Yes"  # the on-state name written (the empty name ``/`` becomes Yes)
    on_state: str = ""  # buttons: the on-state name the widget's appearances use


@dataclass
class _FieldPlan:
    field: FormField
    widgets: list[_WidgetPlan]
    parents: list[tuple[int, int, bytes]]  # field dicts apart from their widgets
    da: DefaultAppearance
    order: int = 0  # the field's place in the form
    items: list[str] = dataclasses.field(default_factory=list)  # list box: each option shown
    # Read once from the field, not once per row:
    multiline: bool = False  # text wraps
    comb: int | None = None  # a comb field's cells
    # buttons: the on-states each value turns on (a checkbox's true: all of them)
    chooses: dict[object, frozenset[str]] = dataclasses.field(default_factory=dict)
    # text: the most visible characters its widgets can show, per smallest size (most_chars)
    room: dict[float, int] = dataclasses.field(default_factory=dict)

    def most_chars(self, fit: Fit) -> int:
        """The most visible characters a value can have to be shown in every widget."""
        most = self.room.get(fit.min_size)
        if most is None:
            least = shortest_date(self.field.date_format) if self.field.date_format else 1
            most = min(
                most_chars(wp.box, wp.da.size, fit, multiline=self.multiline, least=least)
                for wp in self.widgets
            )
            self.room[fit.min_size] = most  # the same for any row: a race writes it twice
        return most


@dataclass
class _Row:
    """What one fill emits, numbered from the template's first free object."""

    objects: list[tuple[int, int, bytes]]
    next_number: int
    fit: Fit
    drawn: dict[int, tuple[int, Box]] = dataclasses.field(default_factory=dict)  # widget -> AP
    states: dict[int, str] = dataclasses.field(default_factory=dict)  # button widget -> /AS
    cut: list[str] = dataclasses.field(default_factory=list)  # fields whose text was cut
    fallback: dict[str, int] = dataclasses.field(default_factory=dict)  # text -> its font
    shaped: ShapedGlyphs | None = None  # the subsets shaped values draw from, when any

    def allocate(self, count: int) -> int:
        """The first of ``count`` fresh object numbers."""
        number = self.next_number
        self.next_number += count
        return number

    @property
    def option_fit(self) -> Fit:
        """A choice shows one of the form's own options: one too long for its box is the
        form's doing, not the row's, so it is drawn from its start at the field's own size
        and cut at the box's edge, as a viewer's combo box shows it, and reported, never
        refused (it shrinks first where the minimum size holds it whole)."""
        return _option_fit(self.fit.min_size)

    def add(self, body: bytes) -> int:
        number = self.next_number
        self.next_number += 1
        self.objects.append((number, 0, body))
        return number


@dataclass(frozen=True)
class Filled:
    """A filled PDF and the fields whose text its overflow policy cut to fit their boxes."""

    pdf: bytes
    cut: tuple[str, ...] = ()


class Template:
    """A fillable PDF parsed once, ready to fill any number of rows.

    Output is deterministic: the same template and values give the same bytes.
    """

    def __init__(self, pdf: PdfInput, *, max_fields: int | None = None) -> None:
        """``max_fields`` refuses a form that declares more, before any field is read."""
        opened = open_pdf(pdf)
        self._reader, self._base = opened.reader, opened.base
        #: What had to be mended to read the template ("" when nothing), worth a note.
        self.repaired = opened.repaired
        self._pages_lock = threading.Lock()
        with reading_pdf("The PDF's form"):
            if max_fields is not None:
                check_form_size(self._reader, max_fields)
            self._compile()

    def _compile(self) -> None:
        form_fields = read_fields(self._reader)
        if not any(f.visible for f in form_fields):
            raise NoFormError(
                "The PDF has no fillable fields: it is a flat form, or its widgets are all "
                "hidden. Fill a PDF that has an AcroForm."
            )
        self._by_name = {f.name: f for f in form_fields}
        # Hidden fields can be filled by name but are not offered: no one sees them.
        self.fields: list[Field] = [f.schema() for f in form_fields if f.visible]
        self._next = self._base.size
        self._helvetica = self._allocate()
        self._helvetica_ref = b"%d 0 R" % self._helvetica
        self._constant: list[tuple[int, int, bytes]] = [
            (self._helvetica, 0, fonts.HELVETICA_OBJECT)
        ]
        self._dr_fonts = self._resource_fonts()
        self._plans = {f.name: self._plan(f) for f in form_fields}
        for order, plan in enumerate(self._plans.values()):
            plan.order = order
        self._widget_numbers = {wp.number for p in self._plans.values() for wp in p.widgets}
        self._root_objects, self._flat_root_objects = self._rewrite_form_root(form_fields)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Template:
        return cls(Path(path))

    def date_format(self, field_name: str) -> str | None:
        """The date format a date field's scripts use (``mm/dd/yyyy``), if it names one."""
        plan = self._plans.get(field_name)
        return plan.field.date_format if plan is not None else None

    @property
    def page_count(self) -> int:
        return len(self._reader.pages)

    # -- filling ------------------------------------------------------------------------

    def fill(
        self, values: Mapping[str, object], *, flatten: bool = False, fit: Fit | None = None
    ) -> bytes:
        """The template with ``values`` set; with ``flatten``, drawn into the pages.

        ``fit`` says what to do with text too long for its box (by default: shrink to 4 pt,
        then raise ``TextOverflowError``); ``fill_result`` also tells which fields it cut.
        """
        return self.fill_result(values, flatten=flatten, fit=fit).pdf

    def fill_result(
        self, values: Mapping[str, object], *, flatten: bool = False, fit: Fit | None = None
    ) -> Filled:
        """``fill``, with the names of the fields whose text ``fit`` cut to fit."""
        chosen = self._check(values)
        row = _Row(list(self._constant), self._next, fit or _DEFAULT_FIT)
        _check_room(chosen, row.fit)
        unicode = self._unicode_font(row, chosen)
        for plan, value in chosen:
            if plan.field.kind in _TEXT_KINDS:
                self._emit_text(row, plan, str(value), unicode)  # a str: validated
            else:
                self._emit_button(row, plan, value)
        if row.shaped is not None:
            row.objects.extend(row.shaped.objects())
        if flatten:
            # Flattening reads the pages through pypdf, whose reader is not safe to share
            # between threads (a service fills one template from several).
            with self._pages_lock, reading_pdf("The PDF's pages"):
                self._emit_flatten(row)
            row.objects.extend(self._flat_root_objects)
        else:
            row.objects.extend(self._root_objects)
        return Filled(append_update(self._base, row.objects), tuple(dict.fromkeys(row.cut)))

    def write(
        self,
        path: str | os.PathLike[str],
        values: Mapping[str, object],
        *,
        flatten: bool = False,
        fit: Fit | None = None,
    ) -> Path:
        """Fill and write to ``path`` atomically: a temporary file renamed into place."""
        data = self.fill(values, flatten=flatten, fit=fit)
        return write_atomic(Path(path), data)

    def check(self, values: Mapping[str, object]) -> None:
        """Raise the error ``fill`` would raise for ``values`` (an unknown field, a value
        the field refuses, text longer than its box can show, a character no font can
        draw), without filling."""
        chosen = self._check(values)
        _check_room(chosen, _DEFAULT_FIT)
        self._unicode_chars(chosen)

    def _check(self, values: Mapping[str, object]) -> list[tuple[_FieldPlan, object]]:
        chosen = []
        for key, value in values.items():
            plan = self._plans.get(key)
            if plan is None:
                raise UnknownFieldError(str(key), self._plans)
            if value is None:
                continue
            value = _fill_value(plan.field, value)
            if value is None:
                continue
            chosen.append((plan, value))
        # The form's order, not the caller's: the same values give the same bytes.
        chosen.sort(key=lambda item: item[0].order)
        return chosen

    def _emit_text(self, row: _Row, plan: _FieldPlan, value: str, unicode: _Unicode) -> None:
        form_field = plan.field
        shown = form_field.displays.get(value, value) if form_field.kind == "choice" else value
        v_entry = _text_v_entry(form_field, value)
        for wp in plan.widgets:
            style = self._style_for(wp, plan, shown, unicode, row)
            if form_field.is_listbox:
                content = _listbox_content(wp, style, plan, value)
            else:
                content = _text_content(row, wp, style, plan, shown)
            if isinstance(style.font, ShapedFont):
                resources = b"/Font<<%s>>" % style.font.resources()
            else:
                resources = b"/Font<</%s %s>>" % (
                    style.font_name,
                    self._font_value(style, unicode),
                )
            ap = row.add(form_xobject(wp.box, content, resources))
            row.drawn[wp.number] = (ap, wp.box)
            extra = v_entry if wp.merged else b""
            row.objects.append(
                (wp.number, wp.generation, wp.prefix + b"/AP<</N %d 0 R>>%s>>" % (ap, extra))
            )
        for number, generation, prefix in plan.parents:
            row.objects.append((number, generation, prefix + v_entry + b">>"))

    def _emit_button(self, row: _Row, plan: _FieldPlan, value: object) -> None:
        on_states = plan.chooses.get(value, _NONE_ON)
        chosen = next((w.on_name for w in plan.widgets if w.on_state in on_states), "Off")
        v_entry = b"/V " + name(chosen)
        for wp in plan.widgets:
            on = wp.on_state in on_states
            row.states[wp.number] = wp.on_state if on else "Off"
            shown = name(wp.on_name if on else "Off")
            extra = v_entry if wp.merged else b""
            row.objects.append(
                (
                    wp.number,
                    wp.generation,
                    wp.prefix + wp.button_ap + b"/AS " + shown + extra + b">>",
                )
            )
        for number, generation, prefix in plan.parents:
            row.objects.append((number, generation, prefix + v_entry + b">>"))

    # -- fonts --------------------------------------------------------------------------

    def _style_for(
        self,
        wp: _WidgetPlan,
        plan: _FieldPlan,
        text: str,
        unicode: _Unicode,
        row: _Row,
    ) -> TextStyle:
        """The form's font if it can show ``text``, else Helvetica, else the first embedded
        font with all its characters (``row.fallback``: that font, found for the row), else
        the value laid out by script."""
        sample = _printable(text if not plan.field.is_listbox else "".join(plan.items))
        if wp.style is not None and wp.style.font.encode(sample) is not None:
            return wp.style
        helvetica = wp.helvetica or _helvetica_style(wp)
        if helvetica.font.encode(sample) is not None:
            return helvetica
        if row.fallback.get(sample) == SHAPED:
            # Its paragraphs as they are (a list box's options, each one): each has its
            # own direction.
            return _shaped_style(
                wp, text if not plan.field.is_listbox else "\n".join(plan.items), row
            )
        return self._unicode_style(wp, sample, unicode, row.fallback) or helvetica

    def _unicode_style(
        self,
        wp: _WidgetPlan,
        sample: str,
        unicode: _Unicode,
        row_fallback: dict[str, int] | None,
    ) -> TextStyle | None:
        """For text WinAnsi cannot show: the row's embedded subset of the first fallback font
        with all its characters, else the form's own CID font that has them, if any."""
        da, quadding = wp.da, wp.quadding
        index = row_fallback.get(sample) if row_fallback is not None else None
        if index is None:
            index = fonts.fallback_for(sample)
        if index is not None and index in unicode:
            subset = unicode[index][0]
            if subset.encode(sample) is not None:
                return TextStyle(
                    b"F%d" % index if index else b"NotoSans", subset, True, da, quadding
                )
        return self._cid_style(da, sample, quadding)

    def _font_value(self, style: TextStyle, unicode: _Unicode) -> bytes:
        for subset, number in unicode.values():
            if style.font is subset:
                return b"%d 0 R" % number
        if style.font_name == b"Helv" and style.font is fonts.core_font("Helvetica"):
            return self._helvetica_ref
        return self._dr_fonts[style.font_name.decode("latin-1")][0]

    def _unicode_font(self, row: _Row, chosen: list[tuple[_FieldPlan, object]]) -> _Unicode:
        """Embed one subset of each fallback font the row's values need (none for values
        WinAnsi can show)."""
        embedded: _Unicode = {}
        for index, chars in sorted(self._unicode_chars(chosen, row.fallback).items()):
            subset = fonts.unicode_subset(chars, index)
            refs = fonts.FontRefs.starting_at(row.allocate(5))
            row.objects.extend((n, 0, body) for n, body in subset.pdf_objects(refs))
            embedded[index] = (subset, refs.font)
        return embedded

    def _unicode_chars(
        self, chosen: list[tuple[_FieldPlan, object]], found: dict[str, int] | None = None
    ) -> dict[int, frozenset[str]]:
        """The characters each fallback font's subset needs for the row, after refusing any
        value with a character no font of the engine, the user or the form can draw (it
        would show as nothing). A value is drawn by the first fallback font that has all of
        its characters. A value in a script that must be shaped or reordered (Arabic,
        Hebrew, Indic, Thai ...), or one no single font draws, is laid out by script with
        the shipped fonts (``SHAPED``: its glyphs are chosen as it is drawn). Embedded fonts
        come before the form's own CJK font, which a viewer without that font shows as
        nothing: it draws only what no embedded font has."""
        helvetica = fonts.core_font("Helvetica")
        chars: dict[int, set[str]] = {}
        for plan, value in chosen:
            if plan.field.kind not in _TEXT_KINDS:
                continue
            text = str(value)
            if plan.field.kind == "choice":
                text = (
                    "".join(plan.items)
                    if plan.field.is_listbox
                    else plan.field.displays.get(text, text)
                )
            text = _printable(text)
            if helvetica.encode(text) is not None:
                continue
            laid_out = shaping.needs_layout(text)
            index = None if laid_out else fonts.fallback_for(text)
            if index is not None:
                chars.setdefault(index, set()).update(text)
            elif not shaping.missing(text):
                index = SHAPED  # before the form's own CJK font, which may not be embedded
            elif laid_out or self._cid_style(plan.da, text, 0) is None:
                raise FieldValueError(plan.field.name, _undrawable(text))
            if found is not None and index is not None:
                found[text] = index
        return {index: frozenset(found) for index, found in chars.items()}

    def _resource_fonts(self) -> dict[str, tuple[bytes, fonts.SimpleFont | fonts.CidFont | None]]:
        """The AcroForm's ``/DR`` fonts: how to refer to each, and its metrics if usable."""
        acroform = acroform_of(self._reader)
        dr = acroform.get("/DR") if acroform is not None else None
        dr = dr.get_object() if dr is not None else None
        font_dict = dr.get("/Font") if isinstance(dr, DictionaryObject) else None
        font_dict = font_dict.get_object() if font_dict is not None else None
        result: dict[str, tuple[bytes, fonts.SimpleFont | fonts.CidFont | None]] = {}
        if isinstance(font_dict, DictionaryObject):
            for key in font_dict:
                raw = font_dict.raw_get(key)
                obj = raw.get_object()
                result[key[1:]] = (serialize(raw), _simple_font(obj) or fonts.cid_font(obj))
        return result

    def _cid_style(self, da: DefaultAppearance, text: str, quadding: int) -> TextStyle | None:
        """The form's own Unicode CID font (CJK, usually) that can show ``text``, if any."""
        names = [da.font, *sorted(self._dr_fonts)]
        for font_name in names:
            entry = self._dr_fonts.get(font_name)
            if entry and isinstance(entry[1], fonts.CidFont) and entry[1].encode(text):
                return TextStyle(font_name.encode("latin-1"), entry[1], True, da, quadding)
        return None

    # -- compiling ----------------------------------------------------------------------

    def _allocate(self) -> int:
        number = self._next
        self._next += 1
        return number

    def _plan(self, form_field: FormField) -> _FieldPlan:
        plan = _field_plan(form_field)
        for target in form_field.targets:
            widgets = [
                self._widget_plan(form_field, target, widget, widget.ref, plan.da)
                for widget in target.widgets
                if widget.ref is not None
            ]
            plan.widgets += widgets
            if not any(wp.merged for wp in widgets):
                drop = _DROP_PARENT_TEXT if form_field.kind in _TEXT_KINDS else _DROP_PARENT_BUTTON
                plan.parents.append(
                    (target.ref.idnum, target.ref.generation, dict_without(target.obj, drop))
                )
        return plan

    def _widget_plan(
        self,
        form_field: FormField,
        target: Target,
        widget: Widget,
        widget_ref: IndirectObject,
        da: DefaultAppearance,
    ) -> _WidgetPlan:
        """What a row rewrites of one widget; a button's missing appearances are drawn now."""
        box = widget_box(widget.obj, widget.rect)
        own_da, own_q = widget.obj.get("/DA"), widget.obj.get("/Q")
        wp = _WidgetPlan(
            widget,
            widget_ref.idnum,
            widget_ref.generation,
            b"",
            box,
            widget_ref.idnum == target.ref.idnum,  # merged: the widget holds /V
            DefaultAppearance.parse(str(own_da)) if own_da is not None else da,
            _int(own_q, form_field.quadding),
            own_q is not None or form_field.aligned,
        )
        if form_field.kind in ("checkbox", "radio"):
            wp.button_ap, wp.button_on = self._button_appearance(form_field, widget, box, wp.da)
            wp.on_name = widget.on_state or widget.alias or "Yes"
            wp.on_state = widget.on_state or ""
            drop = _DROP_BUTTON_AP if wp.button_ap else _DROP_BUTTON
        else:
            drop = _DROP_TEXT
            wp.style = self._da_style(wp.da, wp.quadding)
        wp.prefix = dict_without(widget.obj, drop)
        return wp

    def _da_style(self, da: DefaultAppearance, quadding: int) -> TextStyle | None:
        entry = self._dr_fonts.get(da.font)
        if entry is None or not isinstance(entry[1], fonts.SimpleFont):
            return None
        return TextStyle(da.font.encode("latin-1"), entry[1], False, da, quadding)

    def _button_appearance(
        self, form_field: FormField, widget: Widget, box: Box, da: DefaultAppearance
    ) -> tuple[bytes, int]:
        """An ``/AP`` entry (and its on-state object) for a button whose on-state appearance
        is missing or one a viewer cannot draw; ``(b"", 0)`` if it has a usable one."""
        kept = _kept_button_ap(widget)
        if kept is not None:
            return kept, 0
        radio = form_field.kind == "radio"
        on = self._allocate()
        off = self._allocate()
        self._constant.append((on, 0, form_xobject(box, check_stream(box, radio, True, da.color))))
        self._constant.append(
            (off, 0, form_xobject(box, check_stream(box, radio, False, da.color)))
        )
        entry = b"/AP<</N<<%s %d 0 R/Off %d 0 R>>>>" % (name(widget.on_state or "Yes"), on, off)
        return entry, on

    def _rewrite_form_root(
        self, form_fields: list[FormField]
    ) -> tuple[list[tuple[int, int, bytes]], list[tuple[int, int, bytes]]]:
        """The objects every output rewrites at its root: for a filled and a flattened form.

        The AcroForm loses ``/XFA`` (Acrobat would show the XFA data instead of ours) and
        ``/NeedAppearances`` (ours are complete), and the catalog ``/NeedsRendering``; fields
        found on pages but missing from ``/Fields`` are added, and fonts named by ``/DA`` but
        missing from ``/DR`` are given. A flattened output's catalog has no AcroForm at all.
        """
        reader = self._reader
        root_ref = reader.trailer.raw_get("/Root")
        root = root_ref.get_object()
        catalog = dict_without(root, frozenset({"/AcroForm", "/NeedsRendering"}))
        flat = [(root_ref.idnum, root_ref.generation, catalog + b">>")]
        acroform = acroform_of(reader)
        if acroform is None:
            return [], flat
        body = dict_without(acroform, frozenset({"/XFA", "/NeedAppearances", "/Fields", "/DR"}))
        body += b"/Fields[" + b" ".join(_listed_fields(acroform, form_fields)) + b"]"
        body += b"/DR" + self._dr_with_missing_fonts(acroform, form_fields) + b">>"
        return _filled_root(root_ref, root, catalog, body), flat

    def _dr_with_missing_fonts(
        self, acroform: DictionaryObject, form_fields: list[FormField]
    ) -> bytes:
        dr = acroform.get("/DR")
        dr = dr.get_object() if dr is not None else DictionaryObject()
        wanted = {DefaultAppearance.parse(f.da).font for f in form_fields}
        wanted.add(DefaultAppearance.parse(str(acroform.get("/DA", ""))).font)
        missing = sorted(w for w in wanted if w not in self._dr_fonts)
        fonts_entry = b"".join(name(n) + b" " + v for n, (v, _) in sorted(self._dr_fonts.items()))
        fonts_entry += b"".join(name(n) + b" %d 0 R" % self._helvetica for n in missing)
        rest = dict_without(dr, frozenset({"/Font"}))
        return rest + b"/Font<<" + fonts_entry + b">>>>"

    # -- flattening ---------------------------------------------------------------------

    def _emit_flatten(self, row: _Row) -> None:
        """Draw every visible widget into its page and drop the widgets and the form."""
        pages: dict[int, list[tuple[_WidgetPlan, _FieldPlan]]] = {}
        for plan in self._plans.values():
            for wp in plan.widgets:
                if wp.widget.visible:
                    pages.setdefault(wp.widget.page, []).append((wp, plan))
        # Rewritten widgets no longer matter: the pages stop referring to them.
        row.objects = [o for o in row.objects if o[0] not in self._widget_numbers]
        for page_index in sorted(pages):
            self._flatten_page(row, page_index, pages[page_index])

    def _flatten_page(
        self, row: _Row, page_index: int, widgets: list[tuple[_WidgetPlan, _FieldPlan]]
    ) -> None:
        page = self._reader.pages[page_index]
        page_ref = page.indirect_reference
        if page_ref is None:
            return
        draws, xobjects = self._draws(row, widgets)
        content = b"Q\n" + b"\n".join(draws)
        push = row.add(b"<</Length 1>>\nstream\nq\nendstream")
        drawn = row.add(b"<</Length %d>>\nstream\n%s\nendstream" % (len(content), content))
        body = dict_without(page, _DROP_FLATTEN_PAGE)
        body += b"/Contents[%d 0 R %s %d 0 R]/Resources%s" % (
            push,
            _page_contents(page),
            drawn,
            _resources_drawing(page, xobjects),
        )
        kept = _kept_annots(page)
        if kept:
            body += b"/Annots[" + b" ".join(kept) + b"]"
        row.objects.append((page_ref.idnum, page_ref.generation, body + b">>"))

    def _draws(
        self, row: _Row, widgets: list[tuple[_WidgetPlan, _FieldPlan]]
    ) -> tuple[list[bytes], list[bytes]]:
        """The operators drawing each widget's appearance on its page, and the page's
        ``/XObject`` entries they name."""
        draws, xobjects = [], []
        for index, (wp, _plan) in enumerate(widgets):
            placed = self._placement(row, wp)
            if placed is None:
                continue
            xobject, matrix = placed
            label = b"/FxW%d" % index
            xobjects.append(label + b" " + xobject)
            draws.append(b"q %s cm %s Do Q" % (matrix, label))
        return draws, xobjects

    def _placement(self, row: _Row, wp: _WidgetPlan) -> tuple[bytes, bytes] | None:
        """The appearance to draw for a widget and the matrix placing it on the page."""
        x0, y0, x1, y1 = wp.widget.rect
        if x1 - x0 <= 0 or y1 - y0 <= 0:
            return None
        if wp.number in row.drawn:
            number, box = row.drawn[wp.number]
            return b"%d 0 R" % number, _fit_matrix(box.bbox, box.matrix, wp.widget.rect)
        if wp.button_on:
            return None if row.states.get(wp.number, "Off") == "Off" else self._generated_button(wp)
        shown = _shown_appearance(wp.widget.obj, row.states.get(wp.number))
        if shown is None:
            return None
        bbox, matrix = _form_geometry(shown[1])
        return ref(shown[0]), _fit_matrix(bbox, matrix, wp.widget.rect)

    def _generated_button(self, wp: _WidgetPlan) -> tuple[bytes, bytes]:
        return b"%d 0 R" % wp.button_on, _fit_matrix(wp.box.bbox, wp.box.matrix, wp.widget.rect)


def _field_plan(form_field: FormField) -> _FieldPlan:
    """A field's plan without its widgets: what a row reads of the field, read once."""
    plan = _FieldPlan(
        form_field,
        [],
        [],
        DefaultAppearance.parse(form_field.da),
        multiline=form_field.multiline,
        comb=form_field.max_length if form_field.comb else None,
    )
    if form_field.is_listbox:
        plan.items = [form_field.displays[o] for o in form_field.options or ()]
    if form_field.kind == "checkbox":
        plan.chooses = {True: frozenset(w.on_state or "" for w in form_field.widgets)}
    elif form_field.kind == "radio":
        plan.chooses = {option: frozenset(on) for option, on in form_field.states.items()}
    return plan


def _text_v_entry(form_field: FormField, value: str) -> bytes:
    """The ``/V`` a text-like field's dictionary gets for ``value`` (none for a signature
    field, whose value is only drawn), and a list box's ``/I``."""
    v_entry = b"/V " + text_string(value) if form_field.kind != "signature" else b""
    options = form_field.options or ()
    if form_field.is_listbox and value in options:
        v_entry += b"/I[%d]" % options.index(value)
    return v_entry


def _check_room(chosen: list[tuple[_FieldPlan, object]], fit: Fit) -> None:
    """Refuse, before any layout, a text value with more visible characters than its box can
    show at the smallest size (``most_chars``), where ``fit`` would refuse it anyway."""
    if fit.policy != "error":
        return  # the other policies cut long text to what fits
    for plan, value in chosen:
        if plan.field.kind not in _ROOM_KINDS or plan.comb or not plan.widgets:
            continue  # a comb's cells are its max_length, already checked
        text = str(value)
        count, most = visible_chars(text), plan.most_chars(fit)
        if count > most:
            raise TextOverflowError(
                plan.field.name,
                f"{len(text):,} characters can't be shown in this box even at "
                f"{fit.min_size:g} pt (it holds at most {most:,} that are not blank, however "
                "narrow); shorten the value, use a larger field, or choose the 'shrink' or "
                "'truncate' overflow policy.",
            )


def _text_content(
    row: _Row, wp: _WidgetPlan, style: TextStyle, plan: _FieldPlan, shown: str
) -> bytes:
    """A text widget's appearance showing ``shown``, its field noted in ``row.cut`` when the
    overflow policy cut the text to fit."""
    form_field = plan.field
    try:
        content, cut = text_stream(
            wp.box,
            style,
            shown,
            multiline=plan.multiline,
            comb=plan.comb,
            fit=row.fit if form_field.kind != "choice" else row.option_fit,
            least=shortest_date(form_field.date_format) if form_field.date_format else 1,
        )
    except TextTooLong as exc:
        raise TextOverflowError(form_field.name, str(exc)) from None
    if cut:
        row.cut.append(form_field.name)
    return content


def _listbox_content(wp: _WidgetPlan, style: TextStyle, plan: _FieldPlan, value: str) -> bytes:
    """A list box's appearance: its options from its ``/TI``, ``value`` highlighted."""
    options = plan.field.options or ()
    selected = options.index(value) if value in options else 0
    top = int(wp.widget.obj.get("/TI", 0) or 0)
    return listbox_stream(wp.box, style, plan.items, selected, top)


def _shaped_style(wp: _WidgetPlan, text: str, row: _Row) -> TextStyle:
    """``text`` laid out by script, from the row's shaped subsets; a right-to-left value is
    aligned right where the form states no alignment."""
    if row.shaped is None:
        row.shaped = ShapedGlyphs(row.allocate)
    font = ShapedFont(row.shaped, text, aligned=wp.aligned)
    return TextStyle(font.font_name, font, True, wp.da, font.line_quadding(text, wp.quadding))


def _helvetica_style(wp: _WidgetPlan) -> TextStyle:
    """Helvetica at the widget's ``/DA`` size and colour, made on first use and kept."""
    style = TextStyle(b"Helv", fonts.core_font("Helvetica"), False, wp.da, wp.quadding)
    wp.helvetica = style
    return style


def _kept_button_ap(widget: Widget) -> bytes | None:
    """A button's own ``/AP`` when its on-state appearance is one a viewer can draw: ``b""``
    to keep it as it is, or the entry with the on-state named ``/`` renamed; None when the
    engine must draw the button's appearances."""
    ap = _resolved(widget.obj, "/AP")
    normal = _resolved(ap, "/N") if ap is not None else None
    if not isinstance(normal, DictionaryObject) or isinstance(normal, StreamObject):
        return None
    on = normal.get("/" + (widget.on_state or ""))
    if on is None or not drawable(on.get_object()):
        return None
    # PDFium's flattener and others take the empty name for "no state": the appearances
    # are kept under the name Yes.
    return b"" if widget.on_state else _renamed_empty_state(ap, widget.alias or "Yes")


def _listed_fields(acroform: DictionaryObject, form_fields: list[FormField]) -> list[bytes]:
    """``/Fields`` as the output lists them: the form's own, then the top field of each field
    found on a page but missing from it."""
    listed = {
        r.idnum
        for r in acroform.get("/Fields", ArrayObject()) or []
        if isinstance(r, IndirectObject)
    }
    fields = [serialize(r) for r in acroform.get("/Fields", ArrayObject()) or []]
    for form_field in form_fields:
        for target in form_field.targets:
            top = top_field_ref(target)
            if top is not None and top.idnum not in listed:
                listed.add(top.idnum)
                fields.append(ref(top))
    return fields


def _filled_root(
    root_ref: IndirectObject, root: DictionaryObject, catalog: bytes, body: bytes
) -> list[tuple[int, int, bytes]]:
    """The AcroForm ``body`` (unclosed ``catalog`` aside) as a filled output writes it: in
    its own object, or inline in the catalog where the template had it there. The catalog
    is rewritten only when it loses ``/NeedsRendering``."""
    raw = root.raw_get("/AcroForm")
    if not isinstance(raw, IndirectObject):
        return [(root_ref.idnum, root_ref.generation, catalog + b"/AcroForm" + body + b">>")]
    filled = [(raw.idnum, raw.generation, body)]
    if "/NeedsRendering" in root:
        filled.append(
            (root_ref.idnum, root_ref.generation, catalog + b"/AcroForm " + ref(raw) + b">>")
        )
    return filled


def _page_contents(page: PageObject) -> bytes:
    """References to the page's content streams, as an array's items (``b""``: none)."""
    contents = page.raw_get("/Contents") if "/Contents" in page else None
    if isinstance(contents, IndirectObject):
        target = contents.get_object()
        if isinstance(target, ArrayObject):
            return b" ".join(serialize(c) for c in target)
        return serialize(contents)
    if isinstance(contents, ArrayObject):
        return b" ".join(serialize(c) for c in contents)
    return b""


def _resources_drawing(page: PageObject, xobjects: list[bytes]) -> bytes:
    """The page's ``/Resources`` with ``xobjects`` added to its ``/XObject`` entries."""
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else DictionaryObject()
    existing = resources.get("/XObject")
    existing = existing.get_object() if existing is not None else DictionaryObject()
    xobject_entry = dict_without(existing, frozenset()) + b"".join(xobjects) + b">>"
    entry = dict_without(resources, frozenset({"/XObject"}))
    return entry + b"/XObject" + xobject_entry + b">>"


def _kept_annots(page: PageObject) -> list[bytes]:
    """The page's annotations other than widgets: a flattened page keeps them."""
    annots = page.get("/Annots")
    annots = annots.get_object() if annots is not None else ArrayObject()
    return [serialize(a) for a in annots if not _is_widget(a.get_object())]


def _is_widget(annot: object) -> bool:
    return isinstance(annot, DictionaryObject) and annot.get("/Subtype") == "/Widget"


def _shown_appearance(
    widget: DictionaryObject, state: str | None
) -> tuple[IndirectObject, StreamObject] | None:
    """The widget's normal appearance stream for ``state`` (else its ``/AS``), and its
    reference, if it is one a page can draw by reference."""
    ap = widget.get("/AP")
    normal_raw = (
        ap.get_object().raw_get("/N") if ap is not None and "/N" in ap.get_object() else None
    )
    if normal_raw is None:
        return None
    normal = normal_raw.get_object()
    if not isinstance(normal, StreamObject) and isinstance(normal, DictionaryObject):
        if state is None:
            state = str(widget.get("/AS", "/Off"))[1:]
        key = "/" + state
        if key not in normal:
            return None
        normal_raw = normal.raw_get(key)
        normal = normal_raw.get_object()
    if not isinstance(normal, StreamObject) or not isinstance(normal_raw, IndirectObject):
        return None
    return normal_raw, normal


def _form_geometry(form: StreamObject) -> tuple[bytes, bytes]:
    """A form XObject's ``/BBox`` array and ``/Matrix`` entry (``b""`` if none), as written."""
    bbox = b"[" + b" ".join(serialize(v) for v in form.get("/BBox", [0, 0, 0, 0])) + b"]"
    matrix = form.get("/Matrix")
    return bbox, b"/Matrix[" + b" ".join(serialize(v) for v in matrix) + b"]" if matrix else b""


def _renamed_empty_state(ap: DictionaryObject, alias: str) -> bytes:
    """An ``/AP`` entry with its appearances under the state name ``alias`` instead of ``/``."""
    parts = []
    for key in ap:
        raw = ap.raw_get(key)
        states = raw.get_object()
        if isinstance(states, DictionaryObject) and not isinstance(states, StreamObject):
            inner = b"".join(
                (name(alias) if state == "/" else name(state[1:]))
                + b" "
                + serialize(states.raw_get(state))
                for state in states
            )
            parts.append(name(key[1:]) + b"<<" + inner + b">>")
        else:
            parts.append(name(key[1:]) + b" " + serialize(raw))
    return b"/AP<<" + b"".join(parts) + b">>"


_DEFAULT_FIT = Fit()


@cache
def _option_fit(min_size: float) -> Fit:
    return Fit("truncate", min_size)


def _int(value: object, default: int) -> int:
    """``int(value)``, or ``default`` for a value that is no number."""
    if not isinstance(value, str | bytes | SupportsInt | SupportsIndex):
        return default
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def drawable(appearance: object) -> bool:
    """Whether a viewer can draw ``appearance``: a form XObject with a bounding box of some
    area (an empty dictionary or a stream without ``/BBox`` shows nothing anywhere)."""
    if not isinstance(appearance, StreamObject):
        return False
    bbox = appearance.get("/BBox")
    bbox = bbox.get_object() if bbox is not None else None
    if not isinstance(bbox, ArrayObject) or len(bbox) != 4:
        return False
    try:
        x0, y0, x1, y1 = (float(v) for v in bbox)
    except (TypeError, ValueError):
        return False
    return abs(x1 - x0) > 0 and abs(y1 - y0) > 0


def _undrawable(text: str) -> str:
    """Why no font draws ``text``: the characters none has, or that none has them all."""
    missing = shaping.missing(text)
    if missing:
        listed = ", ".join(f"{c!r} (U+{ord(c):04X})" for c in sorted(set(missing))[:8])
        more = len(set(missing)) - 8
        what = f"no font can draw {listed}{f' and {more} more' if more > 0 else ''}"
    else:
        what = "no single font has all of its characters"
    added = fonts.added_fonts()
    skipped = f" ({'; '.join(added.skipped[:3])})" if added.skipped else ""
    return (
        f"{what}: the engine draws Latin, Greek, Cyrillic, Arabic, Hebrew, the Indic scripts, "
        "Sinhala, Thai, Lao, Myanmar, Khmer, Chinese, Japanese and Korean, and what the "
        f"TrueType fonts in {fonts.FONTS_ENV} have"
        f"{skipped}; transliterate or remove these characters, or add a font that has them."
    )


def _printable(text: str) -> str:
    """``text`` with the line breaks and tabs that layout turns into spaces or new lines."""
    return text.translate(_CONTROL_TO_SPACE)


_CONTROL_TO_SPACE = {9: 32, 10: 32, 13: 32}


def _fit_matrix(bbox: bytes, matrix: bytes, rect: tuple[float, float, float, float]) -> bytes:
    """The ``cm`` that maps a form's (transformed) bounding box onto the widget's rect."""
    tx0, ty0, tx1, ty1 = _transformed_box(bbox, matrix)
    x0, y0, x1, y1 = rect
    sx = (x1 - x0) / (tx1 - tx0) if tx1 > tx0 else 1.0
    sy = (y1 - y0) / (ty1 - ty0) if ty1 > ty0 else 1.0
    return b"%s 0 0 %s %s %s" % tuple(
        _short_number(v) for v in (sx, sy, x0 - tx0 * sx, y0 - ty0 * sy)
    )


def _transformed_box(bbox: bytes, matrix: bytes) -> tuple[float, float, float, float]:
    """The bounds of a form's ``/BBox`` (``[x0 y0 x1 y1]``) once its ``/Matrix`` entry (or
    none) has transformed it."""
    numbers = [float(v) for v in bbox.strip(b"[]").split()] or [0, 0, 0, 0]
    bx0, by0, bx1, by1 = numbers[:4]
    a, b, c, d, e, f = 1.0, 0.0, 0.0, 1.0, 0.0, 0.0
    if matrix:
        a, b, c, d, e, f = (float(v) for v in matrix.split(b"[")[1].strip(b"]").split()[:6])
    corners = [(x * a + y * c + e, x * b + y * d + f) for x in (bx0, bx1) for y in (by0, by1)]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return min(xs), min(ys), max(xs), max(ys)


def _short_number(value: float) -> bytes:
    """``value`` to 4 decimals without trailing zeros: ``1.5``, ``0``, ``-12.0625``."""
    return f"{value:.4f}".rstrip("0").rstrip(".").encode() or b"0"


def _simple_font(font: object) -> fonts.SimpleFont | None:
    """Metrics for a ``/DR`` font the engine may draw with, or None when it is unsafe."""
    if not _whole_winansi_font(font):
        return None
    base = str(font.get("/BaseFont", ""))[1:]
    descriptor = _resolved(font, "/FontDescriptor")
    if isinstance(descriptor, DictionaryObject) and int(descriptor.get("/Flags", 32)) & 4:
        return None  # symbolic
    core = fonts.core_font_name(base)
    widths = _resolved(font, "/Widths")
    if isinstance(widths, ArrayObject) and len(widths):
        ascent, descent = _font_line(core, descriptor)
        return fonts.simple_font_with_widths(
            base, int(font.get("/FirstChar", 0)), [float(w) for w in widths], ascent, descent
        )
    return fonts.core_font(core) if core else None


def _whole_winansi_font(font: object) -> TypeGuard[DictionaryObject]:
    """Whether ``font`` is a Type1 or TrueType font in plain WinAnsiEncoding, and not an
    embedded subset (which may lack the glyphs a value needs)."""
    if not isinstance(font, DictionaryObject):
        return False
    if font.get("/Subtype") not in ("/Type1", "/TrueType"):
        return False
    return "+" not in str(font.get("/BaseFont", ""))[1:] and _winansi(font)


def _resolved(obj: DictionaryObject, key: str) -> Any:
    """``obj[key]`` resolved (any PDF value, as pypdf gives it), or None when absent."""
    value = obj.get(key)
    return value.get_object() if value is not None else None


def _winansi(font: DictionaryObject) -> bool:
    """Whether a simple font's codes are plain WinAnsiEncoding (no ``/Differences``)."""
    encoding = _resolved(font, "/Encoding")
    if isinstance(encoding, DictionaryObject):
        if "/Differences" in encoding:
            return False
        encoding = encoding.get("/BaseEncoding")
    return bool(encoding == "/WinAnsiEncoding")


def _font_line(core: str | None, descriptor: object) -> tuple[float, float]:
    """A simple font's ascent and descent per 1 pt: the standard font's it stands for, else
    its descriptor's, else Helvetica's."""
    if core:
        metrics = fonts.core_font(core)
        return metrics.ascent, metrics.descent
    if isinstance(descriptor, DictionaryObject):
        ascent = float(descriptor.get("/Ascent", 718)) / 1000 or 0.718
        descent = float(descriptor.get("/Descent", -207)) / 1000 or -0.207
        return ascent, descent
    return 0.718, -0.207


def _fill_value(form_field: FormField, value: object) -> object | None:
    """What ``value`` fills ``form_field`` with by the one value rule (``engine.coerce``:
    "Y", "yes", "X" and True alike for a tick or a yes/no group; a date from ISO), None to
    leave it alone; a value the field cannot take is refused."""
    if form_field.kind in BUTTON_KINDS:
        return button_value(
            form_field.kind, form_field.options, form_field.name, value, form_field.displays
        )
    if form_field.kind == "date" and isinstance(value, str):
        # as written in the form's format, or from ISO: then its length is checked
        value = form_date(form_field.name, value, form_field.date_format)
    _validate(form_field, value)
    return value


def _validate(form_field: FormField, value: object) -> None:
    """Refuse a text or date value its field cannot take, quoting it and saying what the
    field takes (buttons and choices are checked by ``button_value``)."""
    if not isinstance(value, str):
        raise FieldValueError(form_field.name, _not_a_string(form_field, value))
    if form_field.max_length is not None and len(value) > form_field.max_length:
        limit = form_field.max_length
        raise FieldValueError(
            form_field.name,
            f"{quoted_value(value)} is {len(value)} characters, over the field's limit of "
            f"{limit}; shorten it to at most {limit}.",
        )


def _not_a_string(form_field: FormField, value: object) -> str:
    limit = form_field.max_length
    within = f" of at most {limit} characters" if limit is not None else ""
    what = "the date as text" if form_field.kind == "date" else "the value as text"
    return (
        f"a {form_field.kind} field takes a string, not {given_value(value)}; give {what}{within}."
    )


def inspect(pdf: PdfInput) -> list[Field]:
    """The fields a user can see in ``pdf``, as schema entries (none for a flat PDF)."""
    try:
        return Template(pdf).fields
    except NoFormError:
        return []


def fill(pdf: PdfInput, values: Mapping[str, object], *, flatten: bool = False) -> bytes:
    """``pdf`` with ``values`` filled in (see ``Template.fill``)."""
    return Template(pdf).fill(values, flatten=flatten)
