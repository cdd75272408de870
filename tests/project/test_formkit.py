"""The form builder makes the forms it claims to, as pypdf and pdfplumber read them."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pdfplumber
import pytest
from pypdf import PdfReader
from pypdf.errors import FileNotDecryptedError
from pypdf.generic import DictionaryObject

from kits.formkit import (
    F_HIDDEN,
    F_PRINT,
    FF_COMB,
    FF_COMBO,
    FF_MULTILINE,
    FF_RADIO,
    FF_READ_ONLY,
    FF_REQUIRED,
    OWNER_PASSWORD,
    Spec,
    bench_form,
    bench_rows,
    build_form,
    sample_form,
    sample_rows,
)

INCLUDE = Path(__file__).resolve().parents[2] / "include"


def _reader(data: bytes, password: str | None = None) -> PdfReader:
    return PdfReader(io.BytesIO(data), password=password)


def _acroform(data: bytes, password: str | None = None) -> DictionaryObject:
    return _reader(data, password).trailer["/Root"]["/AcroForm"]


def _widgets(data: bytes, page: int = 0) -> list[DictionaryObject]:
    annots = _reader(data).pages[page].get("/Annots", [])
    return [a.get_object() for a in annots]


def _raw_fields(data: bytes) -> dict[str, DictionaryObject]:
    """Terminal field dictionaries by qualified name, with every key (get_fields drops some)."""
    found: dict[str, DictionaryObject] = {}

    def walk(node: DictionaryObject, prefix: str) -> None:
        name = f"{prefix}.{node['/T']}" if prefix else str(node["/T"])
        kids = [k.get_object() for k in node.get("/Kids", [])]
        if "/FT" in node:
            found[name] = node
        for kid in kids:
            if "/T" in kid:
                walk(kid, name)

    for field in _acroform(data)["/Fields"]:
        walk(field.get_object(), "")
    return found


def _qualified(widget: DictionaryObject) -> str:
    """The fully qualified name of the field a widget belongs to."""
    node: Any = widget if "/T" in widget else widget["/Parent"].get_object()
    parts = []
    while node is not None:
        parts.append(str(node["/T"]))
        node = node.get("/Parent")
        node = node.get_object() if node is not None else None
    return ".".join(reversed(parts))


def _small_form(**kwargs: Any) -> bytes:
    specs = [
        Spec("name", "text", (40, 700, 300, 716), label="Name"),
        Spec("agree", "checkbox", (300, 660, 312, 672), label="I agree", on_state="On"),
    ]
    return build_form(specs, **kwargs)


BUILDERS: dict[str, Callable[[], bytes]] = {
    "sample": lambda: sample_form()[0],
    "bench": bench_form,
    "xfa": lambda: _small_form(xfa=True),
    "stale": lambda: _small_form(stale_fields=True),
    "rotated": lambda: _small_form(rotate=90, pages=2),
    "no_dr": lambda: _small_form(dr_fonts=False),
    "empty_password": lambda: _small_form(encrypt_empty_password=True),
}


@pytest.mark.parametrize("builder", BUILDERS.values(), ids=list(BUILDERS))
def test_every_builder_output_opens_in_pypdf_and_pdfplumber(
    builder: Callable[[], bytes],
) -> None:
    data = builder()
    reader = _reader(data)
    assert reader.get_fields()
    assert "/NeedAppearances" not in _acroform(data)
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        page = pdf.pages[0]
        assert len(page.annots) == len(_widgets(data))
        assert page.extract_text().strip()


def test_sample_form_has_every_kind_with_expected_flags_and_states() -> None:
    data, specs = sample_form()
    fields = _reader(data).get_fields()
    assert fields is not None
    assert set(fields) == {s.name for s in specs}
    assert {s.kind for s in specs} == {"text", "checkbox", "radio", "combo", "listbox", "signature"}
    raw = _raw_fields(data)
    assert fields["zip"]["/Ff"] & FF_COMB and raw["zip"]["/MaxLen"] == 5
    assert fields["notes"]["/Ff"] & FF_MULTILINE
    assert fields["full_name"]["/Ff"] & FF_REQUIRED
    assert raw["full_name"]["/DA"] == "/Helv 0 Tf 0 g"
    assert fields["country"]["/Ff"] & FF_COMBO
    assert not fields["interests"].get("/Ff", 0) & FF_COMBO
    assert fields["plan"]["/Ff"] & FF_RADIO
    assert list(fields["plan"]["/_States_"]) == ["/Basic", "/Standard", "/Premium"]
    assert "/Ja" in fields["photo_consent"]["/_States_"]
    assert fields["signature"]["/FT"] == "/Sig"


def test_sample_form_prints_labels_and_boxes_under_widgets() -> None:
    data, specs = sample_form()
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        page = pdf.pages[0]
        text = page.extract_text()
        boxes = {
            (round(r["x0"]), round(r["y0"]), round(r["x1"]), round(r["y1"])) for r in page.rects
        }
    for spec in specs:
        if spec.label:
            assert spec.label in text
        if spec.kind in {"text", "combo", "listbox", "checkbox"}:
            assert tuple(round(v) for v in spec.rect) in boxes


def test_widgets_sit_on_their_page_with_print_flag_and_border_colour() -> None:
    data, specs = sample_form()
    page_ref = _reader(data).pages[0].indirect_reference
    rects = {s.name: s.rect for s in specs}
    for widget in _widgets(data):
        assert widget["/Subtype"] == "/Widget"
        assert widget["/F"] == F_PRINT
        assert widget.raw_get("/P").idnum == page_ref.idnum
        assert "/BC" in widget["/MK"]
        name = _qualified(widget)
        if name != "plan":
            assert [float(v) for v in widget["/Rect"]] == list(rects[name])


def test_only_stated_widgets_have_appearance_streams() -> None:
    data, _ = sample_form()
    with_ap = {_qualified(w) for w in _widgets(data) if "/AP" in w}
    assert with_ap == {"plan", "photo_consent"}
    checkbox = next(w for w in _widgets(data) if _qualified(w) == "photo_consent")
    assert set(checkbox["/AP"]["/N"]) == {"/Ja", "/Off"} == set(checkbox["/AP"]["/D"])
    assert checkbox["/AS"] == "/Off"


def test_acroform_has_default_resources_and_appearance() -> None:
    acroform = _acroform(sample_form()[0])
    fonts = acroform["/DR"]["/Font"]
    assert fonts["/Helv"]["/BaseFont"] == "/Helvetica"
    assert fonts["/Helv"]["/Encoding"] == "/WinAnsiEncoding"
    assert fonts["/ZaDb"]["/BaseFont"] == "/ZapfDingbats"
    assert acroform["/DA"] == "/Helv 0 Tf 0 g"
    assert "/XFA" not in acroform
    assert "/DR" not in _acroform(_small_form(dr_fonts=False))


def test_bench_form_has_the_promised_mix() -> None:
    data = bench_form()
    fields = _reader(data).get_fields()
    assert fields is not None
    raw = _raw_fields(data)
    terminal = {k: {**v, **raw[k]} for k, v in fields.items() if "/FT" in v}
    assert len(terminal) >= 32

    def count(test: Callable[[dict[str, Any]], bool]) -> int:
        return sum(1 for f in terminal.values() if test(f))

    assert count(lambda f: f["/FT"] == "/Tx") >= 12
    assert count(lambda f: f["/FT"] == "/Tx" and f.get("/DA", "").startswith("/Helv 0 ")) >= 2
    assert count(lambda f: f["/FT"] == "/Tx" and f.get("/Q", 0) == 1) >= 1
    assert count(lambda f: f["/FT"] == "/Tx" and f.get("/Q", 0) == 2) >= 1
    assert count(lambda f: f.get("/Ff", 0) & FF_COMB) == 2
    assert count(lambda f: f.get("/Ff", 0) & FF_MULTILINE) == 2
    assert count(lambda f: f["/FT"] == "/Ch" and f.get("/Ff", 0) & FF_COMBO) == 2
    assert count(lambda f: f["/FT"] == "/Ch" and not f.get("/Ff", 0) & FF_COMBO) == 1
    assert count(lambda f: f["/FT"] == "/Sig") == 1
    assert count(lambda f: f["/FT"] == "/Btn" and f.get("/Ff", 0) & FF_RADIO) == 2
    on_states = [
        s
        for f in terminal.values()
        if f["/FT"] == "/Btn" and not f.get("/Ff", 0) & FF_RADIO
        for s in f.get("/_States_", [])
        if s != "/Off"
    ]
    assert len(on_states) >= 6 and "/Yes" not in on_states
    assert {"/On", "/1", "/Ja"} <= set(on_states)


def test_bench_form_radio_with_opt_uses_index_states() -> None:
    fields = _reader(bench_form()).get_fields()
    assert fields is not None
    assert list(fields["size"]["/Opt"]) == ["S", "M", "L", "XL"]
    assert list(fields["size"]["/_States_"]) == ["/0", "/1", "/2", "/3"]
    assert list(fields["currency"]["/Opt"][0]) == ["EUR", "Euro"]


def test_dotted_names_nest_under_one_shared_parent() -> None:
    data = bench_form()
    acroform = _acroform(data)
    tops = {str(f.get_object()["/T"]): f.get_object() for f in acroform["/Fields"]}
    billing = tops["billing"]
    assert "/FT" not in billing
    kids = [k.get_object() for k in billing["/Kids"]]
    assert {str(k["/T"]) for k in kids} == {"street", "city", "state"}
    fields = _reader(data).get_fields()
    assert fields is not None
    assert fields["billing.street"]["/FT"] == "/Tx"


def test_stale_fields_leave_last_field_out_of_acroform_but_on_page() -> None:
    data = _small_form(stale_fields=True)
    fields = _reader(data).get_fields()
    assert fields is not None
    assert set(fields) == {"name"}
    assert {_qualified(w) for w in _widgets(data)} == {"name", "agree"}


def test_stale_dotted_field_gets_its_own_unlisted_parent() -> None:
    specs = [
        Spec("a.b", "text", (40, 700, 200, 716)),
        Spec("a.c", "text", (40, 660, 200, 676)),
    ]
    data = build_form(specs, stale_fields=True)
    fields = _reader(data).get_fields()
    assert fields is not None
    assert {k for k, v in fields.items() if "/FT" in v} == {"a.b"}
    assert {_qualified(w) for w in _widgets(data)} == {"a.b", "a.c"}


def test_xfa_variant_carries_an_xdp_packet() -> None:
    xfa = _acroform(_small_form(xfa=True))["/XFA"].get_object()
    packet = xfa.get_data()
    assert packet.startswith(b"<?xml") and b"<xdp:xdp" in packet
    assert b'name="agree"' in packet


def test_empty_password_encryption_opens_without_a_password() -> None:
    data = _small_form(encrypt_empty_password=True)
    reader = _reader(data)
    assert reader.is_encrypted
    assert "/Encrypt" in reader.trailer
    assert reader.get_fields() is not None
    assert reader.decrypt(OWNER_PASSWORD).name == "OWNER_PASSWORD"


def test_user_password_encryption_needs_the_password() -> None:
    data = _small_form(encrypt_user_password="s3cret")
    with pytest.raises(FileNotDecryptedError):
        _reader(data).get_fields()
    fields = _reader(data, password="s3cret").get_fields()
    assert fields is not None and set(fields) == {"name", "agree"}
    with pdfplumber.open(io.BytesIO(data), password="s3cret") as pdf:
        assert len(pdf.pages[0].annots) == 2


def test_rotation_flags_and_hidden_widgets() -> None:
    specs = [
        Spec("turned", "text", (40, 700, 56, 800), mk_rotation=90),
        Spec("tick", "checkbox", (100, 700, 112, 712), mk_rotation=90, with_appearance=True),
        Spec("secret", "text", (40, 600, 200, 616), hidden=True),
        Spec("locked", "text", (40, 560, 200, 576), read_only=True, required=True),
    ]
    data = build_form(specs, rotate=90)
    assert _reader(data).pages[0]["/Rotate"] == 90
    widgets = {_qualified(w): w for w in _widgets(data)}
    assert widgets["turned"]["/MK"]["/R"] == 90
    matrix = widgets["tick"]["/AP"]["/N"]["/Yes"].get_object()["/Matrix"]
    assert [float(v) for v in matrix] == [0, 1, -1, 0, 12, 0]
    assert widgets["secret"]["/F"] == F_PRINT | F_HIDDEN
    assert widgets["locked"]["/Ff"] == FF_READ_ONLY | FF_REQUIRED


def test_radio_without_appearance_has_bare_kids() -> None:
    spec = Spec("pick", "radio", (40, 700, 300, 712), options=["a", "b"])
    data = build_form([spec])
    parent = _acroform(data)["/Fields"][0].get_object()
    assert parent["/Ff"] & FF_RADIO and len(parent["/Kids"]) == 2
    for kid in (k.get_object() for k in parent["/Kids"]):
        assert "/T" not in kid and "/AP" not in kid
        assert kid["/AS"] == "/Off" and "/MK" in kid


@pytest.mark.parametrize(
    "spec_args",
    [
        {"name": "x", "kind": "button", "rect": (0, 0, 1, 1)},
        {"name": "x", "kind": "radio", "rect": (0, 0, 1, 1)},
        {"name": "x", "kind": "radio", "rect": (0, 0, 1, 1), "options": ["a"], "rects": []},
        {"name": "x", "kind": "checkbox", "rect": (0, 0, 1, 1), "comb": 4},
    ],
)
def test_inconsistent_specs_are_rejected(spec_args: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Spec(**spec_args)


def test_duplicate_and_clashing_names_are_rejected() -> None:
    text = Spec("a", "text", (0, 0, 10, 10))
    with pytest.raises(ValueError):
        build_form([text, text])
    with pytest.raises(ValueError):
        build_form([Spec("a.b", "text", (0, 0, 10, 10)), text])


def _check_rows(rows: list[dict[str, Any]], data: bytes) -> None:
    """Each value has the type and range its field accepts."""
    fields = _reader(data).get_fields()
    assert fields is not None
    for row in rows:
        for name, value in row.items():
            field = fields[name]
            flags = field.get("/Ff", 0)
            if field["/FT"] == "/Tx":
                assert isinstance(value, str)
                assert len(value) <= field.get("/MaxLen", len(value))
            elif field["/FT"] == "/Btn" and not flags & FF_RADIO:
                assert isinstance(value, bool)
            elif field["/FT"] == "/Btn":
                exports = field.get("/Opt") or [s[1:] for s in field["/_States_"]]
                assert value in exports
            else:
                exports = [o if isinstance(o, str) else o[0] for o in field["/Opt"]]
                assert value in exports


def test_sample_rows_are_deterministic_typed_and_varied() -> None:
    rows = sample_rows(25)
    assert rows == sample_rows(25) and rows != sample_rows(25, seed=1)
    _check_rows(rows, sample_form()[0])
    names = " ".join(r["full_name"] for r in rows)
    assert "Zoë Ångström" in names
    assert any("\u0370" <= ch <= "\u03ff" for ch in names)
    assert any("\u0400" <= ch <= "\u04ff" for ch in names)
    assert {True, False} <= {r["newsletter"] for r in rows}


def test_bench_rows_are_deterministic_and_fit_the_form() -> None:
    rows = bench_rows(20, seed=3)
    assert rows == bench_rows(20, seed=3)
    _check_rows(rows, bench_form())


def test_generated_samples_match_the_sample_form() -> None:
    pdf = (INCLUDE / "sample_form.pdf").read_bytes()
    assert len(pdf) < 20_000
    _, specs = sample_form()
    fields = _reader(pdf).get_fields()
    assert fields is not None and set(fields) == {s.name for s in specs}
    with (INCLUDE / "sample_rows.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 25
    assert list(rows[0]) == [s.name for s in specs if s.kind != "signature"]
    spellings = {r[c] for r in rows for c in ("newsletter", "photo_consent")}
    assert spellings <= {"true", "false", "yes", "no", "x", ""}
    assert len(spellings) >= 5
