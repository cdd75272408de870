"""Find a form's fields the way a viewer does: from the widgets on its pages.

``/AcroForm /Fields`` is often stale in real forms (widgets missing from it, or fields left
in it with no widget), so the walk starts from every page's ``/Annots`` and climbs each
widget's ``/Parent`` chain for the field's name and inherited attributes. Fields that share
a fully qualified name are one field, as viewers treat them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pypdf import PageObject, PdfReader
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, StreamObject

from fillpdf_provider.engine.dates import shortest_date
from fillpdf_provider.engine.errors import PdfError
from fillpdf_provider.engine.schema import Field, FieldType, OptionWidget

FF_READ_ONLY = 1 << 0
FF_REQUIRED = 1 << 1
FF_MULTILINE = 1 << 12
FF_RADIO = 1 << 15
FF_PUSHBUTTON = 1 << 16
FF_COMBO = 1 << 17
FF_COMB = 1 << 24
ANNOT_HIDDEN = 1 << 1
ANNOT_NOVIEW = 1 << 5

_MAX_DEPTH = 32
_DATE_SCRIPT = re.compile(r"AFDate_(?:Format|Keystroke)(?:Ex)?\s*\(\s*[\"']([^\"']*)")


@dataclass
class Widget:
    """One widget annotation: where a field shows on a page."""

    ref: IndirectObject | None
    obj: DictionaryObject
    page: int
    rect: tuple[float, float, float, float]
    on_state: str | None = None  # buttons: the name of the widget's on appearance
    opt_index: int | None = None  # buttons with /Opt: the widget's place among the kids
    visible: bool = True
    option: str | None = None  # radio buttons: the option this widget sets
    alias: str | None = None  # an on-state named "" (``/``): the name offered and written


@dataclass
class Target:
    """A field dictionary (which holds ``/V``) and its widgets (which hold appearances)."""

    ref: IndirectObject
    obj: DictionaryObject
    widgets: list[Widget] = field(default_factory=list)


@dataclass
class FormField:
    """A terminal field with everything filling it needs."""

    name: str
    kind: FieldType
    flags: int
    da: str
    quadding: int
    max_length: int | None
    label: str | None
    targets: list[Target]
    options: tuple[str, ...] | None = None
    displays: dict[str, str] = field(default_factory=dict)  # choice export -> shown text
    states: dict[str, list[str]] = field(default_factory=dict)  # radio option -> on-states
    #: Whether the form states an alignment (``/Q`` on the field, a parent or the AcroForm):
    #: a right-to-left value is drawn from the right unless it does.
    aligned: bool = False
    is_listbox: bool = False
    date_format: str | None = None

    @property
    def widgets(self) -> list[Widget]:
        return [w for t in self.targets for w in t.widgets]

    @property
    def visible(self) -> bool:
        return any(w.visible for w in self.widgets)

    @property
    def read_only(self) -> bool:
        return bool(self.flags & FF_READ_ONLY)

    @property
    def comb(self) -> bool:
        return bool(self.kind == "text" and self.flags & FF_COMB and self.max_length)

    @property
    def multiline(self) -> bool:
        return bool(self.kind == "text" and self.flags & FF_MULTILINE and not self.comb)

    def schema(self) -> Field:
        first = next((w for w in self.widgets if w.visible), self.widgets[0])
        return Field(
            name=self.name,
            type=self.kind,
            page=first.page,
            rect=first.rect,
            label=self.label,
            confidence=1.0,
            required=bool(self.flags & FF_REQUIRED),
            multiline=self.multiline,
            max_length=self.max_length if self.kind in ("text", "date") else None,
            options=self.options,
            read_only=self.read_only,
            comb=self.comb,
            widgets=self._option_widgets(),
            date_format=self.date_format if self.kind == "date" else None,
        )

    def _option_widgets(self) -> tuple[OptionWidget, ...] | None:
        """Each visible button of a radio group of several: enough to rebuild the group."""
        shown = [w for w in self.widgets if w.visible]
        if self.kind != "radio" or len(shown) < 2:
            return None
        return tuple(OptionWidget(w.option or w.on_state or "", w.page, w.rect) for w in shown)


def inherited(obj: DictionaryObject, key: str, default: object = None) -> Any:
    """``obj[key]`` or the nearest ancestor's, as field attributes inherit: any PDF value,
    as pypdf reads it (so ``Any``, as pypdf's own dictionaries give it)."""
    node: DictionaryObject | None = obj
    depth = 0
    while node is not None and depth < _MAX_DEPTH:
        if key in node:
            return node[key]
        parent = node.get("/Parent")
        node = parent.get_object() if parent is not None else None
        depth += 1
    return default


def qualified_name(obj: DictionaryObject) -> str:
    parts: list[str] = []
    node: DictionaryObject | None = obj
    depth = 0
    while node is not None and depth < _MAX_DEPTH:
        if "/T" in node:
            parts.append(str(node["/T"]))
        parent = node.get("/Parent")
        node = parent.get_object() if parent is not None else None
        depth += 1
    return ".".join(reversed(parts))


def _rect(widget: DictionaryObject) -> tuple[float, float, float, float]:
    try:
        values = widget["/Rect"]
        if not isinstance(values, Iterable):
            raise TypeError("a /Rect that is no array")
        x0, y0, x1, y1 = (float(v) for v in values)
    except (KeyError, TypeError, ValueError):
        return (0.0, 0.0, 0.0, 0.0)
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def page_box(page: PageObject) -> tuple[float, float, float, float]:
    """The visible area of a page: its crop box, else its media box (corners in order: some
    PDFs give them from the top right)."""
    try:
        box = page.cropbox
        x0, y0, x1, y1 = (float(box.left), float(box.bottom), float(box.right), float(box.top))
    except (KeyError, TypeError, ValueError, AttributeError):
        return (-1e9, -1e9, 1e9, 1e9)
    return (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))


