"""Values in every script: Arabic and Hebrew right to left, Devanagari and Thai shaped, Chinese,
Japanese and Korean from an embedded subset, on a form whose boxes name only Helvetica.

Each value is filled by ``fillpdf fill``, ``fill --flatten`` and ``batch``; the filled page
(flattened by the engine, or by PDFium from the appearance streams) is read back with
pdfplumber and rendered with PDFium. The reference for what a person should see is Pillow's
raqm layout (FriBiDi and HarfBuzz) of the same string in the same font.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter
from pypdf.generic import NameObject, NumberObject

from fillpdf_provider.engine import FieldValueError, Fit, Template, TextOverflowError
from fillpdf_provider.engine.appearance import wrap
from fillpdf_provider.engine.shaped_font import ShapedFont, ShapedGlyphs
from kits import script_gallery, viewcheck
from kits.cli_support import run
from kits.formkit import Spec, build_form

VALUES = script_gallery.values()
readable = script_gallery.readable
right_to_left_letters = script_gallery.right_to_left_letters
RIGHT_TO_LEFT = {"arabic", "hebrew", "arabic_mixed"}


@pytest.fixture(scope="module")
def form_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("scripts") / "form.pdf"
    path.write_bytes(script_gallery.form())
    return path


def by_fill(form: Path, out: Path, *flags: str) -> bytes:
    values = out.parent / "values.json"
    values.write_text(json.dumps(VALUES, ensure_ascii=False), encoding="utf-8")
    done = run("fill", form, "--values", values, "-o", out, *flags)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


def by_batch(form: Path, out: Path) -> bytes:
    rows = out.parent / "rows.csv"
    with rows.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(VALUES))
        writer.writeheader()
        writer.writerow(VALUES)
    done = run("batch", form, rows, "--out-dir", out.parent / "batch")
    assert done.returncode == 0, done.stderr
    [pdf] = sorted((out.parent / "batch").glob("*.pdf"))
    return pdf.read_bytes()


PATHS: dict[str, Callable[[Path, Path], bytes]] = {
    "fill": lambda form, out: by_fill(form, out),
    "fill --flatten": lambda form, out: by_fill(form, out, "--flatten"),
    "batch": by_batch,
}


@pytest.fixture(scope="module", params=list(PATHS))
def flat_page(
    request: pytest.FixtureRequest, form_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> bytes:
    """The filled form by one path, as a page with no fields: the engine's flattening for
    ``--flatten``, PDFium's drawing of the appearance streams otherwise."""
    out = tmp_path_factory.mktemp("filled") / "out.pdf"
    pdf = PATHS[request.param](form_path, out)
    if request.param == "fill --flatten":
        assert not PdfReader(out).pages[0].get("/Annots")
        return pdf
    return viewcheck.flatten_with_pdfium(pdf)


@pytest.mark.parametrize("name", list(VALUES))
def test_each_value_reads_back_whole_from_its_box(flat_page: bytes, name: str) -> None:
    index = list(VALUES).index(name)
    chars = viewcheck.chars_in_rect(flat_page, 0, script_gallery.box(index))
    text = "".join(str(c["text"]) for c in chars)
    assert "(cid:" not in text
    assert readable(text) == readable(VALUES[name]), text


@pytest.mark.parametrize("name", sorted(RIGHT_TO_LEFT))
def test_right_to_left_letters_read_from_the_right_in_the_values_order(
    flat_page: bytes, name: str
) -> None:
    index = list(VALUES).index(name)
    chars = viewcheck.chars_in_rect(flat_page, 0, script_gallery.box(index))
    from_the_right = sorted(chars, key=lambda c: -float(c["x0"]))
    read = "".join(str(c["text"]) for c in from_the_right)
    assert right_to_left_letters(read) == right_to_left_letters(VALUES[name])


