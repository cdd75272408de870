"""Build realistic fillable AcroForm PDFs for tests and benchmarks.

The forms are assembled from pypdf's generic objects only, so fixtures depend neither on the
engine under test nor on a PDF authoring library, and every structural quirk is explicit.
Like many forms in the wild, the page prints its own labels and boxes, and most widgets carry
no appearance stream (``/AP``) at all: a filler has to generate them.

Coordinates are PDF user space, bottom-left origin, ``(x0, y0, x1, y1)`` as in ``/Rect``.
"""

from __future__ import annotations

import io
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any
from xml.sax.saxutils import quoteattr

from pdfminer.fontmetrics import FONT_METRICS
from pypdf import PdfWriter
from pypdf.generic import (
    ArrayObject,
    DecodedStreamObject,
    DictionaryObject,
    FloatObject,
    IndirectObject,
    NameObject,
    NumberObject,
    PdfObject,
    StreamObject,
    TextStringObject,
)

Rect = tuple[float, float, float, float]

KINDS = frozenset({"text", "checkbox", "radio", "combo", "listbox", "signature"})
DEFAULT_DA = "/Helv 10 Tf 0 g"
#: What checkboxes and radios left at ``DEFAULT_DA`` get instead, as Acrobat writes them.
BUTTON_DA = "/ZaDb 0 Tf 0 g"
OWNER_PASSWORD = "owner"

#: Field flags (``/Ff``), PDF 32000-1 tables 221, 226, 228 and 230.
FF_READ_ONLY = 1 << 0
FF_REQUIRED = 1 << 1
FF_MULTILINE = 1 << 12
FF_NO_TOGGLE_TO_OFF = 1 << 14
FF_RADIO = 1 << 15
FF_COMBO = 1 << 17
FF_COMB = 1 << 24
#: Annotation flags (``/F``), PDF 32000-1 table 165.
F_HIDDEN = 1 << 1
F_PRINT = 1 << 2

LABEL_SIZE = 9.0
TITLE_SIZE = 16.0
#: ZapfDingbats glyphs Acrobat uses for a check mark and a radio dot.
CHECK_GLYPH = "4"
DOT_GLYPH = "l"


@dataclass
class Spec:
    """One field to place; ``name`` may be dotted ("a.b") to nest it under a parent field.

    ``on_state`` and radio export values can only be discovered through ``/AP`` (or ``/Opt``
    for radios), so forms that rely on a non-"Yes" state should set ``with_appearance``.
    Note that pypdf's ``get_fields()`` raises on a radio whose kids have no ``/AP``.
    For a radio, ``rect`` is the group's area (its label goes above it) and ``rects`` are the
    kids' boxes; without ``rects`` the kids are spread evenly along ``rect``.
    """

    name: str
    kind: str
    rect: Rect
    page: int = 0
    label: str | None = None
    da: str = DEFAULT_DA
    multiline: bool = False
    comb: int | None = None
    max_length: int | None = None
    on_state: str = "Yes"
    options: list[str] | list[tuple[str, str]] | None = None
    rects: list[Rect] | None = None
    radio_use_opt: bool = False
    quadding: int = 0
    read_only: bool = False
    required: bool = False
    with_appearance: bool = False
    mk_rotation: int = 0
    hidden: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r}")
        if self.kind in {"radio", "combo", "listbox"} and not self.options:
            raise ValueError(f"{self.name}: a {self.kind} needs options")
        if self.rects is not None and len(self.rects) != len(self.options or []):
            raise ValueError(f"{self.name}: rects and options differ in length")
        if self.comb is not None and self.kind != "text":
            raise ValueError(f"{self.name}: only text fields can be comb fields")
        if self.mk_rotation % 90:
            raise ValueError(f"{self.name}: /MK /R must be a multiple of 90")

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """Options as (export, display) pairs."""
        return [(o, o) if isinstance(o, str) else o for o in self.options or []]

    @property
    def limit(self) -> int | None:
        """The /MaxLen the field carries, if any."""
        return self.comb if self.comb is not None else self.max_length

    @property
    def kid_rects(self) -> list[Rect]:
        """One rect per radio kid: explicit ``rects`` or evenly spread along ``rect``."""
        if self.rects is not None:
            return self.rects
        x0, y0, x1, y1 = self.rect
        side = y1 - y0
        slot = (x1 - x0) / len(self.pairs)
        return [(x0 + i * slot, y0, x0 + i * slot + side, y1) for i in range(len(self.pairs))]

    @property
    def kid_states(self) -> list[str]:
        """Radio kids' on-state names: export values, or indices when /Opt holds the exports."""
        if self.radio_use_opt:
            return [str(i) for i in range(len(self.pairs))]
        return [export for export, _ in self.pairs]