def _overlaps(rect: tuple[float, ...], box: tuple[float, ...]) -> bool:
    """Whether a widget shows on the page at all (some forms park widgets off the page)."""
    return rect[0] < box[2] and rect[2] > box[0] and rect[1] < box[3] and rect[3] > box[1]


def _on_state(widget: DictionaryObject) -> str | None:
    ap = widget.get("/AP")
    normal = ap.get_object().get("/N") if ap is not None else None
    normal = normal.get_object() if normal is not None else None
    if isinstance(normal, DictionaryObject) and not isinstance(normal, StreamObject):
        for key in normal:
            if key != "/Off":
                on: str = key[1:]  # "" is a legal on-state name (OpenOffice writes ``/``)
                return on
    state = widget.get("/AS")
    if state is not None and state != "/Off":
        return str(state)[1:]
    return None


def _kind(ft: object, flags: int, obj: DictionaryObject) -> FieldType | None:
    if ft == "/Tx":
        return "date" if _date_format(obj) is not None else "text"
    if ft == "/Btn":
        if flags & FF_PUSHBUTTON:
            return None
        return "radio" if flags & FF_RADIO else "checkbox"
    if ft == "/Ch":
        return "choice"
    if ft == "/Sig":
        return "signature"
    return None


def _date_format(obj: DictionaryObject) -> str | None:
    actions = inherited(obj, "/AA")
    if actions is None:
        return None
    actions = actions.get_object()
    for key in ("/F", "/K"):
        action = actions.get(key)
        if action is None:
            continue
        script = action.get_object().get("/JS")
        if script is None:
            continue
        script = script.get_object()
        text = script.get_data().decode("latin-1") if hasattr(script, "get_data") else str(script)
        match = _DATE_SCRIPT.search(text)
        if match:
            return match.group(1)
    return None


def _text(value: object) -> str:
    value = value.get_object() if isinstance(value, IndirectObject) else value
    return str(value)


def _choice_options(obj: DictionaryObject) -> tuple[tuple[str, ...], dict[str, str]]:
    exports: list[str] = []
    displays: dict[str, str] = {}
    opt = inherited(obj, "/Opt")
    for item in (opt.get_object() if opt is not None else None) or []:
        item = item.get_object()
        if isinstance(item, ArrayObject) and len(item) >= 2:
            export, shown = _text(item[0]), _text(item[1])
        else:
            export = shown = _text(item)
        if export not in displays:
            exports.append(export)
            displays[export] = shown
    return tuple(exports), displays