def test_the_ink_of_each_value_stays_inside_its_box(flat_page: bytes) -> None:
    with viewcheck.Raster(flat_page, scale=3) as raster:
        for index, name in enumerate(VALUES):
            rect = script_gallery.box(index)
            inside = raster.ink(0, rect, pad=-1.0)  # within the printed border
            around = raster.ink(0, rect, pad=8.0) - raster.ink(0, rect, pad=1.0)
            assert inside > 40, name
            assert around == 0, name


@pytest.mark.parametrize(("height", "width"), [(11.0, 340.0), (30.0, 110.0)])
def test_auto_size_fits_each_value_to_a_short_or_narrow_box(height: float, width: float) -> None:
    """``/Helv 0 Tf``: each value is sized to its box, by the ink its glyphs really have
    (Thai marks above, Arabic letters below the line) and by its shaped width."""
    template = Template(script_gallery.form(size=0, height=height, width=width))
    pdf = template.fill(VALUES, flatten=True)
    script_gallery.check_read_back_in(pdf, height, width)
    with viewcheck.Raster(pdf, scale=3) as raster:
        for index, name in enumerate(VALUES):
            rect = script_gallery.box(index, height, width)
            around = raster.ink(0, rect, pad=8.0) - raster.ink(0, rect, pad=1.0)
            assert raster.ink(0, rect, pad=-1.0) > 20, name
            assert around == 0, name


def test_right_to_left_values_sit_at_the_right_of_a_box_without_alignment(
    flat_page: bytes,
) -> None:
    """No ``/Q``: a right-to-left value starts at the right, the others at the left."""
    for index, name in enumerate(VALUES):
        x0, _, x1, _ = script_gallery.box(index)
        chars = viewcheck.chars_in_rect(flat_page, 0, script_gallery.box(index))
        left = min(float(c["x0"]) for c in chars)
        right = max(float(c["x1"]) for c in chars)
        if name in RIGHT_TO_LEFT:
            assert x1 - right < 6 < left - x0, name
        else:
            assert left - x0 < 6 < x1 - right, name


def test_the_shaping_matches_the_reference(form_path: Path, tmp_path: Path) -> None:
    """The engine's ink spans what Pillow's raqm layout spans for the same string, font and
    size (unjoined Arabic or unshaped Devanagari would be wider or narrower), and each
    picture pair is written for a person to compare (``docs/scripts`` holds them)."""
    pdf = Template(form_path).fill(VALUES, flatten=True)
    widths = script_gallery.side_by_side(pdf, tmp_path)
    for name, (ours, reference) in widths.items():
        assert abs(ours - reference) <= max(6, reference * 0.03), (name, ours, reference)
        assert (tmp_path / f"{name}.png").stat().st_size > 0


def test_the_same_values_give_the_same_bytes(form_path: Path) -> None:
    template = Template(form_path)
    first = template.fill(VALUES)
    assert Template(form_path).fill(VALUES) == first
    assert template.fill(VALUES, flatten=True) == Template(form_path).fill(VALUES, flatten=True)


def test_copied_text_is_each_line_in_logical_order() -> None:
    """What a copy or a screen reader takes (``/ActualText``) is the value as typed, not the
    glyphs' visual order."""
    template = Template(script_gallery.form())
    pdf = template.fill(VALUES)
    for name, value in VALUES.items():
        stream = _appearance(pdf, name)
        assert b"/ActualText<FEFF" + value.encode("utf-16-be").hex().encode() in stream, name


def _appearance(pdf: bytes, name: str) -> bytes:
    for annot in PdfReader(io.BytesIO(pdf)).pages[0]["/Annots"]:
        annot = annot.get_object()
        if annot.get("/T") == name:
            return bytes(annot["/AP"]["/N"].get_object().get_data())
    raise AssertionError(name)


def _form(spec: Spec) -> Template:
    return Template(build_form([spec]))