def build_form(
    specs: list[Spec],
    *,
    pages: int = 1,
    page_size: tuple[float, float] = (612, 792),
    xfa: bool = False,
    stale_fields: bool = False,
    dr_fonts: bool = True,
    encrypt_empty_password: bool = False,
    encrypt_user_password: str | None = None,
    rotate: int = 0,
    title: str | None = None,
) -> bytes:
    """Return a PDF with an AcroForm holding ``specs``.

    ``stale_fields`` leaves the last spec's field out of ``/AcroForm /Fields`` while its widget
    stays in the page's ``/Annots``, as authoring tools sometimes do. Encryption uses owner
    password ``OWNER_PASSWORD`` and either an empty or the given user password.
    """
    if encrypt_empty_password and encrypt_user_password is not None:
        raise ValueError("choose one of encrypt_empty_password and encrypt_user_password")
    builder = _Builder(pages, page_size, rotate, title)
    for i, spec in enumerate(specs):
        builder.add(spec, listed=not (stale_fields and i == len(specs) - 1))
    builder.finish(specs, xfa=xfa, dr_fonts=dr_fonts)
    password = "" if encrypt_empty_password else encrypt_user_password
    if password is not None:
        builder.writer.encrypt(password, OWNER_PASSWORD, algorithm="AES-128")
    out = io.BytesIO()
    builder.writer.write(out)
    return out.getvalue()


