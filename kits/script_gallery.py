"""Values in eight scripts on a form of one-line Helvetica boxes, and a reference shaping of
each (Pillow with raqm: FriBiDi and HarfBuzz) to set beside the engine's, for a person to see.

``python -m kits.script_gallery DIR`` writes one PNG per value into DIR: the engine's box as
PDFium renders it above the reference, same font, same size.
"""

from __future__ import annotations

import io
import sys
import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
from PIL import Image, ImageDraw, ImageFont

from fillpdf_provider.engine import fonts
from kits import viewcheck
from kits.formkit import Spec, build_form

#: One value per script, with the shipped font that draws its letters.
VALUES: dict[str, tuple[str, str]] = {
    "arabic": ("مرحبا بالعالم", "Noto Sans Arabic"),
    "hebrew": ("שלום עולם", "Noto Sans Hebrew"),
    "arabic_mixed": ("شارع الملك فهد 42 King Fahd Rd", "Noto Sans Arabic"),
    "devanagari": ("नमस्ते दुनिया क्षत्रिय", "Noto Sans Devanagari"),
    "thai": ("สวัสดีครับ ภาษาไทย", "Noto Sans Thai"),
    "chinese": ("你好世界 北京市", "WenQuanYi Micro Hei"),
    "japanese": ("こんにちは 東京都", "WenQuanYi Micro Hei"),
    "korean": ("안녕하세요 서울", "WenQuanYi Micro Hei"),
}
#: The other scripts the package ships a font for: the rest of the Indic scripts, Sinhala, Lao,
#: Myanmar and Khmer.
MORE_VALUES: dict[str, tuple[str, str]] = {
    "bengali": ("আমার সোনার বাংলা", "Noto Sans Bengali"),
    "gurmukhi": ("ਸਤਿ ਸ੍ਰੀ ਅਕਾਲ", "Noto Sans Gurmukhi"),
    "gujarati": ("નમસ્તે ગુજરાત", "Noto Sans Gujarati"),
    "oriya": ("ନମସ୍କାର ଓଡ଼ିଶା", "Noto Sans Oriya"),
    "tamil": ("வணக்கம் தமிழ்நாடு", "Noto Sans Tamil"),
    "telugu": ("నమస్కారం తెలుగు", "Noto Sans Telugu"),
    "kannada": ("ನಮಸ್ಕಾರ ಕನ್ನಡ", "Noto Sans Kannada"),
    "malayalam": ("നമസ്കാരം കേരളം", "Noto Sans Malayalam"),
    "sinhala": ("ආයුබෝවන් ශ්\u200dරී ලංකා", "Noto Sans Sinhala"),
    "lao": ("ສະບາຍດີ ລາວ", "Noto Sans Lao"),
    "myanmar": ("မင်္ဂလာပါ မြန်မာ", "Noto Sans Myanmar"),
    "khmer": ("សួស្តី កម្ពុជា", "Noto Sans Khmer"),
}
Gallery = dict[str, tuple[str, str]]
PAGE = (612.0, 792.0)
SIZE = 12.0  # every box's /DA size, so the reference is drawn at the same one


def box(
    index: int, height: float = 20.0, width: float = 340.0
) -> tuple[float, float, float, float]:
    """Field ``index``'s rectangle: one-line boxes, 40 pt apart."""
    top = 740 - 40 * index
    return (60.0, top - height, 60.0 + width, top)


def form(
    size: float = SIZE, height: float = 20.0, width: float = 340.0, gallery: Gallery = VALUES
) -> bytes:
    """The form: one one-line Helvetica box per value, no labels (``size`` 0: auto size)."""
    specs = [
        Spec(name, "text", box(index, height, width), da=f"/Helv {size:g} Tf 0 g")
        for index, name in enumerate(gallery)
    ]
    return build_form(specs, page_size=PAGE)


def values(gallery: Gallery = VALUES) -> dict[str, str]:
    return {name: text for name, (text, _) in gallery.items()}


def readable(text: str) -> Counter[str]:
    """The letters, marks and digits of ``text`` (what a reader must get back), counted."""
    return Counter(c for c in text if unicodedata.category(c)[0] in "LMN")


def right_to_left_letters(text: str) -> str:
    return "".join(c for c in text if unicodedata.bidirectional(c) in ("R", "AL"))


def chars_in_box(
    flat: bytes, name: str, height: float = 20.0, width: float = 340.0, gallery: Gallery = VALUES
) -> list[dict[str, Any]]:
    """pdfplumber's characters drawn in the box of field ``name`` on a page without fields."""
    return viewcheck.chars_in_rect(flat, 0, box(list(gallery).index(name), height, width))