@dataclass
class _Walk:
    """What reading a form's widgets gathers, page by page: its fields by name, the field
    dictionaries met (by object number), and each button field's kids by object number and
    place, worked out once per field: a radio group can have thousands of kids."""

    defaults: tuple[str, int | None]  # the AcroForm's /DA and /Q, for fields without their own
    by_name: dict[str, FormField] = field(default_factory=dict)
    targets: dict[int, Target] = field(default_factory=dict)
    places: dict[int, dict[int, int]] = field(default_factory=dict)


def read_fields(reader: PdfReader) -> list[FormField]:
    """Every terminal field with a widget on a page, in page and annotation order.

    Fields whose widgets are all hidden are included (they can still hold data); ``visible``
    tells them apart.
    """
    walk = _Walk(_form_defaults(acroform_of(reader)))
    for page_index, page in enumerate(reader.pages):
        visible_box = page_box(page)
        for widget, ref in _page_widgets(page):
            _add_widget(widget, ref, page_index, visible_box, walk)
    fields = list(walk.by_name.values())
    for form_field in fields:
        _finish(form_field)
    return fields


def _form_defaults(acroform: DictionaryObject | None) -> tuple[str, int | None]:
    """The AcroForm's ``/DA`` and ``/Q`` (None: it states no alignment): what a field
    without its own inherits."""
    if acroform is None:
        return "", None
    q = acroform.get("/Q")
    return str(acroform.get("/DA", "") or ""), int(q or 0) if q is not None else None


def _page_widgets(page: PageObject) -> Iterator[tuple[DictionaryObject, IndirectObject | None]]:
    """The page's widget annotations, each with its reference (None when inline)."""
    annots = page.get("/Annots")
    annots = annots.get_object() if annots is not None else None
    if not isinstance(annots, ArrayObject):
        return
    for entry in annots:
        widget = entry.get_object() if entry is not None else None
        if isinstance(widget, DictionaryObject) and widget.get("/Subtype") == "/Widget":
            yield widget, entry if isinstance(entry, IndirectObject) else None


def _add_widget(
    widget: DictionaryObject,
    ref: IndirectObject | None,
    page: int,
    page_box: tuple[float, float, float, float],
    walk: _Walk,
) -> None:
    """Add ``widget`` to its field, the field to ``walk`` if it is new."""
    found = _field_of(widget, ref)
    if found is None:
        return
    field_obj, field_ref = found
    name = qualified_name(field_obj)
    if not name:
        return
    flags = int(inherited(field_obj, "/Ff", 0) or 0)
    kind = _kind(inherited(field_obj, "/FT"), flags, field_obj)
    if kind is None:
        return
    entry = _widget(widget, ref, page, page_box)
    if kind in ("checkbox", "radio"):
        entry.on_state = _on_state(widget)
        entry.opt_index = _kid_place(widget, ref, field_obj, field_ref, walk.places)
    target = walk.targets.get(field_ref.idnum)
    if target is None:
        target = walk.targets[field_ref.idnum] = Target(field_ref, field_obj)
        existing = walk.by_name.get(name)
        if existing is None:
            walk.by_name[name] = _new_field(name, kind, flags, field_obj, target, walk.defaults)
        else:
            existing.targets.append(target)
    target.widgets.append(entry)


def _field_of(
    widget: DictionaryObject, ref: IndirectObject | None
) -> tuple[DictionaryObject, IndirectObject] | None:
    """The field dictionary a widget belongs to and its reference: the widget itself when
    it names the field (or has no parent), else its ``/Parent``; None for an inline field."""
    if "/T" in widget or "/Parent" not in widget:
        field_obj, field_ref = widget, ref
    else:
        field_ref = widget.raw_get("/Parent")
        field_obj = field_ref.get_object()
    if field_ref is None or not isinstance(field_obj, DictionaryObject):
        return None
    return field_obj, field_ref


