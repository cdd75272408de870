"""Forms from other PDF libraries' test suites that a filler gets wrong in ways a person sees.

Each test names the form in ``../shared/corpus/wild/forms`` (see its README) and checks the
output the way a viewer that trusts appearance streams shows it: PDFium draws only the
streams in the file, and the test reads the ink and the characters inside the widget.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from fillpdf_provider.engine import FieldValueError, Fit, Template
from kits import viewcheck

WILD = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "wild" / "forms"


def wild(name: str) -> Path:
    path = WILD / f"{name}.pdf"
    if not path.exists():
        pytest.skip(f"{path} is absent: the wild forms live in ../shared/corpus/wild/forms")
    return path


def widgets_of(pdf: bytes, field: str) -> list:
    """The widget dictionaries of ``field`` in page order (``/T`` on the widget or parent)."""
    found = []
    for page in PdfReader(io.BytesIO(pdf)).pages:
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            parent = annot.get("/Parent")
            title = annot.get("/T") or (parent.get_object().get("/T") if parent else None)
            if title == field:
                found.append(annot)
    return found


def field_value(widget) -> object:
    parent = widget.get("/Parent")
    return widget.get("/V") if "/V" in widget else parent.get_object().get("/V")


def ink_gained(template: Template, field: str, on: object) -> list[int]:
    """Dark pixels each widget of ``field`` gains when set to ``on``, against the same output
    with every button switched off, as PDFium shows it with only the file's own appearance
    streams."""
    filled = template.fill({field: on})
    widgets = [w for w in viewcheck.visible_widgets(filled) if w.name == field]
    flat_on = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    flat_off = viewcheck.flatten_with_pdfium(viewcheck.buttons_off(filled), drop_page_content=True)
    with viewcheck.Raster(flat_on) as r_on, viewcheck.Raster(flat_off) as r_off:
        return [r_on.ink(w.page, w.rect) - r_off.ink(w.page, w.rect) for w in widgets]


def test_an_empty_on_state_name_is_set_and_drawn() -> None:
    """OpenOffice names a radio button's on-state ``/``: "Yes" is offered and must set it.
    PDFium's flattener takes the empty name for no state, so the state is written as Yes."""
    template = Template.open(wild("pypdf__FormTestFromOo"))
    offered = {f.name: f.options for f in template.fields}
    assert offered["RdoS1"] == ("Yes",)
    (widget,) = widgets_of(template.fill({"RdoS1": "Yes"}), "RdoS1")
    assert widget["/AS"] == "/Yes" and field_value(widget) == "/Yes"
    assert set(widget["/AP"]["/N"]) == {"/Yes", "/Off"}
    (gained,) = ink_gained(template, "RdoS1", "Yes")
    assert gained > 20


def test_opt_export_values_of_a_group_without_kids() -> None:
    """``veg`` has /Opt but no /Kids: its widgets only name it as /Parent."""
    template = Template.open(wild("pdf.js__opt_demo"))
    offered = {f.name: f.options for f in template.fields}
    assert offered["veg"] == ("Carrot", "Potato")
    first, second = widgets_of(template.fill({"veg": "Carrot"}), "veg")
    assert (first["/AS"], second["/AS"]) == ("/0", "/Off")
    assert field_value(first) == "/0"
    gained = ink_gained(template, "veg", "Potato")
    assert gained[0] <= 0 < gained[1]


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ("pypdf__pdflatex-forms", "Check"),  # /AP /N /Yes is an empty dictionary
        ("pdfium__bug_861842", "foo"),  # the on-appearance stream has no /BBox
    ],
)
def test_a_checkbox_whose_on_appearance_cannot_be_drawn_gets_one(form: str, field: str) -> None:
    template = Template.open(wild(form))
    (kind,) = [f.type for f in template.fields if f.name == field]
    on = (
        True
        if kind == "checkbox"
        else next(f.options[0] for f in template.fields if f.name == field)
    )
    gained = ink_gained(template, field, on)
    assert gained and all(g > 20 for g in gained)


def test_a_widgets_own_da_sets_its_size() -> None:
    """Of two widgets of one field, the second says ``/Helv 10 Tf`` and its parent 12."""
    template = Template.open(wild("pdfbox__DifferentDALevels"))
    pdf = template.fill({"MultipleAnnotations-DifferentLayout": "Lot 42"})
    first, second = widgets_of(pdf, "MultipleAnnotations-DifferentLayout")
    streams = [w["/AP"]["/N"].get_object().get_data() for w in (first, second)]
    assert b" 12.00 Tf" in streams[0]
    assert b" 10.00 Tf" in streams[1]


@pytest.mark.parametrize(
    "value", ["ok \N{GRINNING FACE}", "\N{RUNIC LETTER FEHU FEOH FE F}", "\N{GEORGIAN LETTER AN}"]
)
def test_a_character_the_forms_cjk_font_lacks_is_refused(value: str) -> None:
    """The form's Chinese font maps Unicode through Adobe-GB1, which has no emoji, runes
    or Georgian, nor does any font shipped: a viewer would draw nothing, so the value is
    refused, by name."""
    template = Template.open(wild("pdfcpu__chineseSimple"))
    with pytest.raises(FieldValueError, match=r"firstName1.*U\+"):
        template.check({"firstName1": value})
    with pytest.raises(FieldValueError, match="transliterate"):
        template.fill({"firstName1": value})
    assert template.fill({"firstName1": "漢字 Жанна"})  # what the font has still fills