def check_read_back(flat: bytes, gallery: Gallery = VALUES) -> None:
    """Every value's letters, marks and digits read back from its box (no ``(cid:N)``), and
    the right-to-left letters, read by position from the right, in the value's order."""
    check_read_back_in(flat, 20.0, 340.0, gallery)


def check_read_back_in(flat: bytes, height: float, width: float, gallery: Gallery = VALUES) -> None:
    """``check_read_back`` on a form made with ``form(height=, width=, gallery=)``."""
    for name, (value, _) in gallery.items():
        chars = chars_in_box(flat, name, height, width, gallery)
        text = "".join(str(c["text"]) for c in chars)
        assert "(cid:" not in text, (name, text)
        assert readable(text) == readable(value), (name, text)
        from_the_right = sorted(chars, key=lambda c: -float(c["x0"]))
        read = "".join(str(c["text"]) for c in from_the_right)
        assert right_to_left_letters(read) == right_to_left_letters(value), (name, read)


def font_path(name: str) -> Path:
    """The shipped font file behind ``name`` (as ``fonts.SCRIPT_FONTS`` names it)."""
    source = next(s for s, n in fonts.SCRIPT_FONTS if n == name)
    return fonts.script_font_path(source)


def reference(text: str, font: str, scale: float) -> Image.Image:
    """``text`` shaped and ordered by Pillow's raqm layout, black on white."""
    face = ImageFont.truetype(
        str(font_path(font)), round(SIZE * scale), layout_engine=ImageFont.Layout.RAQM
    )
    left, top, right, bottom = face.getbbox(text)
    image = Image.new("L", (right - left + 8, bottom - top + 8), 255)
    ImageDraw.Draw(image).text((4 - left, 4 - top), text, font=face, fill=0)
    return image


def rendered_box(pdf: bytes, index: int, scale: float) -> Image.Image:
    """Field ``index``'s box on page 1 as PDFium draws the flattened PDF."""
    document = pdfium.PdfDocument(pdf)
    try:
        page = document[0].render(scale=scale, grayscale=True).to_pil().convert("L")
    finally:
        document.close()
    x0, y0, x1, y1 = box(index)
    height = PAGE[1]
    return page.crop(
        (
            round(x0 * scale),
            round((height - y1) * scale),
            round(x1 * scale),
            round((height - y0) * scale),
        )
    )


def ink_width(image: Image.Image, *, inset: int = 0) -> int:
    """Columns of ``image`` (inside ``inset`` pixels of its edges) holding a dark pixel."""
    width, height = image.size
    pixels = image.load()
    assert pixels is not None
    columns = 0
    for x in range(inset, width - inset):
        if any(pixels[x, y] < 128 for y in range(inset, height - inset)):  # type: ignore[operator]
            columns += 1
    return columns


def side_by_side(
    pdf: bytes, out_dir: Path, scale: float = 4.0, gallery: Gallery = VALUES
) -> dict[str, tuple[int, int]]:
    """One PNG per value (the engine's box above the reference) in ``out_dir``, and each
    value's ink width in pixels: (engine, reference)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    widths = {}
    for index, (name, (text, font)) in enumerate(gallery.items()):
        ours = rendered_box(pdf, index, scale)
        theirs = reference(text, font, scale)
        sheet = Image.new(
            "L", (max(ours.width, theirs.width), ours.height + theirs.height + 12), 255
        )
        sheet.paste(ours, (0, 0))
        sheet.paste(
            theirs,
            (
                ours.width - theirs.width if name in ("arabic", "hebrew", "arabic_mixed") else 0,
                ours.height + 12,
            ),
        )
        buffer = io.BytesIO()
        sheet.save(buffer, format="PNG", optimize=True)
        (out_dir / f"{name}.png").write_bytes(buffer.getvalue())
        widths[name] = (ink_width(ours, inset=round(2 * scale)), ink_width(theirs))
    return widths


def main(argv: list[str]) -> int:
    from fillpdf_provider.engine import Template

    out_dir = Path(argv[0] if argv else "docs/scripts")
    for gallery in (VALUES, MORE_VALUES):
        pdf = Template(form(gallery=gallery)).fill(values(gallery), flatten=True)
        for name, (ours, theirs) in side_by_side(pdf, out_dir, gallery=gallery).items():
            print(f"{name}: {ours} px of ink, reference {theirs} px")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