def _aligned(quadding: int) -> Template:
    """A one-box form whose field states ``/Q quadding``, 0 included."""
    writer = PdfWriter(io.BytesIO(build_form([Spec("f", "text", (60, 700, 400, 720))])))
    for annot in writer.pages[0]["/Annots"]:
        annot.get_object()[NameObject("/Q")] = NumberObject(quadding)
    out = io.BytesIO()
    writer.write(out)
    return Template(out.getvalue())


@pytest.mark.parametrize(("quadding", "low", "high"), [(0, 60, 66), (1, 150, 250)])
def test_a_form_that_states_an_alignment_keeps_it(quadding: int, low: float, high: float) -> None:
    pdf = _aligned(quadding).fill({"f": "שלום עולם"}, flatten=True)
    chars = viewcheck.chars_in_rect(pdf, 0, (60, 700, 400, 720))
    assert low <= min(float(c["x0"]) for c in chars) <= high


@pytest.mark.parametrize(
    "value", ["مرحبا بالعالم وأهلا وسهلا بكم في المدينة", "सभी मनुष्यों को गौरव और अधिकारों के मामले में"]
)
def test_multiline_wraps_shaped_text_at_spaces(value: str) -> None:
    template = _form(Spec("f", "text", (60, 600, 200, 720), multiline=True))
    pdf = template.fill({"f": value}, flatten=True)
    chars = viewcheck.chars_in_rect(pdf, 0, (60, 600, 200, 720))
    lines = {round(float(c["top"])) for c in chars}
    assert len(lines) >= 2
    assert readable("".join(str(c["text"]) for c in chars)) == readable(value)
    assert all(float(c["x0"]) >= 60 and float(c["x1"]) <= 200.5 for c in chars)


def test_comb_cells_hold_a_letter_with_its_marks_from_the_right() -> None:
    template = _form(Spec("f", "text", (60, 700, 340, 720), comb=7))
    pdf = template.fill({"f": "שָׁלוֹם"}, flatten=True)  # four letters, pointed
    chars = viewcheck.chars_in_rect(pdf, 0, (60, 700, 340, 720))
    letters = sorted(
        (c for c in chars if unicodedata.category(str(c["text"])[0]) == "Lo"),
        key=lambda c: -float(c["x0"]),
    )
    assert "".join(str(c["text"]) for c in letters) == "שלום"
    assert min(float(c["x0"]) for c in letters) > 60 + 3 * 40  # three cells at the left stay empty


@pytest.mark.parametrize("policy", ["shrink", "truncate"])
def test_overflow_policies_cut_shaped_text_inside_the_box(policy: str) -> None:
    template = _form(Spec("f", "text", (60, 700, 120, 716)))
    value = "مرحبا بالعالم " * 6
    with pytest.raises(FieldValueError):
        template.fill({"f": value})
    filled = template.fill_result({"f": value}, flatten=True, fit=Fit(policy))
    assert filled.cut == ("f",)
    chars = viewcheck.chars_in_rect(filled.pdf, 0, (60, 700, 120, 716))
    assert chars and all(float(c["x0"]) >= 58 and float(c["x1"]) <= 122 for c in chars)


def test_a_character_no_font_draws_is_still_refused() -> None:
    template = _form(Spec("f", "text", (60, 700, 400, 720)))
    with pytest.raises(FieldValueError, match=r"U\+1F642"):
        template.fill({"f": "שלום 🙂"})
    with pytest.raises(FieldValueError, match=r"U\+10D2"):
        template.check({"f": "გამარჯობა"})  # Georgian: no font ships for it


def _read_left_to_right(pdf: bytes, rect: tuple[float, float, float, float]) -> str:
    chars = viewcheck.chars_in_rect(pdf, 0, rect)
    return "".join(str(c["text"]) for c in sorted(chars, key=lambda c: float(c["x0"])))