class _Builder:
    """Collects objects, page drawing and the field tree while specs are added."""

    def __init__(
        self, pages: int, page_size: tuple[float, float], rotate: int, title: str | None
    ) -> None:
        self.writer = PdfWriter()
        self.helv = self.ref(_font("Helvetica", winansi=True))
        self.zadb = self.ref(_font("ZapfDingbats"))
        self.pages = [self.writer.add_blank_page(*page_size) for _ in range(pages)]
        self.annots = [ArrayObject() for _ in range(pages)]
        self.ops: list[list[str]] = [[] for _ in range(pages)]
        self.fields = ArrayObject()
        self.parents: dict[str, IndirectObject] = {}
        self.names: set[str] = set()
        if rotate:
            for page in self.pages:
                page[_n("/Rotate")] = NumberObject(rotate)
        if title:
            self.ops[0].append(_text_op(40, page_size[1] - 50, TITLE_SIZE, title))

    def ref(self, obj: PdfObject) -> IndirectObject:
        """Register ``obj`` as an indirect object of the output."""
        return self.writer._add_object(obj)

    def add(self, spec: Spec, *, listed: bool) -> None:
        """Add the field, its widget(s) and its printed label and box(es)."""
        if not 0 <= spec.page < len(self.pages):
            raise ValueError(f"{spec.name}: page {spec.page} does not exist")
        if spec.name in self.names or spec.name in self.parents:
            raise ValueError(f"duplicate field name {spec.name!r}")
        self.names.add(spec.name)
        field = self.radio(spec) if spec.kind == "radio" else self.terminal(spec)
        self.attach(field, spec.name, listed)
        self.ops[spec.page].extend(_drawing(spec))

    def terminal(self, spec: Spec) -> IndirectObject:
        """A merged field/widget dictionary, the usual shape of a one-widget field."""
        widget = self.widget(spec, spec.rect)
        widget.update(_field_entries(spec))
        if spec.kind == "checkbox":
            widget.update(_d({"/V": _n("/Off"), "/AS": _n("/Off")}))
            if spec.with_appearance:
                widget[_n("/AP")] = self.button_ap(spec, spec.rect, spec.on_state, CHECK_GLYPH)
        ref = self.ref(widget)
        self.annots[spec.page].append(ref)
        return ref

    def radio(self, spec: Spec) -> IndirectObject:
        """A radio parent field whose kids are pure widgets, one per option."""
        parent = _field_entries(spec)
        parent[_n("/Kids")] = kids = ArrayObject()
        if spec.radio_use_opt:
            parent[_n("/Opt")] = ArrayObject(TextStringObject(e) for e, _ in spec.pairs)
        parent_ref = self.ref(parent)
        for rect, state in zip(spec.kid_rects, spec.kid_states, strict=True):
            kid = self.widget(spec, rect)
            kid.update(_d({"/Parent": parent_ref, "/AS": _n("/Off")}))
            if spec.with_appearance:
                kid[_n("/AP")] = self.button_ap(spec, rect, state, DOT_GLYPH)
            kid_ref = self.ref(kid)
            kids.append(kid_ref)
            self.annots[spec.page].append(kid_ref)
        return parent_ref

    def widget(self, spec: Spec, rect: Rect) -> DictionaryObject:
        """The annotation half of a field: rect, flags, page and border characteristics."""
        mk = _d({"/BC": _nums(0, 0, 0)})
        if spec.kind in {"checkbox", "radio"}:
            mk[_n("/CA")] = TextStringObject(CHECK_GLYPH if spec.kind == "checkbox" else DOT_GLYPH)
        if spec.mk_rotation:
            mk[_n("/R")] = NumberObject(spec.mk_rotation)
        flags = F_PRINT | (F_HIDDEN if spec.hidden else 0)
        return _d(
            {
                "/Type": _n("/Annot"),
                "/Subtype": _n("/Widget"),
                "/Rect": _nums(*rect),
                "/F": NumberObject(flags),
                "/P": self.pages[spec.page].indirect_reference,
                "/MK": mk,
                "/BS": _d({"/W": NumberObject(1), "/S": _n("/S")}),
            }
        )

    def button_ap(self, spec: Spec, rect: Rect, state: str, glyph: str) -> DictionaryObject:
        """/N and /D appearances for one on-state and /Off, as Acrobat writes them."""
        w, h = rect[2] - rect[0], rect[3] - rect[1]
        bw, bh = _box_size(w, h, spec.mk_rotation)
        on, off = _glyph_ops(bw, bh, glyph), ""
        down = f"0.75 g 0 0 {_num(bw)} {_num(bh)} re f\n"

        def xobj(ops: str) -> IndirectObject:
            return self.ref(_xobject(w, h, spec.mk_rotation, ops, self.zadb))

        return _d(
            {
                "/N": _d({f"/{state}": xobj(on), "/Off": xobj(off)}),
                "/D": _d({f"/{state}": xobj(down + on), "/Off": xobj(down)}),
            }
        )

    def attach(self, field: IndirectObject, name: str, listed: bool) -> None:
        """Name the field and hang it under its parents, or under /Fields at the top."""
        *prefix, leaf = name.split(".")
        field.get_object()[_n("/T")] = TextStringObject(leaf)
        parent = self.parent(prefix, listed)
        if parent is None:
            if listed:
                self.fields.append(field)
            return
        field.get_object()[_n("/Parent")] = parent
        parent.get_object()[_n("/Kids")].append(field)

    def parent(self, prefix: list[str], listed: bool) -> IndirectObject | None:
        """The non-terminal field for a dotted prefix, shared by every listed sibling."""
        if not prefix:
            return None
        key = ".".join(prefix)
        if key in self.names:
            raise ValueError(f"{key!r} is both a field and a parent")
        if listed and key in self.parents:
            return self.parents[key]
        ref = self.ref(_d({"/Kids": ArrayObject()}))
        self.attach(ref, key, listed)
        if listed:
            self.parents[key] = ref
        return ref

    def finish(self, specs: Sequence[Spec], *, xfa: bool, dr_fonts: bool) -> None:
        """Write page contents and resources, then the /AcroForm dictionary."""
        for page, ops, annots in zip(self.pages, self.ops, self.annots, strict=True):
            content = DecodedStreamObject()
            content.set_data("\n".join(ops).encode("latin-1"))
            page[_n("/Contents")] = self.ref(content.flate_encode())
            page[_n("/Resources")] = _d({"/Font": _d({"/Helv": self.helv})})
            if annots:
                page[_n("/Annots")] = annots
        acroform = _d({"/Fields": self.fields, "/DA": TextStringObject("/Helv 0 Tf 0 g")})
        if dr_fonts:
            acroform[_n("/DR")] = _d({"/Font": _d({"/Helv": self.helv, "/ZaDb": self.zadb})})
        if xfa:
            acroform[_n("/XFA")] = self.ref(_xfa_stream(specs))
        self.writer.root_object[_n("/AcroForm")] = self.ref(acroform)


