"""Odd widgets a filler meets: boxes too short for text, odd on-state names, odd /AP.

Each form is written object by object, so the test shows exactly what is odd about it.
"""

from __future__ import annotations

import io
import re

import pytest
from pypdf import PdfReader

from fillpdf_provider.engine import Fit, Template


def raw_form(widgets: dict[int, str], extra: dict[int, bytes] | None = None) -> bytes:
    """A one-page form: ``widgets`` (object number -> dictionary) in /Annots and /Fields."""
    refs = " ".join(f"{n} 0 R" for n in widgets)
    objects: dict[int, bytes] = {
        1: f"<</Type/Catalog/Pages 2 0 R/AcroForm<</Fields[{refs}]/DR<</Font<</Helv 90 0 R>>>>"
        f"/DA(/Helv 0 Tf 0 g)>>>>".encode(),
        2: b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        3: f"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Annots[{refs}]>>".encode(),
        90: b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica/Encoding/WinAnsiEncoding>>",
        **{n: body.encode("latin-1") for n, body in widgets.items()},
        **(extra or {}),
    }
    out = bytearray(b"%PDF-1.7\n")
    offsets = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, objects[number])
    size = max(objects) + 1
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % size
    for number in range(1, size):
        out += (
            b"%010d 00000 n \n" % offsets[number] if number in offsets else b"0000000000 65535 f \n"
        )
    out += b"trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (size, xref)
    return bytes(out)


def stream(body: bytes, entries: str = "") -> bytes:
    return b"<<%s/Length %d>>\nstream\n%s\nendstream" % (entries.encode(), len(body), body)


def sizes(pdf: bytes) -> list[float]:
    """The font size of every text appearance in ``pdf``."""
    found = []
    for annot in PdfReader(io.BytesIO(pdf)).pages[0]["/Annots"]:
        ap = annot.get_object().get("/AP")
        if ap:
            data = ap["/N"].get_object().get_data()
            found += [float(v) for v in re.findall(rb"([-\d.]+) Tf", data)]
    return found


def text_widget(rect: str, flags: int = 0, extra: str = "") -> dict[int, str]:
    return {
        11: f"<</Type/Annot/Subtype/Widget/FT/Tx/T(tx)/Ff {flags}/Rect[{rect}]"
        f"/DA(/Helv 10 Tf 0 g){extra}>>"
    }


@pytest.mark.parametrize("value", ["", "  ", "Abc", "Åbc", "Line one\nline two"])
def test_a_multiline_box_too_short_for_one_line_fills_as_one_line(value: str) -> None:
    """A 7 pt tall multiline box: at 4 pt with an accent's rise it holds no line, so every
    value (the empty one too) was refused. It is laid out as one line, sized by its height."""
    template = Template(raw_form(text_widget("100 700 400 707", flags=1 << 12)))
    for policy in ("error", "shrink", "truncate"):
        result = template.fill_result({"tx": value}, fit=Fit(policy))
        assert result.cut == ()
        assert all(size >= 1 for size in sizes(result.pdf))


@pytest.mark.parametrize(
    ("rect", "extra"),
    [
        ("100 700 400 700", ""),  # no height at all
        ("100 700 400 703", ""),  # 3 pt
        ("100 700 400 720", "/MK<</BC[0]>>/BS<</W 50>>"),  # a border wider than the box
    ],
)
def test_no_text_is_drawn_at_a_negative_or_vanishing_size(rect: str, extra: str) -> None:
    template = Template(raw_form(text_widget(rect, extra=extra)))
    drawn = sizes(template.fill({"tx": "Hi"}))
    assert drawn and all(size >= 1 for size in drawn)


def test_an_empty_on_state_beside_a_real_yes_stays_its_own_option() -> None:
    """Two buttons named /Yes and one named / (OpenOffice): "Yes" must not switch on all
    three. The empty one is offered and written under a name the group does not use."""
    on = stream(b"0 g 2 2 8 8 re f", "/Type/XObject/Subtype/Form/BBox[0 0 12 12]")
    off = stream(b"", "/Type/XObject/Subtype/Form/BBox[0 0 12 12]")
    kid = (
        "<</Type/Annot/Subtype/Widget/Parent 10 0 R/Rect[{x} 700 {w} 712]/AS/Off"
        "/AP<</N<<{state} 40 0 R/Off 41 0 R>>>>>>"
    )
    widgets = {
        10: "<</FT/Btn/T(grp)/Ff 49152/Kids[11 0 R 12 0 R 13 0 R]>>",
        11: kid.format(x=100, w=112, state="/Yes"),
        12: kid.format(x=130, w=142, state="/Yes"),
        13: kid.format(x=160, w=172, state="/"),
    }
    pdf = raw_form(widgets, {40: on, 41: off})
    pdf = pdf.replace(b"/Fields[10 0 R 11 0 R 12 0 R 13 0 R]", b"/Fields[10 0 R]")
    pdf = pdf.replace(b"/Annots[10 0 R 11 0 R 12 0 R 13 0 R]", b"/Annots[11 0 R 12 0 R 13 0 R]")
    template = Template(pdf)
    (field,) = template.fields
    assert field.options == ("Yes", "On")

    def states(value: str) -> list[str]:
        annots = PdfReader(io.BytesIO(template.fill({"grp": value}))).pages[0]["/Annots"]
        return [str(a.get_object()["/AS"]) for a in annots]

    assert states("Yes") == ["/Yes", "/Yes", "/Off"]
    assert states("On") == ["/Off", "/Off", "/On"]


def test_a_checkbox_whose_normal_appearance_is_one_stream_is_yes() -> None:
    """/AP /N is a stream (the same look in every state): its dictionary keys (/Type,
    /BBox ...) are not on-state names."""
    look = stream(b"0 g 2 2 8 8 re f", "/Type/XObject/Subtype/Form/BBox[0 0 12 12]")
    widget = {
        11: "<</Type/Annot/Subtype/Widget/FT/Btn/T(cb)/Rect[100 700 112 712]/AS/Off"
        "/AP<</N 40 0 R>>>>"
    }
    template = Template(raw_form(widget, {40: look}))
    out = template.fill({"cb": True})
    annot = PdfReader(io.BytesIO(out)).pages[0]["/Annots"][0].get_object()
    assert annot["/AS"] == "/Yes" and annot["/V"] == "/Yes"


def test_opt_labels_numbered_states_only() -> None:
    """A group without /Kids whose states are names keeps them; a state like "²" (a digit
    to str.isdigit, not to int) no longer makes the form unreadable."""
    look = stream(b"0 g 2 2 8 8 re f", "/Type/XObject/Subtype/Form/BBox[0 0 12 12]")
    kid = (
        "<</Type/Annot/Subtype/Widget/Parent 10 0 R/Rect[{x} 700 {w} 712]/AS/Off"
        "/AP<</N<<{state} 40 0 R/Off 40 0 R>>>>>>"
    )
    widgets = {
        10: "<</FT/Btn/T(grp)/Ff 49152/Opt[(Alpha)(Beta)]>>",
        11: kid.format(x=100, w=112, state="/a"),
        12: kid.format(x=130, w=142, state="/b"),
        13: kid.format(x=160, w=172, state="/#C2#B2"),
    }
    pdf = raw_form(widgets, {40: look})
    pdf = pdf.replace(b"/Annots[10 0 R 11 0 R 12 0 R 13 0 R]", b"/Annots[11 0 R 12 0 R 13 0 R]")
    (field,) = Template(pdf).fields
    assert field.options == ("a", "b", "²")