def test_an_isolated_hebrew_name_keeps_a_latin_sentence_left_to_right() -> None:
    """``RLI name PDI`` (as a template inserts a name) sets no direction for the value: the
    Latin sentence around it reads left to right, from the left, and the name inside reads
    right to left, its two words in their order."""
    template = _form(Spec("f", "text", (60, 700, 400, 720)))
    pdf = template.fill({"f": "Dear \u2067שלום עולם\u2069, welcome"}, flatten=True)
    read = _read_left_to_right(pdf, (60, 700, 400, 720))
    assert read.startswith("Dear") and read.endswith("welcome")
    assert right_to_left_letters(read) == right_to_left_letters("שלום עולם")[::-1]
    chars = viewcheck.chars_in_rect(pdf, 0, (60, 700, 400, 720))
    assert min(float(c["x0"]) for c in chars) < 70  # aligned left: the paragraph is Latin


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("\u202eabc\u202c", "cba"),  # a right-to-left override
        ("x \u202bשלום עולם\u202c y", "x םלוע םולש y"),  # an embedding
        ("\u200fabc 123", "abc 123"),  # a right-to-left mark: the paragraph's direction
    ],
)
def test_explicit_direction_controls_are_obeyed(value: str, shown: str) -> None:
    template = _form(Spec("f", "text", (60, 700, 400, 720)))
    pdf = template.fill({"f": value}, flatten=True)
    read = _read_left_to_right(pdf, (60, 700, 400, 720))
    assert "".join(c for c in read if c.isalnum()) == "".join(c for c in shown if c.isalnum())


def test_each_paragraph_of_a_multiline_value_has_its_own_direction() -> None:
    """Rule P1: each line of the value is a paragraph. A Hebrew one goes right and reads
    from the right, digits and Latin inside it in their order; a Latin one goes left."""
    rect = (60, 500, 400, 720)
    template = _form(Spec("f", "text", rect, multiline=True))
    pdf = template.fill({"f": "Hello world\nשלום עולם 2024\nמספר 12 abc"}, flatten=True)
    lines: dict[int, list[dict]] = {}
    for char in viewcheck.chars_in_rect(pdf, 0, rect):
        lines.setdefault(round(float(char["top"])), []).append(char)
    first, second, third = (lines[top] for top in sorted(lines))
    assert min(float(c["x0"]) for c in first) < 70  # Latin: at the left
    for hebrew in (second, third):
        assert max(float(c["x1"]) for c in hebrew) > 390  # at the right
    read = "".join(str(c["text"]) for c in sorted(third, key=lambda c: float(c["x0"])))
    assert read.replace(" ", "") == "abc12רפסמ"


@pytest.mark.parametrize("value", ["a" + "\u0301" * 20, "ก" + "\u0e48" * 40])
def test_marks_stacked_past_any_line_are_refused_whatever_the_policy(value: str) -> None:
    """No size shows twenty stacked accents in a line's room and keeps them readable: the
    value is refused by name, rather than drawn at 1 pt with its top clipped."""
    template = _form(Spec("f", "text", (60, 700, 300, 720)))
    for policy in ("error", "shrink", "truncate"):
        with pytest.raises(TextOverflowError, match=r"'f'.*marks stack"):
            template.fill({"f": value}, fit=Fit(policy))


def test_a_long_run_of_marks_wraps_in_long_lines() -> None:
    """A letter under hundreds of points breaks once a line is full, not after every
    mark (which made wrapping quadratic)."""
    glyphs = ShapedGlyphs(lambda count: 1000)
    value = "ש" + "\u05b0" * 600
    lines = wrap(value, ShapedFont(glyphs, value), 10, 200)
    assert "".join(lines) == value
    assert len(lines) < 10