def _field_entries(spec: Spec) -> DictionaryObject:
    """The field half of a dictionary: type, flags, default appearance and value limits."""
    ft = {"text": "/Tx", "checkbox": "/Btn", "radio": "/Btn", "signature": "/Sig"}
    entries = _d({"/FT": _n(ft.get(spec.kind, "/Ch"))})
    flags = _field_flags(spec)
    if flags:
        entries[_n("/Ff")] = NumberObject(flags)
    if spec.kind != "signature":
        button = spec.kind in {"checkbox", "radio"}
        da = BUTTON_DA if button and spec.da == DEFAULT_DA else spec.da
        entries[_n("/DA")] = TextStringObject(da)
    if spec.quadding and spec.kind in {"text", "combo", "listbox"}:
        entries[_n("/Q")] = NumberObject(spec.quadding)
    if spec.kind == "text" and spec.limit is not None:
        entries[_n("/MaxLen")] = NumberObject(spec.limit)
    if spec.kind in {"combo", "listbox"}:
        entries[_n("/Opt")] = ArrayObject(_option_entry(e, d) for e, d in spec.pairs)
    if spec.kind == "radio":
        entries[_n("/V")] = _n("/Off")
    return entries


def _field_flags(spec: Spec) -> int:
    """/Ff bits for the spec's kind and options."""
    flags = (FF_READ_ONLY if spec.read_only else 0) | (FF_REQUIRED if spec.required else 0)
    if spec.kind == "text":
        flags |= (FF_MULTILINE if spec.multiline else 0) | (FF_COMB if spec.comb else 0)
    elif spec.kind == "radio":
        flags |= FF_RADIO | FF_NO_TOGGLE_TO_OFF
    elif spec.kind == "combo":
        flags |= FF_COMBO
    return flags


def _option_entry(export: str, display: str) -> PdfObject:
    """A plain /Opt string, or an [export display] pair when the two differ."""
    if export == display:
        return TextStringObject(export)
    return ArrayObject([TextStringObject(export), TextStringObject(display)])


def _font(base: str, *, winansi: bool = False) -> DictionaryObject:
    """A standard-14 Type1 font dictionary."""
    font = _d({"/Type": _n("/Font"), "/Subtype": _n("/Type1"), "/BaseFont": _n(f"/{base}")})
    if winansi:
        font[_n("/Encoding")] = _n("/WinAnsiEncoding")
    return font


def _box_size(w: float, h: float, rotation: int) -> tuple[float, float]:
    """Form BBox extent: a rotated widget draws in its own, turned, coordinate frame."""
    return (h, w) if rotation % 180 else (w, h)


def _rotation_matrix(w: float, h: float, rotation: int) -> ArrayObject:
    """Maps the turned form space back onto the unrotated widget rectangle."""
    matrices = {
        0: (1, 0, 0, 1, 0, 0),
        90: (0, 1, -1, 0, w, 0),
        180: (-1, 0, 0, -1, w, h),
        270: (0, -1, 1, 0, 0, h),
    }
    return _nums(*matrices[rotation % 360])


def _xobject(w: float, h: float, rotation: int, ops: str, zadb: IndirectObject) -> StreamObject:
    """A form XObject appearance for a button widget."""
    bw, bh = _box_size(w, h, rotation)
    stream = DecodedStreamObject()
    stream.update(
        _d(
            {
                "/Type": _n("/XObject"),
                "/Subtype": _n("/Form"),
                "/BBox": _nums(0, 0, bw, bh),
                "/Matrix": _rotation_matrix(w, h, rotation),
                "/Resources": _d({"/Font": _d({"/ZaDb": zadb})}),
            }
        )
    )
    stream.set_data(ops.encode("latin-1"))
    return stream


def _glyph_ops(bw: float, bh: float, glyph: str) -> str:
    """Content drawing a ZapfDingbats check or dot centred in a ``bw`` x ``bh`` box."""
    size = min(bw, bh) * 0.8
    x, y = (bw - size * 0.75) / 2, (bh - size * 0.7) / 2
    return f"q 0 g BT /ZaDb {_num(size)} Tf {_num(x)} {_num(y)} Td ({glyph}) Tj ET Q\n"


def _drawing(spec: Spec) -> list[str]:
    """Page operators printing the spec's label and the boxes its widgets sit on.

    Hidden fields print nothing: they hold data, not something a person fills in.
    """
    if spec.hidden:
        return []
    ops = ["0.4 G 0.6 w"]
    if spec.kind == "radio":
        for rect, (_, caption) in zip(spec.kid_rects, spec.pairs, strict=True):
            ops += [_circle_op(rect), _caption_right(rect, caption)]
    elif spec.kind == "signature":
        ops.append(_underline_op(spec.rect))
    else:
        ops.append(_box_op(spec.rect))
        if spec.comb:
            ops.append(_comb_op(spec.rect, spec.comb))
    if spec.label:
        ops.append(_label_op(spec.kind, spec.rect, spec.label))
    return ops