def _widget(
    widget: DictionaryObject,
    ref: IndirectObject | None,
    page: int,
    page_box: tuple[float, float, float, float],
) -> Widget:
    """A widget on ``page``, visible unless its flags hide it or it is off the page."""
    annot_flags = int(widget.get("/F", 0) or 0)
    rect = _rect(widget)
    return Widget(
        ref=ref,
        obj=widget,
        page=page,
        rect=rect,
        visible=not annot_flags & (ANNOT_HIDDEN | ANNOT_NOVIEW) and _overlaps(rect, page_box),
    )


def _kid_place(
    widget: DictionaryObject,
    ref: IndirectObject | None,
    field_obj: DictionaryObject,
    field_ref: IndirectObject,
    places: dict[int, dict[int, int]],
) -> int | None:
    """A button widget's place among its field's ``/Kids`` (0 for a widget that is its own
    field), which numbers its state in ``/Opt`` forms; None when it has none."""
    if field_obj is widget:
        return 0
    kids = field_obj.get("/Kids")
    if kids is None or ref is None:
        return None
    kid_places = places.get(field_ref.idnum)
    if kid_places is None:
        kid_places = places[field_ref.idnum] = {}
        ids = [k.idnum for k in kids.get_object() if isinstance(k, IndirectObject)]
        for place, idnum in enumerate(ids):
            kid_places.setdefault(idnum, place)
    return kid_places.get(ref.idnum)


def _new_field(
    name: str,
    kind: FieldType,
    flags: int,
    obj: DictionaryObject,
    target: Target,
    defaults: tuple[str, int | None],
) -> FormField:
    """A field from its dictionary; ``/DA`` and ``/Q`` fall back to the AcroForm's."""
    max_len = inherited(obj, "/MaxLen")
    max_length = int(max_len) if max_len is not None and int(max_len) > 0 else None
    date_format = _date_format(obj) if kind == "date" else None
    if not _holds_a_date(date_format, max_length):
        kind, date_format = "text", None
    label = obj.get("/TU")
    quadding = inherited(obj, "/Q", defaults[1])
    form_field = FormField(
        name=name,
        kind=kind,
        flags=flags,
        da=str(inherited(obj, "/DA", "") or defaults[0]),
        quadding=int(quadding or 0),
        aligned=quadding is not None,
        max_length=max_length,
        label=_text(label) if label is not None else None,
        targets=[target],
        date_format=date_format,
    )
    if kind == "choice":
        form_field.options, form_field.displays = _choice_options(obj)
        form_field.is_listbox = not flags & FF_COMBO
    return form_field


def _holds_a_date(date_format: str | None, max_length: int | None) -> bool:
    """Whether a date field's ``/MaxLen`` holds a date in its format: one that holds none (a
    ``mm/dd/yyyy`` script on a two-character box, as some tax forms have) makes it a text
    field, its limit still holding, rather than a field that takes no value at all."""
    return date_format is None or not max_length or shortest_date(date_format) <= max_length


def _finish(form_field: FormField) -> None:
    """Settle what needs every widget seen: button states, options and the real kind."""
    if form_field.kind not in ("checkbox", "radio"):
        return
    opt = _button_opt(form_field)
    widgets = form_field.widgets
    several = len(widgets) > 1
    for widget in widgets:
        _settle_on_state(widget, opt, several and (form_field.kind == "radio" or bool(opt)))
    states = _option_states(widgets, opt)
    if form_field.kind == "checkbox" and len({w.on_state for w in widgets}) > 1:
        form_field.kind = "radio"
    if form_field.kind == "radio":
        form_field.options = tuple(states)
        form_field.states = states


def _button_opt(form_field: FormField) -> ArrayObject | None:
    """A button field's ``/Opt`` (the option each kid sets, by place), if it has one."""
    opt = inherited(form_field.targets[0].obj, "/Opt")
    opt = opt.get_object() if opt is not None else None
    return opt if isinstance(opt, ArrayObject) and len(opt) else None