@pytest.mark.parametrize(
    "value",
    [
        "\u202eabc\u202c",  # an override
        "\u202b" * 200 + "שלום",  # embeddings past the algorithm's depth
        "\u2068abc שלום\u2069 x\u2069\u2069",  # unmatched isolates
        "\u0301\u0301שלום",  # marks with no letter
        "א" + "\u05b0" * 40,  # a letter under forty points
        "x\u0e31\u0e31\u0e31 สวัสดี",  # Thai marks stacked
        "\u0915\u094d\u200d\u0937",  # a half form by joiner
        "שלום\u2029עולם",  # a paragraph separator inside a line
        "\ufeffמספר (12) [א]",  # a byte order mark, mirrored brackets
    ],
)
def test_controls_and_stray_marks_fill_or_are_refused_by_name(value: str) -> None:
    template = _form(Spec("f", "text", (60, 300, 400, 720), multiline=True))
    for flatten in (False, True):
        try:
            pdf = template.fill({"f": value}, flatten=flatten)
        except FieldValueError as refused:
            assert refused.param == "f"
        else:
            assert pdf == template.fill({"f": value}, flatten=flatten)


def test_decomposed_marks_draw_as_their_composed_letters() -> None:
    """``e`` + U+0301 is shaped to the font's ``é`` (a mark alone would sit where its own
    outline puts it, clear of a capital): the same ink as the composed value's."""
    composed, decomposed = "Tiếng Việt Ế", "Tiê\u0301ng Viê\u0323t Ê\u0301"
    specs = [Spec(name, "text", script_gallery.box(i)) for i, name in enumerate("ab")]
    pdf = Template(build_form(specs)).fill({"a": composed, "b": decomposed}, flatten=True)
    with viewcheck.Raster(pdf, scale=3) as raster:
        inks = [raster.ink(0, script_gallery.box(i), pad=-1.0) for i in range(2)]
    assert abs(inks[0] - inks[1]) <= inks[0] * 0.02, inks
    read = "".join(str(c["text"]) for c in viewcheck.chars_in_rect(pdf, 0, script_gallery.box(1)))
    assert unicodedata.normalize("NFC", read).replace(" ", "") == composed.replace(" ", "")


def test_choices_in_right_to_left_scripts_show_their_option_from_the_right() -> None:
    specs = [
        Spec("combo", "combo", (60, 700, 300, 720), options=["القاهرة", "دبي", "Paris"]),
        Spec("list", "listbox", (60, 600, 300, 680), options=["תל אביב", "ירושלים", "חיפה"]),
    ]
    pdf = Template(build_form(specs)).fill({"combo": "دبي", "list": "ירושלים"}, flatten=True)
    combo = viewcheck.chars_in_rect(pdf, 0, (60, 700, 300, 720))
    assert (
        right_to_left_letters(
            "".join(str(c["text"]) for c in sorted(combo, key=lambda c: -float(c["x0"])))
        )
        == "دبي"
    )
    assert min(float(c["x0"]) for c in combo) > 200  # from the right
    options = viewcheck.chars_in_rect(pdf, 0, (60, 600, 300, 680))
    assert readable("".join(str(c["text"]) for c in options)) == readable("תל אביבירושליםחיפה")
    assert max(float(c["x1"]) for c in options) > 290


def test_the_other_shipped_scripts_fill_read_back_and_match_the_reference(tmp_path: Path) -> None:
    """Bengali, Gurmukhi, Gujarati, Oriya, Tamil, Telugu, Kannada, Malayalam, Sinhala, Lao,
    Myanmar and Khmer: each shaped as the reference shapes it, inside its box, read back."""
    more = script_gallery.MORE_VALUES
    template = Template(script_gallery.form(gallery=more))
    pdf = template.fill(script_gallery.values(more), flatten=True)
    script_gallery.check_read_back(pdf, more)
    with viewcheck.Raster(pdf, scale=3) as raster:
        for index, name in enumerate(more):
            rect = script_gallery.box(index)
            assert raster.ink(0, rect, pad=-1.0) > 40, name
            assert raster.ink(0, rect, pad=8.0) - raster.ink(0, rect, pad=1.0) == 0, name
    widths = script_gallery.side_by_side(pdf, tmp_path, gallery=more)
    for name, (ours, reference) in widths.items():
        assert abs(ours - reference) <= max(6, reference * 0.03), (name, ours, reference)