def _label_op(kind: str, rect: Rect, label: str) -> str:
    """A label left of a checkbox (right of it when there is no room), else above the box."""
    if kind != "checkbox":
        return _text_op(rect[0], rect[3] + 3, LABEL_SIZE, label)
    left = rect[0] - 6 - _text_width(label, LABEL_SIZE)
    if left >= 10:
        return _text_op(left, _baseline(rect), LABEL_SIZE, label)
    return _caption_right(rect, label)


def _caption_right(rect: Rect, text: str) -> str:
    return _text_op(rect[2] + 5, _baseline(rect), LABEL_SIZE, text)


def _baseline(rect: Rect) -> float:
    """Baseline that centres a label vertically on a small box."""
    return rect[1] + (rect[3] - rect[1] - LABEL_SIZE * 0.7) / 2


def _text_width(text: str, size: float) -> float:
    widths = FONT_METRICS["Helvetica"][1]
    return sum(widths.get(ch, 556) for ch in text) * size / 1000


def _text_op(x: float, y: float, size: float, text: str) -> str:
    return f"0 g BT /Helv {_num(size)} Tf {_num(x)} {_num(y)} Td {_pdf_string(text)} Tj ET"


def _box_op(rect: Rect) -> str:
    x0, y0, x1, y1 = rect
    return f"{_num(x0)} {_num(y0)} {_num(x1 - x0)} {_num(y1 - y0)} re S"


def _underline_op(rect: Rect) -> str:
    return f"{_num(rect[0])} {_num(rect[1])} m {_num(rect[2])} {_num(rect[1])} l S"


def _comb_op(rect: Rect, cells: int) -> str:
    """Cell dividers under a comb field, so each character has its printed slot."""
    x0, y0, x1, y1 = rect
    step = (x1 - x0) / cells
    xs = (x0 + i * step for i in range(1, cells))
    return " ".join(f"{_num(x)} {_num(y0)} m {_num(x)} {_num(y1)} l" for x in xs) + " S"


def _circle_op(rect: Rect) -> str:
    """A circle inscribed in ``rect`` from four Bézier quarter arcs."""
    cx, cy = (rect[0] + rect[2]) / 2, (rect[1] + rect[3]) / 2
    r = min(rect[2] - rect[0], rect[3] - rect[1]) / 2
    k = r * 0.5523
    p = [_num(v) for v in (cx - r, cx - k, cx, cx + k, cx + r, cy - r, cy - k, cy, cy + k, cy + r)]
    xl, xlk, xc, xrk, xr, yb, ybk, yc, ytk, yt = p
    return (
        f"{xr} {yc} m {xr} {ytk} {xrk} {yt} {xc} {yt} c {xlk} {yt} {xl} {ytk} {xl} {yc} c "
        f"{xl} {ybk} {xlk} {yb} {xc} {yb} c {xrk} {yb} {xr} {ybk} {xr} {yc} c S"
    )


def _pdf_string(text: str) -> str:
    """A WinAnsi literal string; characters outside the encoding print as '?'."""
    raw = text.encode("cp1252", "replace").decode("latin-1")
    return "(" + raw.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def _xfa_stream(specs: Sequence[Spec]) -> StreamObject:
    """A minimal XDP packet naming the fields, enough to mark the form as XFA-bearing."""
    fields = "".join(f"<field name={quoteattr(s.name.split('.')[-1])}/>" for s in specs)
    packet = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<xdp:xdp xmlns:xdp="http://ns.adobe.com/xdp/">'
        '<template xmlns="http://www.xfa.org/schema/xfa-template/3.3/">'
        f'<subform name="form1" layout="tb">{fields}</subform></template>'
        '<xfa:datasets xmlns:xfa="http://www.xfa.org/schema/xfa-data/1.0/">'
        "<xfa:data><form1/></xfa:data></xfa:datasets></xdp:xdp>\n"
    )
    stream = DecodedStreamObject()
    stream.set_data(packet.encode("utf-8"))
    return stream


def _d(entries: dict[str, Any]) -> DictionaryObject:
    return DictionaryObject({NameObject(k): v for k, v in entries.items()})


def _n(name: str) -> NameObject:
    return NameObject(name)


def _nums(*values: float) -> ArrayObject:
    return ArrayObject(
        NumberObject(v) if float(v).is_integer() else FloatObject(round(v, 3)) for v in values
    )


def _num(value: float) -> str:
    return f"{round(value, 2):g}"