def test_a_field_turned_by_its_appearance_matrix_alone_stays_turned() -> None:
    """qpdf's copied annotations turn some fields only through their appearance /Matrix
    (no /MK /R), on pages turned 0-270 degrees: a redrawn value must turn with them, or it
    is drawn across the box and shrunk until only part of it shows."""
    template = Template.open(wild("qpdf__overlay-copy-annotations"))
    value = "Müller-Lüdenscheid Ærø"
    values = {f.name: value for f in template.fields if f.type == "text"}
    filled = template.fill(values)
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    widgets = [w for w in viewcheck.visible_widgets(filled) if w.name in values]
    unseen = [
        (w.name, w.page)
        for w in widgets
        if viewcheck.text_in_rect(shown, w.page, w.rect) != viewcheck.squash(value)
    ]
    assert len(widgets) == 32 and not unseen


@pytest.mark.parametrize(
    "field", ["301 Time employee began work", "301 Time of event", "301 Death Date"]
)
def test_auto_size_leaves_room_for_accents_on_capitals(field: str) -> None:
    """Auto-sized (``0 Tf``) boxes 13 to 15 pt tall: 12 pt text centred on Helvetica's ascent
    puts the ring of an Å (0.931 em high in the font's metrics) above the box, where the
    clip cuts it off. The size must leave it inside the 1 pt inset."""
    template = Template.open(wild("PyPDFForm__613_expected"))
    (widget,) = widgets_of(template.fill({field: "ÅÜÉ Müller"}), field)
    stream = widget["/AP"]["/N"].get_object()
    height = float(stream["/BBox"][3]) - float(stream["/BBox"][1])
    found = re.search(rb"([\d.]+) Tf.*?([-\d.]+) ([-\d.]+) Td", stream.get_data(), re.S)
    assert found is not None
    size, baseline = float(found.group(1)), float(found.group(3))
    assert baseline + size * 0.931 <= height - 1 + 0.01
    assert baseline - size * 0.207 >= 1 - 0.01  # descenders stay in too
    assert size >= 9


def test_the_last_line_of_a_multiline_field_keeps_its_descenders_in_the_box() -> None:
    """pdfbox's 24 multiline fields (fixed and auto sizes), with texts of many lengths: the
    lines are counted with the last one's descenders, which used to fall below the box
    where the text needs the fallback font (its descent is deeper than Helvetica's)."""
    template = Template.open(wild("pdfbox__MultilineFields"))
    names = [f.name for f in template.fields if f.multiline]
    assert len(names) == 24
    below = []
    for words in range(3, 40, 6):
        text = " ".join(["Jumpy gypsy", "Дементьева уху"][words % 2 :] * words)
        filled = template.fill({name: text for name in names}, fit=Fit("truncate"))
        for name in names:
            for widget in widgets_of(filled, name):
                stream = widget["/AP"]["/N"].get_object()
                data = stream.get_data()
                size = float(re.search(rb"([\d.]+) Tf", data).group(1))
                last_baseline = sum(float(y) for y in re.findall(rb"[-\d.]+ ([-\d.]+) Td", data))
                # 0.3 em: Noto Sans' descent (Helvetica's is 0.207)
                if last_baseline - size * 0.3 < float(stream["/BBox"][1]):
                    below.append((name, words, size))
    assert not below


def test_a_template_read_only_after_mending_says_so(tmp_path: Path) -> None:
    """A startxref that points nowhere: the form is read the way forgiving readers read it
    (the cross-reference data rebuilt from the objects), the outputs build on the mended
    copy and open cleanly, and the CLI says what it did."""
    from kits.cli_support import ROOT, run

    data = (ROOT / "include" / "sample_form.pdf").read_bytes()
    damaged = data[: data.rindex(b"startxref")] + b"startxref\n999\n%%EOF\n"
    template = Template(damaged)
    assert "cross-reference" in template.repaired and "rebuilt" in template.repaired
    filled = template.fill({"full_name": "Ada"})
    assert Template(filled).repaired == ""
    assert PdfReader(io.BytesIO(filled)).get_fields()["full_name"]["/V"] == "Ada"
    form = tmp_path / "damaged.pdf"
    form.write_bytes(damaged)
    done = run("inspect", form)
    assert done.returncode == 0 and "full_name" in done.stdout
    assert f"note: {form}: its cross-reference data was damaged" in done.stderr
    values = tmp_path / "values.json"
    values.write_text('{"full_name": "Ada"}')
    done = run("fill", form, "--values", values, "-o", tmp_path / "out.pdf")
    assert done.returncode == 0 and "rebuilt" in done.stderr
    assert run("inspect", tmp_path / "out.pdf").stderr == ""


def test_one_template_flattens_from_several_threads() -> None:
    """The service fills one template from several threads; flattening reads the pages
    through pypdf, whose reader mistook the interleaved reads for objects that loop."""
    import hashlib
    import sys
    import threading

    template = Template.open(wild("qpdf__overlay-copy-annotations"))
    values = {f.name: "x" for f in template.fields if f.type == "text"}
    results: list[str] = []

    def flatten() -> None:
        try:
            results.append(hashlib.sha256(template.fill(values, flatten=True)).hexdigest())
        except Exception as exc:  # the test reports whatever a thread raised
            results.append(repr(exc))

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=flatten) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert len(results) == 4 and len(set(results)) == 1, results
