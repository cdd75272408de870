"""Fonts a value is drawn with: the fallback at the field's size, and fonts users add.

Noto Sans (bundled) draws Latin, Greek and Cyrillic; values in scripts that are shaped or
reordered come from the shipped script fonts (``test_fill_scripts``). Other scripts are drawn
with the TrueType fonts a user lists in ``FILLPDF_FONTS``, embedded like Noto Sans, so a
viewer without a font of its own still shows them. The CJK tests use Debian's
fonts-wqy-zenhei (``.ci/run`` installs it): a TrueType collection with Latin, Cyrillic and
CJK in one font.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pytest
from pypdf import PdfReader

from fillpdf_provider.engine import FieldValueError, Template
from fillpdf_provider.engine.fonts import FONTS_ENV
from kits import viewcheck
from tests.engine.test_fill_wild import widgets_of, wild

ZENHEI = Path("/usr/share/fonts/truetype/wqy")


@pytest.fixture
def cjk_font(monkeypatch: pytest.MonkeyPatch) -> Path:
    if not (ZENHEI / "wqy-zenhei.ttc").exists():
        if os.environ.get("FILLPDF_REQUIRE_SYSTEM"):
            pytest.fail(f"{ZENHEI} is missing: .ci/run installs fonts-wqy-zenhei")
        pytest.skip("no CJK TrueType font: apt-get install fonts-wqy-zenhei to run this")
    monkeypatch.setenv(FONTS_ENV, str(ZENHEI))
    return ZENHEI


def shown_text(pdf: bytes, values: dict[str, str]) -> dict[str, str]:
    flat = viewcheck.flatten_with_pdfium(pdf, drop_page_content=True)
    return {
        w.name: viewcheck.text_in_rect(flat, w.page, w.rect)
        for w in viewcheck.visible_widgets(pdf)
        if w.name in values
    }


def embedded_fonts(pdf: bytes) -> set[str]:
    """BaseFont names of the embedded fonts the filled widgets' appearances use."""
    names = set()
    for page in PdfReader(io.BytesIO(pdf)).pages:
        for annot in page.get("/Annots") or []:
            ap = annot.get_object().get("/AP")
            normal = ap.get_object().get("/N") if ap else None
            resources = normal.get_object().get("/Resources") if normal is not None else None
            for font in ((resources or {}).get("/Font") or {}).values():
                font = font.get_object()
                for descendant in font.get("/DescendantFonts") or []:
                    descriptor = descendant.get_object()["/FontDescriptor"].get_object()
                    if "/FontFile2" in descriptor:
                        names.add(str(font["/BaseFont"]))
    return names


def test_the_fallback_font_keeps_the_fields_size() -> None:
    """A 10 pt field 13 pt tall: Noto Sans' line (1.36 em) shrank Cyrillic to 8.08 pt; the
    glyphs' own height (0.73 em for these) fits at 10."""
    template = Template.open(wild("PyMuPDF__test_4114"))
    pdf = template.fill({"p1-t3": "Жанна Дементьева"})
    widgets = widgets_of(pdf, "p1-t3")
    for widget in widgets:
        stream = widget["/AP"]["/N"].get_object().get_data()
        assert re.search(rb"/NotoSans 10(\.00)? Tf", stream)
    assert shown_text(pdf, {"p1-t3": ""})["p1-t3"] == "ЖаннаДементьева"


def test_an_added_font_draws_cjk_values_embedded(cjk_font: Path) -> None:
    """The form's own Chinese font (UnifontMedium, not embedded) shows nothing in a viewer
    without it; the added font is embedded and shows in every viewer."""
    template = Template.open(wild("pdfcpu__chineseSimple"))
    values = {"city12": "广州", "firstName1": "漢字 Lot 42", "lastName1": "Жанна"}
    pdf = template.fill(values)
    shown = {"city12": "广州", "firstName1": "漢字Lot42", "lastName1": "Жанна"}
    assert shown_text(pdf, values) == shown
    assert any(name.endswith("+WenQuanYiZenHei") for name in embedded_fonts(pdf))
    assert template.fill(values) == pdf  # deterministic


def test_a_character_no_font_has_names_the_setting(cjk_font: Path) -> None:
    template = Template.open(wild("pdfcpu__chineseSimple"))
    with pytest.raises(FieldValueError, match=r"U\+1F600.*FILLPDF_FONTS"):
        template.fill({"firstName1": "漢字 \N{GRINNING FACE}"})


def test_a_font_that_cannot_be_used_is_named_in_the_message(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken.ttf").write_bytes(b"not a font at all")
    (tmp_path / "cff.otf").write_bytes(b"OTTO" + bytes(40))
    monkeypatch.setenv(FONTS_ENV, str(tmp_path))
    template = Template(Path(__file__).parents[2] / "include" / "sample_form.pdf")
    with pytest.raises(FieldValueError) as raised:
        template.fill({"full_name": "გამარჯობა"})  # Georgian: no font here has it
    message = str(raised.value)
    assert "'full_name'" in message and "U+10D2" in message
    assert "broken.ttf: is not a TrueType font" in message
    assert "cff.otf: has PostScript (CFF) outlines" in message
    assert str(tmp_path) not in message  # file names, never where the server keeps them


def test_a_font_file_that_is_not_a_regular_file_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pipe named like a font would block the fill forever; a link to /dev/zero would
    read until memory runs out."""
    os.mkfifo(tmp_path / "pipe.ttf")
    (tmp_path / "zero.ttf").symlink_to("/dev/zero")
    monkeypatch.setenv(FONTS_ENV, str(tmp_path))
    template = Template(Path(__file__).parents[2] / "include" / "sample_form.pdf")
    with pytest.raises(FieldValueError, match=r"pipe\.ttf: not a regular file"):
        template.fill({"full_name": "გამარჯობა"})
    assert template.fill({"full_name": "Жизнь"})  # Noto Sans still draws what it has


@pytest.mark.parametrize("value", ["שלום", "مرحبا", "Lot 42 שלום"])
def test_right_to_left_text_is_laid_out_with_the_shipped_fonts_before_added_ones(
    cjk_font: Path, value: str
) -> None:
    """The added font has Hebrew and Arabic letters too; the shipped Noto fonts, which the
    engine shapes and orders with, come first."""
    template = Template(Path(__file__).parents[2] / "include" / "sample_form.pdf")
    pdf = template.fill({"full_name": value})
    names = embedded_fonts(pdf)
    assert any(n.endswith(("+NotoSansHebrew-Regular", "+NotoSansArabic-Regular")) for n in names)
    assert not any(name.endswith("+WenQuanYiZenHei") for name in names)