# ---------------------------------------------------------------------------------------------
# Ready-made forms and rows


SAMPLE_COUNTRIES = {
    "United States": ("Springfield", "Portland", "Austin"),
    "Germany": ("Berlin", "München", "Köln"),
    "Greece": ("Αθήνα", "Θεσσαλονίκη", "Πάτρα"),
    "Sweden": ("Stockholm", "Göteborg", "Malmö"),
}
PHONE_PREFIX = {"United States": "+1", "Germany": "+49", "Greece": "+30", "Sweden": "+46"}
PEOPLE = (
    ("Zoë Ångström", "zoe.angstrom"),
    ("Liam O'Brien", "liam.obrien"),
    ("Ελένη Παπαδοπούλου", "eleni.papadopoulou"),
    ("Jürgen Weiß", "juergen.weiss"),
    ("Анна Кузнецова", "anna.kuznetsova"),
    ("María José García-Núñez", "mj.garcia"),
    ("Kwame Mensah", "kwame.mensah"),
    ("Łukasz Nowak", "lukasz.nowak"),
    ("Chloé Dubois", "chloe.dubois"),
    ("Νίκος Γεωργίου", "nikos.georgiou"),
    ("Priya Raghunathan", "priya.r"),
    ("Дмитрий Волков", "dmitry.volkov"),
    ("Søren Kjær", "soren.kjaer"),
    ("Emily Clarke", "emily.clarke"),
    ("Aoife Ní Bhriain", "aoife.nibhriain"),
)
STREETS = (
    "12 Baker Street",
    "Hauptstraße 5",
    "Οδός Ερμού 24",
    "ул. Ленина, д. 7",
    "221B Elm Avenue, Apt. 3",
    "Drottninggatan 88",
    "1600 Pennsylvania Avenue NW",
    "Kurfürstendamm 195",
)
NOTES = (
    "",
    "",
    "Prefers contact by email.",
    "Allergic to peanuts.\nVegetarian meals, please.",
    "Μιλάει Ελληνικά και Αγγλικά.",
    "Говорит по-русски.",
    "Referred by a friend (Marta); wants the yearly invoice.",
    "Wheelchair access needed.\nParks on site.\nArrives after 18:00.",
)


def _box(x: float, y: float, width: float, height: float = 16) -> Rect:
    """A field rect from its bottom-left corner and size."""
    return (x, y, x + width, y + height)


def sample_form() -> tuple[bytes, list[Spec]]:
    """A one-page membership application with every field kind, and the specs that built it."""
    specs = _sample_specs()
    return build_form(specs, title="Membership Application"), specs


def _sample_specs() -> list[Spec]:
    return [
        Spec(
            "full_name",
            "text",
            _box(40, 690, 330),
            label="Full name",
            da="/Helv 0 Tf 0 g",
            max_length=40,
            required=True,
        ),
        Spec(
            "date_of_birth",
            "text",
            _box(400, 690, 172),
            label="Date of birth (YYYY-MM-DD)",
            max_length=10,
        ),
        Spec("email", "text", _box(40, 650, 330), label="Email", max_length=60, required=True),
        Spec("phone", "text", _box(400, 650, 172), label="Phone", max_length=20),
        Spec("street", "text", _box(40, 610, 532), label="Street address", max_length=50),
        Spec("city", "text", _box(40, 570, 250), label="City", max_length=30),
        Spec("zip", "text", _box(310, 570, 90), label="ZIP code", comb=5, quadding=1),
        Spec(
            "country", "combo", _box(420, 570, 152), label="Country", options=list(SAMPLE_COUNTRIES)
        ),
        Spec(
            "plan",
            "radio",
            _box(40, 520, 330, 12),
            label="Membership plan",
            options=["Basic", "Standard", "Premium"],
            with_appearance=True,
        ),
        Spec(
            "interests",
            "listbox",
            _box(400, 440, 172, 72),
            label="Main interest",
            options=["Hiking", "Photography", "Chess", "Cooking", "Music"],
        ),
        Spec("newsletter", "checkbox", _box(200, 480, 12, 12), label="Send me the newsletter"),
        Spec(
            "photo_consent",
            "checkbox",
            _box(200, 455, 12, 12),
            label="Foto-Einwilligung",
            on_state="Ja",
            with_appearance=True,
        ),
        Spec(
            "notes",
            "text",
            _box(40, 300, 532, 110),
            label="Notes",
            multiline=True,
            da="/Helv 9 Tf 0 g",
        ),
        Spec("signature", "signature", _box(40, 200, 300, 30), label="Signature"),
    ]