def _settle_on_state(widget: Widget, opt: ArrayObject | None, by_place: bool) -> None:
    """Number a widget from its on-state, or name its on-state from its place.

    ``by_place``: the widget is one of several of a radio group or an ``/Opt`` field, whose
    kids are told apart by their place."""
    state = widget.on_state
    if widget.opt_index is None and opt is not None and state and _numeric(state):
        # A field without /Kids (widgets that only name it as /Parent): an on-state that is
        # a number names its /Opt entry, as /Opt forms number their states.
        widget.opt_index = int(state)
    if widget.on_state is None:
        # No appearance names the state: kids are told apart by their place (/0, /1 ...),
        # as /Opt forms name them; a lone checkbox is /Yes.
        index = widget.opt_index
        widget.on_state = str(index) if by_place and index is not None else "Yes"


def _option_states(widgets: list[Widget], opt: ArrayObject | None) -> dict[str, list[str]]:
    """Each option of a button field and the on-states that choose it, in widget order;
    sets each widget's ``option`` (and ``alias``, for an on-state named ``/``)."""
    states: dict[str, list[str]] = {}
    listed: set[tuple[str, str]] = set()  # (option, on-state): lists searched would be slow
    named = {w.on_state for w in widgets}
    for widget in widgets:
        label = widget.option = _option_of(widget, opt, named)
        state = widget.on_state or ""
        on_states = states.setdefault(label, [])
        if (label, state) not in listed:
            listed.add((label, state))
            on_states.append(state)
    return states


def _option_of(widget: Widget, opt: ArrayObject | None, named: set[str | None]) -> str:
    """The option a button widget sets: its ``/Opt`` entry, else its on-state's name (an
    on-state named ``/`` is given an alias: see ``_alias_for_empty``)."""
    state = widget.on_state or ""
    if not state:
        widget.alias = _alias_for_empty(named)
    if opt is not None and widget.opt_index is not None and widget.opt_index < len(opt):
        return _text(opt[widget.opt_index])
    return state or widget.alias or "Yes"


def _alias_for_empty(named: set[str | None]) -> str:
    """The name that stands for an on-state named ``/`` (OpenOffice writes it): what a user
    types to choose it, since an empty CSV cell could never, and the name the output writes
    (PDFium's flattener reads the empty name as "no state"). Never one the field uses."""
    for alias in ("Yes", "On", "Selected"):
        if alias not in named:
            return alias
    index = 1
    while f"Option{index}" in named:
        index += 1
    return f"Option{index}"


def _numeric(state: str) -> bool:
    return state.isascii() and state.isdigit() and len(state) < 10


def acroform_of(reader: PdfReader) -> DictionaryObject | None:
    root = reader.trailer["/Root"].get_object()
    form = root.get("/AcroForm") if isinstance(root, DictionaryObject) else None
    form = form.get_object() if form is not None else None
    return form if isinstance(form, DictionaryObject) else None


def form_size(reader: PdfReader) -> int:
    """How many fields or annotations the PDF declares, counted without reading them.

    Reading a field costs far more than counting its reference, so a caller with a budget
    (the service) can refuse a form of 60,000 fields in a second instead of parsing it.
    """
    form = acroform_of(reader)
    fields = form.get("/Fields") if form is not None else None
    declared = len(fields) if isinstance(fields, ArrayObject) else 0
    annotations = 0
    for page in reader.pages:
        annots = page.get("/Annots")
        annots = annots.get_object() if annots is not None else None
        if isinstance(annots, ArrayObject):
            annotations += len(annots)
    return max(declared, annotations)


def check_form_size(reader: PdfReader, max_fields: int) -> None:
    """Refuse, before reading them, more fields than a caller with a budget reads."""
    size = form_size(reader)
    if size > max_fields:
        raise PdfError(
            f"The PDF declares {size:,} fields or annotations; at most {max_fields:,} are read "
            "per form. Split the form into several files."
        )


def top_field_ref(target: Target) -> IndirectObject | None:
    """The root of a field's ``/Parent`` chain, as ``/AcroForm /Fields`` should list it."""
    ref, node, depth = target.ref, target.obj, 0
    while "/Parent" in node and depth < _MAX_DEPTH:
        parent = node.raw_get("/Parent")
        above = parent.get_object() if isinstance(parent, IndirectObject) else None
        if not isinstance(above, DictionaryObject):
            break  # (reading the field's name already refused a parent that is no field)
        ref, node = parent, above
        depth += 1
    return ref