def sample_rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Deterministic rows for ``sample_form()``; the signature field is left out."""
    rng = random.Random(seed)
    start = rng.randrange(len(PEOPLE))
    specs = _sample_specs()
    rows = []
    for i in range(n):
        name, local = PEOPLE[(start + i) % len(PEOPLE)]
        country = rng.choice(list(SAMPLE_COUNTRIES))
        row: dict[str, Any] = {
            "full_name": name,
            "date_of_birth": _birthday(rng).isoformat(),
            "email": f"{local}@{rng.choice(('example.com', 'example.org', 'mail.example.net'))}",
            "phone": f"{PHONE_PREFIX[country]} {rng.randint(20, 99)} {rng.randint(10**5, 10**7)}",
            "street": rng.choice(STREETS),
            "city": rng.choice(SAMPLE_COUNTRIES[country]),
            "zip": f"{rng.randint(10000, 99999)}",
            "country": country,
            "plan": rng.choice(["Basic", "Standard", "Premium"]),
            "interests": rng.choice(["Hiking", "Photography", "Chess", "Cooking", "Music"]),
            "newsletter": rng.random() < 0.5,
            "photo_consent": rng.random() < 0.6,
            "notes": rng.choice(NOTES),
        }
        rows.append(_respect_limits(row, specs))
    return rows


def bench_form() -> bytes:
    """One dense page of 32 fields in the proportions of a real business form."""
    return build_form(_bench_specs(), title="Order and Customer Record")


def _bench_specs() -> list[Spec]:
    left, right, w = 40.0, 322.0, 250.0
    auto, small = "/Helv 0 Tf 0 g", "/Helv 8 Tf 0 g"
    return [
        Spec("first_name", "text", _box(left, 700, w), label="First name", da=auto, max_length=30),
        Spec("last_name", "text", _box(right, 700, w), label="Last name", da=auto, max_length=30),
        Spec("company", "text", _box(left, 670, w), label="Company", max_length=50),
        Spec("job_title", "text", _box(right, 670, w), label="Job title", max_length=40),
        Spec("billing.street", "text", _box(left, 640, w), label="Street", max_length=50),
        Spec("billing.city", "text", _box(right, 640, w), label="City", da=auto, max_length=30),
        Spec("billing.state", "text", _box(left, 610, 110), label="State / region", max_length=20),
        Spec("postcode", "text", _box(170, 610, 120), label="Postcode", comb=5),
        Spec("contact.phone", "text", _box(right, 610, w), label="Phone", da=small, max_length=20),
        Spec("contact.email", "text", _box(left, 580, w), label="Email", max_length=60),
        Spec("tax_id", "text", _box(right, 580, 216), label="Tax ID", comb=9),
        Spec(
            "invoice_no",
            "text",
            _box(left, 550, 120),
            label="Invoice no.",
            quadding=1,
            max_length=16,
        ),
        Spec(
            "invoice_date",
            "text",
            _box(170, 550, 120),
            label="Invoice date",
            quadding=1,
            max_length=10,
        ),
        Spec("amount", "text", _box(right, 550, 120), label="Amount", quadding=2, max_length=14),
        Spec(
            "reference", "text", _box(452, 550, 120), label="Reference", quadding=1, max_length=20
        ),
        Spec(
            "form_id", "text", _box(left, 520, 120), label="Form ID", read_only=True, max_length=12
        ),
        Spec("internal_ref", "text", _box(170, 520, 120), hidden=True, max_length=12),
        Spec(
            "currency",
            "combo",
            _box(right, 520, 120),
            label="Currency",
            options=[
                ("EUR", "Euro"),
                ("USD", "US dollar"),
                ("GBP", "Pound sterling"),
                ("SEK", "Swedish krona"),
            ],
        ),
        Spec(
            "department",
            "combo",
            _box(452, 520, 120),
            label="Department",
            options=["Sales", "Support", "Engineering", "Finance", "HR"],
        ),
        Spec(
            "shipping",
            "radio",
            _box(left, 485, w, 12),
            label="Shipping",
            options=["standard", "express", "overnight"],
            with_appearance=True,
            required=True,
        ),
        Spec(
            "size",
            "radio",
            _box(right, 485, w, 12),
            label="Size",
            options=["S", "M", "L", "XL"],
            radio_use_opt=True,
            with_appearance=True,
        ),
        *_bench_checkboxes(),
        Spec(
            "language",
            "listbox",
            _box(right, 290, w, 60),
            label="Correspondence language",
            options=["English", "Deutsch", "Français", "Español", "Ελληνικά"],
        ),
        Spec(
            "address_notes",
            "text",
            _box(left, 200, w, 50),
            label="Delivery instructions",
            multiline=True,
            da=small,
        ),
        Spec(
            "comments", "text", _box(right, 200, w, 50), label="Comments", multiline=True, da=auto
        ),
        Spec("signature", "signature", _box(left, 120, w, 30), label="Authorised signature"),
    ]


BENCH_CHECKBOXES = (
    ("opt_in_email", "Email updates", "On"),
    ("opt_in_sms", "SMS updates", "1"),
    ("opt_in_post", "Post (Ja/Nein)", "Ja"),
    ("vip", "VIP customer", "Oui"),
    ("gift_wrap", "Gift wrap", "X"),
    ("invoice_by_mail", "Invoice by mail", "Selected"),
    ("terms", "I accept the terms", "Yes"),
)


def _bench_checkboxes() -> list[Spec]:
    """Non-"Yes" on-states carry /AP so they are discoverable; the plain "Yes" box has none."""
    specs = []
    for i, (name, label, state) in enumerate(BENCH_CHECKBOXES):
        x, y = (180.0, 440 - 20 * i) if i < 4 else (462.0, 440 - 20 * (i - 4))
        specs.append(
            Spec(
                name,
                "checkbox",
                _box(x, y, 12, 12),
                label=label,
                on_state=state,
                with_appearance=state != "Yes",
                required=name == "terms",
            )
        )
    return specs


def bench_rows(n: int, seed: int = 0) -> list[dict[str, Any]]:
    """Deterministic rows for ``bench_form()`` keyed by full field name; no signature value."""
    rng = random.Random(seed)
    specs = _bench_specs()
    rows = []
    for i in range(n):
        name, local = PEOPLE[(seed + i) % len(PEOPLE)]
        first, _, last = name.rpartition(" ")
        row: dict[str, Any] = {
            "first_name": first or name,
            "last_name": last,
            "company": rng.choice(("Acme GmbH", "Globex Corp.", "Initech AB", "Ωμέγα Α.Ε.")),
            "job_title": rng.choice(("Buyer", "Head of Procurement", "Office manager", "CFO")),
            "billing.street": rng.choice(STREETS),
            "billing.city": rng.choice([c for cs in SAMPLE_COUNTRIES.values() for c in cs]),
            "billing.state": rng.choice(("CA", "Bayern", "Αττική", "Skåne")),
            "postcode": f"{rng.randint(10000, 99999)}",
            "contact.phone": f"+{rng.randint(1, 49)} {rng.randint(100, 999)} {i:04d}",
            "contact.email": f"{local}@example.com",
            "tax_id": f"{rng.randint(10**8, 10**9 - 1)}",
            "invoice_no": f"INV-{2024 + i % 2}-{i + 1:05d}",
            "invoice_date": (date(2024, 1, 1) + timedelta(days=rng.randrange(365))).isoformat(),
            "amount": f"{rng.randint(1, 99999)}.{rng.randint(0, 99):02d}",
            "reference": f"PO/{rng.randint(1000, 9999)}/{chr(65 + i % 26)}",
            "form_id": f"F-{seed:02d}-{i:06d}",
            "internal_ref": f"IR{rng.randint(10**6, 10**7 - 1)}",
            "currency": rng.choice(["EUR", "USD", "GBP", "SEK"]),
            "department": rng.choice(["Sales", "Support", "Engineering", "Finance", "HR"]),
            "shipping": rng.choice(["standard", "express", "overnight"]),
            "size": rng.choice(["S", "M", "L", "XL"]),
            **{box: rng.random() < 0.5 for box, _, _ in BENCH_CHECKBOXES},
            "language": rng.choice(["English", "Deutsch", "Français", "Español", "Ελληνικά"]),
            "address_notes": rng.choice(NOTES),
            "comments": rng.choice(NOTES),
        }
        rows.append(_respect_limits(row, specs))
    return rows


def _birthday(rng: random.Random) -> date:
    return date(1945, 1, 1) + timedelta(days=rng.randrange(60 * 365))


def _respect_limits(row: dict[str, Any], specs: Sequence[Spec]) -> dict[str, Any]:
    """Clip text values to their field's /MaxLen so every row is valid for the form."""
    limits = {s.name: s.limit for s in specs if s.limit is not None}
    return {k: v[: limits[k]] if k in limits else v for k, v in row.items()}
