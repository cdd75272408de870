"""Fonts for appearance streams: the form's own font where it is safe, else one we bring.

Three kinds of font draw a value:

* the form's ``/DA`` font, when it is a simple font whose encoding and widths we know and
  that holds every character of the value (an embedded subset may not: it is never used);
* standard Helvetica with WinAnsiEncoding, for any value that WinAnsi can encode;
* Noto Sans, embedded as a CID font with a ToUnicode map, for everything else. It covers
  Latin (with Vietnamese and the Latin Extended blocks), Greek and Cyrillic;
* then the TrueType fonts a user adds (``FILLPDF_FONTS``: folders or files, separated by
  ``os.pathsep``), embedded the same way. The first font that has every character of a
  value draws it.

A value that must be shaped or reordered (Arabic, Hebrew, Indic, Thai, combining marks), or
that no one font draws, is laid out by ``shaping`` instead, run by run, with ``script_fonts``:
Noto Sans, the script fonts the package ships (``SCRIPT_FONTS``), then the user's; its
glyphs go into a ``GlyphSubset`` per output.

Noto Sans ships in the ``fontpkg-noto-sans`` wheel. Its tables are read once per process with
``struct`` (no fontTools: importing and running its subsetter cost a one-off fill about a
second); each output then carries a subset that holds only the outlines of the glyphs it
draws, unhinted, renumbered 0..n-1, with a ToUnicode map, written straight as a TrueType
program.
"""

from __future__ import annotations

import bisect
import hashlib
import importlib
import json
import os
import stat
import struct
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pdfminer.cmapdb import CMapBase

#: Unicode blocks that Noto Sans covers and the engine embeds.
COVERED_BLOCKS: tuple[tuple[int, int, str], ...] = (
    (0x0020, 0x024F, "Latin, Latin-1 Supplement, Latin Extended-A/B"),
    (0x0250, 0x02FF, "IPA extensions, spacing modifiers"),
    (0x0300, 0x036F, "combining diacritical marks"),
    (0x0370, 0x03FF, "Greek and Coptic"),
    (0x0400, 0x052F, "Cyrillic and Cyrillic Supplement"),
    (0x1E00, 0x1EFF, "Latin Extended Additional (Vietnamese)"),
    (0x1F00, 0x1FFF, "Greek Extended"),
    (0x2000, 0x206F, "general punctuation"),
    (0x20A0, 0x20C0, "currency symbols"),
    (0x2100, 0x214F, "letterlike symbols"),
    (0x2150, 0x218F, "number forms"),
)

#: Standard Helvetica with WinAnsiEncoding: every viewer has it, nothing to embed.
HELVETICA_OBJECT = b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica/Encoding/WinAnsiEncoding>>"


@dataclass(frozen=True)
class SimpleFont:
    """A one-byte font: how to encode text for it and how wide each code is."""

    base_font: str
    widths: tuple[float, ...]  # 256 entries, in text space units per 1 pt (width / 1000)
    ascent: float  # per 1 pt
    descent: float  # per 1 pt, negative
    encoding: str  # Python codec turning text into the font's codes
    _drawable: bytes = field(init=False, repr=False, compare=False)
    char_widths: dict[str, float] = field(init=False, repr=False, compare=False)

    def encode(self, text: str) -> bytes | None:
        """The codes for ``text``, or None where the font cannot show a character."""
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError:
            return None
        if data.translate(None, self._drawable):
            return None  # a code the font has no glyph (no width) for
        return data

    def width(self, codes: bytes) -> float:
        """Width of ``codes`` at 1 pt."""
        return sum(map(self.widths.__getitem__, codes))

    def __post_init__(self) -> None:
        drawable = bytes(code for code, width in enumerate(self.widths) if width > 0)
        object.__setattr__(self, "_drawable", drawable)
        object.__setattr__(self, "char_widths", {})  # char -> width at 1 pt, as measured


@cache
def _core_metrics() -> dict[str, dict[str, Any]]:
    path = Path(__file__).with_name("data") / "core_font_widths.json"
    try:
        text = path.read_text(encoding="utf-8")  # no importlib.resources (and zipfile) import
    except OSError:  # installed in a zip: ask the loader
        from importlib import resources

        data = resources.files("fillpdf_provider.engine").joinpath("data/core_font_widths.json")
        text = data.read_text(encoding="utf-8")
    metrics: dict[str, dict[str, Any]] = json.loads(text)["fonts"]
    return metrics


_CORE_ALIASES = {
    "helvetica": "Helvetica",
    "helv": "Helvetica",
    "arial": "Helvetica",
    "arialmt": "Helvetica",
    "helvetica-bold": "Helvetica-Bold",
    "hebo": "Helvetica-Bold",
    "arial-bold": "Helvetica-Bold",
    "arial,bold": "Helvetica-Bold",
    "arial-boldmt": "Helvetica-Bold",
    "helvetica-oblique": "Helvetica-Oblique",
    "helvetica-boldoblique": "Helvetica-BoldOblique",
    "times-roman": "Times-Roman",
    "timesnewroman": "Times-Roman",
    "timesnewromanpsmt": "Times-Roman",
    "tiro": "Times-Roman",
    "times-bold": "Times-Bold",
    "times-italic": "Times-Italic",
    "times-bolditalic": "Times-BoldItalic",
    "courier": "Courier",
    "cour": "Courier",
    "couriernew": "Courier",
    "couriernewpsmt": "Courier",
    "courier-bold": "Courier-Bold",
    "courier-oblique": "Courier-Oblique",
    "courier-boldoblique": "Courier-BoldOblique",
}


def core_font_name(base_font: str) -> str | None:
    """The standard-14 font whose metrics fit ``base_font``, if any."""
    key = base_font.lstrip("/").lower().replace(" ", "")
    return _CORE_ALIASES.get(key)


@cache
def core_font(name: str = "Helvetica") -> SimpleFont:
    """A standard-14 font with WinAnsiEncoding, which every viewer has."""
    metrics = _core_metrics()[name]
    return SimpleFont(
        base_font=name,
        widths=tuple(w / 1000 for w in metrics["widths"]),
        ascent=metrics["ascent"] / 1000,
        descent=metrics["descent"] / 1000,
        encoding="cp1252",
    )


def simple_font_with_widths(
    base_font: str, first_char: int, widths: Iterable[float], ascent: float, descent: float
) -> SimpleFont:
    """A WinAnsi simple font described by its own ``/Widths``."""
    table = [0.0] * 256
    for offset, width in enumerate(widths):
        code = first_char + offset
        if 0 <= code < 256:
            table[code] = float(width) / 1000
    return SimpleFont(base_font, tuple(table), ascent, descent, "cp1252")


# --- a form's own CID fonts -------------------------------------------------------------

#: Predefined CMaps that take Unicode directly: UCS-2 (BMP only) or UTF-16, big-endian.
_UNICODE_CMAPS = frozenset(
    f"Uni{collection}-{form}-H"
    for collection in ("JIS", "GB", "CNS", "KS")
    for form in ("UCS2", "UTF16")
)


@dataclass(frozen=True)
class CidFont:
    """A form's own CJK font addressed through a Unicode CMap (``/UniJIS-UCS2-H`` ...).

    Such fonts are usually not embedded: the viewer supplies the glyphs. Widths come from
    the descendant font's ``/W`` through the predefined CMap that pdfminer ships.
    """

    base_font: str
    cmap_name: str
    widths: dict[int, float]  # CID -> width per 1 pt
    default_width: float
    ascent: float = 0.88
    descent: float = -0.12

    def encode(self, text: str) -> bytes | None:
        """UTF-16 codes, or None when a character has no CID in the font's character
        collection (emoji, Hebrew in a Japanese font): the viewer would draw nothing."""
        if self.cmap_name.endswith("UCS2-H") and any(ord(c) > 0xFFFF for c in text):
            return None
        if not all(_in_collection(self.cmap_name, c) for c in set(text)):
            return None
        return text.encode("utf-16-be")

    def width(self, codes: bytes) -> float:
        widths, default = self.widths, self.default_width
        return sum(
            widths.get(cid, default) for cid in _predefined_cmap(self.cmap_name).decode(codes)
        )


@lru_cache(maxsize=65536)
def _in_collection(cmap_name: str, char: str) -> bool:
    cids = list(_predefined_cmap(cmap_name).decode(char.encode("utf-16-be")))
    return len(cids) == 1 and cids[0] != 0


@cache
def _predefined_cmap(name: str) -> CMapBase:
    from pdfminer.cmapdb import CMapDB

    return CMapDB.get_cmap(name)


def cid_font(font: object) -> CidFont | None:
    """A usable ``CidFont`` for a ``/Type0`` font dictionary, if it takes Unicode."""
    get = getattr(font, "get", None)
    if get is None or get("/Subtype") != "/Type0":
        return None
    encoding = str(get("/Encoding", ""))[1:]
    if encoding not in _UNICODE_CMAPS:
        return None
    widths: dict[int, float] = {}
    default = 1.0
    descendants = get("/DescendantFonts")
    descendants = descendants.get_object() if descendants is not None else None
    if descendants:
        descendant = descendants[0].get_object()
        default = float(descendant.get("/DW", 1000)) / 1000
        widths = _cid_widths(descendant.get("/W"))
    return CidFont(str(get("/BaseFont", ""))[1:], encoding, widths, default)


def _cid_widths(array: Any) -> dict[int, float]:
    """A ``/W`` array (``c [w1 w2 ...]`` and ``c_first c_last w`` runs) as CID -> width.

    ``array`` is the font's entry as pypdf read it (fonts are read without importing it)."""
    items = list(array.get_object()) if array is not None else []
    widths: dict[int, float] = {}
    i = 0
    while i + 1 < len(items):
        first, nxt = int(items[i]), items[i + 1].get_object()
        if isinstance(nxt, list):
            for offset, width in enumerate(nxt):
                widths[first + offset] = float(width) / 1000
            i += 2
        elif i + 2 < len(items):
            for cid in range(first, int(nxt) + 1):
                widths[cid] = float(items[i + 2]) / 1000
            i += 3
        else:
            break
    return widths


# --- Noto Sans -------------------------------------------------------------------------


class _Glyphs:
    """Noto Sans read straight from its file, with ``struct`` alone: no fontTools.

    Only what cutting a subset needs is decoded, and only when asked: a glyph's outline,
    advance and bearing by glyph id, a code point's glyph through the ``cmap``. A variable
    font's ``glyf`` holds the default instance (Regular) and its ``hmtx`` that instance's
    advances, so the variation tables are simply not read. Outlines lose their hinting
    instructions as they are cut (``fpgm``, ``prep`` and ``cvt`` are not embedded).
    """

    def __init__(
        self,
        data: bytes,
        name: str = "Noto Sans",
        blocks: tuple[tuple[int, int, str], ...] | None = COVERED_BLOCKS,
    ) -> None:
        where = _sfnt_tables(data, name)
        missing = {"head", "hhea", "maxp", "hmtx", "cmap", "glyf", "loca"} - set(where)
        if missing:
            raise ValueError(f"the {name} file has no {', '.join(sorted(missing))} table")
        self.name = name

        def table(tag: str) -> bytes:
            offset, length = where[tag]
            return data[offset : offset + length]

        head, hhea, maxp = table("head"), table("hhea"), table("maxp")
        self.units_per_em: int = struct.unpack_from(">H", head, 18)[0]
        self.count: int = struct.unpack_from(">H", maxp, 4)[0]
        self._loca = _loca_offsets(data, head, self.count, where["loca"][0])
        self._data = data
        self._outlines: dict[int, bytes] = {}  # glyph id -> unhinted outline, as cut so far
        self._advances: dict[int, int] = {}  # glyph id -> advance width, as read so far
        self._parts: dict[int, tuple[int, ...]] = {}  # glyph id -> its components' ids
        self._glyf = where["glyf"][0]
        self._hmtx = where["hmtx"][0]
        self._long_metrics = struct.unpack_from(">H", hhea, 34)[0]
        _check_tables(name, self, where, len(data))
        self.cmap = _CoveredCmap(data, where["cmap"][0], blocks, name, self.count)
        ascender, descender = struct.unpack_from(">hh", hhea, 4)
        upm = self.units_per_em
        self.ascent, self.descent = ascender / upm, descender / upm
        os2 = table("OS/2") if "OS/2" in where else b""
        self.cap_height = (struct.unpack_from(">h", os2, 88)[0] if len(os2) >= 90 else 714) / upm
        self.tables = _subset_tables(table, where, os2)
        self.postscript_name = "NotoSans"
        if "name" in self.tables and name != "Noto Sans":
            self.postscript_name = _postscript_name(self.tables["name"]) or _plain(name)
        #: An upright regular face: tried before bold and italic ones of a folder.
        self.regular = _upright_regular(os2)

    @property
    def data(self) -> bytes:
        """The font file's bytes, as read."""
        return self._data

    def raw_glyph(self, gid: int) -> bytes:
        return self._data[self._glyf + self._loca[gid] : self._glyf + self._loca[gid + 1]]

    def glyph(self, gid: int) -> bytes:
        """The outline of glyph ``gid`` without its hinting instructions (cut once)."""
        outline = self._outlines.get(gid)
        if outline is None:
            outline = self._outlines[gid] = _unhinted(self.raw_glyph(gid))
        return outline

    def advance(self, gid: int) -> int:
        width = self._advances.get(gid)
        if width is None:
            index = min(gid, self._long_metrics - 1)
            width = struct.unpack_from(">H", self._data, self._hmtx + 4 * index)[0]
            self._advances[gid] = width
        return width

    def bearing(self, gid: int) -> int:
        if gid < self._long_metrics:
            at = self._hmtx + 4 * gid + 2
        else:
            at = self._hmtx + 4 * self._long_metrics + 2 * (gid - self._long_metrics)
        bearing: int = struct.unpack_from(">h", self._data, at)[0]
        return bearing

    def vertical(self, gid: int) -> tuple[int, int]:
        """(yMin, yMax) of glyph ``gid``'s outline, (0, 0) for an empty glyph."""
        if self._loca[gid + 1] - self._loca[gid] < 10:
            return (0, 0)
        y_min, _, y_max = struct.unpack_from(">3h", self._data, self._glyf + self._loca[gid] + 4)
        return (y_min, y_max)

    def horizontal(self, gid: int) -> tuple[int, int]:
        """(xMin, xMax) of glyph ``gid``'s outline, (0, 0) for an empty glyph."""
        if self._loca[gid + 1] - self._loca[gid] < 10:
            return (0, 0)
        x_min, _, x_max = struct.unpack_from(">3h", self._data, self._glyf + self._loca[gid] + 2)
        return (x_min, x_max)

    def bbox(self, gids: Iterable[int]) -> tuple[int, int, int, int]:
        """The bounds of the outlines of ``gids`` (font units)."""
        boxes = [
            struct.unpack_from(">4h", self._data, self._glyf + self._loca[gid] + 2)
            for gid in gids
            if self._loca[gid + 1] - self._loca[gid] >= 10
        ]
        if not boxes:
            return (0, 0, 0, 0)
        return (
            min(b[0] for b in boxes),
            min(b[1] for b in boxes),
            max(b[2] for b in boxes),
            max(b[3] for b in boxes),
        )


def _loca_offsets(data: bytes, head: bytes, count: int, at: int) -> tuple[int, ...]:
    """Where each of ``count`` glyphs starts in ``glyf`` (and where the last ends), from the
    ``loca`` table at ``at``, in its long or short form as ``head`` says."""
    if struct.unpack_from(">h", head, 50)[0]:
        offsets: tuple[int, ...] = struct.unpack_from(f">{count + 1}L", data, at)
        return offsets
    short = struct.unpack_from(f">{count + 1}H", data, at)
    return tuple(2 * v for v in short)


def _subset_tables(
    table: Callable[[str], bytes], where: dict[str, tuple[int, int]], os2: bytes
) -> dict[str, bytes]:
    """What each subset carries besides its glyphs: long offsets, no glyph names (post
    format 3), a short name table, the timestamps as they are (same bytes every time)."""
    head = table("head")
    tables = {"head": head[:50] + b"\0\1" + head[52:], "hhea": table("hhea"), "maxp": table("maxp")}
    if os2:
        tables["OS/2"] = os2
    if "name" in where:
        tables["name"] = _short_name_table(table("name"))
    if "post" in where:
        tables["post"] = b"\0\3\0\0" + table("post")[4:32]
    return tables


def _upright_regular(os2: bytes) -> bool:
    """Whether the ``OS/2`` table tells an upright face of regular weight (neither italic
    nor bold, by its selection bits, and at most medium weight)."""
    selection = struct.unpack_from(">H", os2, 62)[0] if len(os2) >= 64 else 0
    weight = struct.unpack_from(">H", os2, 4)[0] if len(os2) >= 6 else 400
    return bool(not selection & 0b100001 and weight <= 500)


def noto_path() -> Path:
    """The Noto Sans file the engine embeds from: the upright one the wheel ships."""
    return _packaged_font("fontpkg_noto_sans")


def _packaged_font(module: str) -> Path:
    """The upright font file a ``fontpkg`` wheel ships (its module has no type information)."""
    files = Path(str(importlib.import_module(module).__file__)).parent / "files"
    upright = sorted(p for p in files.glob("*.ttf") if "Italic" not in p.name)
    if not upright:
        wheel = module.replace("_", "-")
        raise FileNotFoundError(f"no font found in {files}; reinstall {wheel}")
    return upright[0]


@cache
def _noto() -> _Glyphs:
    """Noto Sans, opened once per process (a few milliseconds: nothing is decoded yet)."""
    return _Glyphs(noto_path().read_bytes())


def _sfnt_tables(data: bytes, name: str = "Noto Sans") -> dict[str, tuple[int, int]]:
    """Where each table of a TrueType file is: tag -> (offset, length)."""
    if len(data) < 16:
        raise ValueError(f"the {name} file is not a TrueType font")
    start = 0
    if data[:4] == b"ttcf":  # a collection: its first font (offsets count from the file's start)
        start = struct.unpack_from(">L", data, 12)[0]
        if start + 12 > len(data):
            raise ValueError(f"the {name} file is cut short")
    version, count = struct.unpack_from(">LH", data, start)
    if version == 0x4F54544F:  # 'OTTO'
        raise ValueError(
            f"the {name} file has PostScript (CFF) outlines; use a TrueType (.ttf) font"
        )
    if version not in (0x00010000, 0x74727565):  # TrueType outlines, 'true'
        raise ValueError(f"the {name} file is not a TrueType font")
    if start + 12 + 16 * count > len(data):
        raise ValueError(f"the {name} file is cut short")
    tables = {}
    for index in range(count):
        tag, offset, length = struct.unpack_from(">4s4xLL", data, start + 12 + 16 * index)
        if offset + length > len(data):
            raise ValueError(f"the {name} file is cut short (table {tag!r})")
        tables[tag.decode("latin-1")] = (offset, length)
    return tables


def _covered(code: int, blocks: tuple[tuple[int, int, str], ...] | None = COVERED_BLOCKS) -> bool:
    return blocks is None or any(lo <= code <= hi for lo, hi, _ in blocks)


def _postscript_name(name_table: bytes) -> str | None:
    """The PostScript name (name ID 6) of a short ``name`` table, as a PDF name allows."""
    count, storage = struct.unpack_from(">2xHH", name_table)
    for index in range(count):
        _, _, _, name_id, length, offset = struct.unpack_from(">6H", name_table, 6 + 12 * index)
        if name_id == 6:
            raw = name_table[storage + offset : storage + offset + length]
            return _plain(raw.decode("utf-16-be", "replace")) or None
    return None


def _plain(text: str) -> str:
    """``text`` with only the characters a font name in a PDF keeps (A-Z, a-z, 0-9, -)."""
    return "".join(c for c in text if c.isascii() and (c.isalnum() or c == "-"))[:60]


#: Where users add fonts: folders or .ttf files, separated by ``os.pathsep``.
FONTS_ENV = "FILLPDF_FONTS"


@dataclass(frozen=True)
class AddedFonts:
    """The TrueType fonts found through ``FILLPDF_FONTS``, and what could not be used."""

    fonts: tuple[_Glyphs, ...] = ()
    skipped: tuple[str, ...] = ()  # "file: why", for the message that names missing glyphs


def added_fonts() -> AddedFonts:
    """The user's fonts, read once per value of ``FILLPDF_FONTS``."""
    return _added_fonts(os.environ.get(FONTS_ENV, ""))


#: A font file larger than this is not read (the largest CJK TrueType fonts are ~40 MB).
MAX_FONT_BYTES = 64 * 1024 * 1024


@cache
def _added_fonts(setting: str) -> AddedFonts:
    paths: list[Path] = []
    skipped: list[str] = []
    for entry in filter(None, setting.split(os.pathsep)):
        place = Path(entry).expanduser()
        if place.is_dir():
            paths += sorted(
                p for p in place.rglob("*") if p.suffix.lower() in (".ttf", ".otf", ".ttc")
            )
        elif place.exists():
            paths.append(place)
        else:
            skipped.append(f"{place.name}: no such file or folder")
    fonts = []
    for path in paths:
        try:
            fonts.append(_Glyphs(_font_bytes(path), path.name, None))
        except Exception as exc:  # a font file is input: whatever is wrong, skip and say why
            skipped.append(f"{path.name}: {_why(exc, path.name)}")
    # Upright regular faces first (a folder of system fonts lists Bold before Regular).
    fonts.sort(key=lambda font: not font.regular)
    return AddedFonts(tuple(fonts), tuple(skipped))


def _font_bytes(path: Path) -> bytes:
    """A font file's bytes: a regular file of at most ``MAX_FONT_BYTES`` (not a device, a
    pipe or a link to one, which would block or never end)."""
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("not a regular file")
    if info.st_size > MAX_FONT_BYTES:
        raise ValueError(f"larger than {MAX_FONT_BYTES // 2**20} MB")
    with path.open("rb") as handle:
        return handle.read(MAX_FONT_BYTES + 1)


def _why(exc: Exception, name: str) -> str:
    """What is wrong with a font file, in words (not a library's exception text)."""
    if isinstance(exc, ValueError) and str(exc):
        return str(exc).replace(f"the {name} file ", "")
    if isinstance(exc, OSError):
        return exc.strerror or "cannot be read"
    return "its tables are damaged"


def _check_tables(name: str, font: _Glyphs, where: dict[str, tuple[int, int]], size: int) -> None:
    """Refuse a font whose tables cannot hold what they claim (read before trusting them)."""
    if not font.units_per_em:
        raise ValueError(f"the {name} file has no units per em")
    loca_end = font._loca[-1] if font._loca else 0
    if where["glyf"][0] + loca_end > size or list(font._loca) != sorted(font._loca):
        raise ValueError(f"the {name} file has glyph offsets past its outlines")
    metrics = min(font._long_metrics, font.count)
    if not metrics or 4 * metrics + 2 * (font.count - metrics) > where["hmtx"][1]:
        raise ValueError(f"the {name} file has too few glyph widths")


def fallbacks() -> tuple[_Glyphs, ...]:
    """The fonts the engine embeds, in the order it tries them: Noto Sans, then the user's."""
    return _fallbacks(os.environ.get(FONTS_ENV, ""))


@cache
def _fallbacks(setting: str) -> tuple[_Glyphs, ...]:
    return (_noto(), *_added_fonts(setting).fonts)


def fallback_for(text: str) -> int | None:
    """The index (in ``fallbacks()``) of the first font with every character of ``text``."""
    chars = set(text)
    chars.difference_update("\n\r\t")
    for index, font in enumerate(fallbacks()):
        if font.cmap.has_all(chars):
            return index
    return None


#: The fonts the package ships for the scripts Noto Sans lacks: (fontpkg module or file in
#: ``data/fonts``, name). Shaped text takes each run's font from these, in this order.
SCRIPT_FONTS: tuple[tuple[str, str], ...] = (
    ("fontpkg_noto_sans_arabic", "Noto Sans Arabic"),
    ("NotoSansHebrew-Regular.ttf", "Noto Sans Hebrew"),
    ("fontpkg_noto_sans_devanagari", "Noto Sans Devanagari"),
    ("NotoSansBengali-Regular.ttf", "Noto Sans Bengali"),
    ("NotoSansGurmukhi-Regular.ttf", "Noto Sans Gurmukhi"),
    ("NotoSansGujarati-Regular.ttf", "Noto Sans Gujarati"),
    ("NotoSansOriya-Regular.ttf", "Noto Sans Oriya"),
    ("fontpkg_noto_sans_tamil", "Noto Sans Tamil"),
    ("fontpkg_noto_sans_telugu", "Noto Sans Telugu"),
    ("NotoSansKannada-Regular.ttf", "Noto Sans Kannada"),
    ("NotoSansMalayalam-Regular.ttf", "Noto Sans Malayalam"),
    ("NotoSansSinhala-Regular.ttf", "Noto Sans Sinhala"),
    ("fontpkg_noto_sans_thai", "Noto Sans Thai"),
    ("NotoSansLao-Regular.ttf", "Noto Sans Lao"),
    ("NotoSansMyanmar-Regular.ttf", "Noto Sans Myanmar"),
    ("fontpkg_noto_sans_khmer", "Noto Sans Khmer"),
    ("wqy-microhei.ttc", "WenQuanYi Micro Hei"),
)


def script_fonts() -> tuple[_Glyphs, ...]:
    """The fonts shaped text is drawn with, in the order a run tries them: Noto Sans, the
    script fonts the package ships, then the user's (``FILLPDF_FONTS``)."""
    return _script_fonts(os.environ.get(FONTS_ENV, ""))


@cache
def _script_fonts(setting: str) -> tuple[_Glyphs, ...]:
    return (_noto(), *_shipped_script_fonts(), *_added_fonts(setting).fonts)


@cache
def _shipped_script_fonts() -> tuple[_Glyphs, ...]:
    """The shipped script fonts, each read when shaped text first needs fonts (a missing
    font package leaves its script to the user's fonts; the error naming the characters
    says so)."""
    found = []
    for source, name in SCRIPT_FONTS:
        try:
            found.append(_Glyphs(script_font_path(source).read_bytes(), name, None))
        except (ImportError, OSError, ValueError):
            continue
    return tuple(found)


def script_font_path(source: str) -> Path:
    """The file behind a ``SCRIPT_FONTS`` source: shipped in ``data/fonts``, or a wheel's."""
    if source.endswith((".ttf", ".ttc")):
        return Path(__file__).with_name("data") / "fonts" / source
    return _packaged_font(source)


class _CoveredCmap:
    """The font's best Unicode ``cmap`` (format 12 before format 4, as fontTools'
    ``getBestCmap`` chooses), cut to the covered blocks: ``code in cmap``, ``cmap[code]``.

    Lookups bisect the subtable's segments: nothing is decoded in advance.
    """

    def __init__(
        self,
        data: bytes,
        at: int,
        blocks: tuple[tuple[int, int, str], ...] | None = COVERED_BLOCKS,
        name: str = "Noto Sans",
        glyphs: int = 65536,
    ) -> None:
        self._blocks = blocks
        self._glyphs = glyphs
        self._known: dict[int, int | None] = {}  # code -> glyph, as looked up so far
        count = struct.unpack_from(">H", data, at + 2)[0]
        offsets: dict[tuple[int, int], int] = {}
        for index in range(count):
            platform, encoding, offset = struct.unpack_from(">HHL", data, at + 4 + 8 * index)
            offsets.setdefault((platform, encoding), at + offset)
        for key in ((3, 10), (0, 6), (0, 4), (3, 1), (0, 3), (0, 2), (0, 1), (0, 0)):
            offset = offsets.get(key)
            if offset is None:
                continue
            fmt = struct.unpack_from(">H", data, offset)[0]
            if fmt == 12:
                groups = struct.unpack_from(">L", data, offset + 12)[0]
                flat: tuple[int, ...] = struct.unpack_from(f">{3 * groups}L", data, offset + 16)
                self._starts, self._ends = flat[0::3], flat[1::3]
                self._lookup = self._format12(flat[2::3])
                return
            if fmt == 4:
                self._lookup = self._format4(data, offset)
                return
        raise ValueError(f"the {name} file has no Unicode cmap of format 4 or 12")

    def _format12(self, first_glyphs: tuple[int, ...]) -> Callable[[int], int]:
        starts, ends = self._starts, self._ends

        def lookup(code: int) -> int:
            index = bisect.bisect_right(starts, code) - 1
            if index < 0 or code > ends[index]:
                return 0
            return first_glyphs[index] + code - starts[index]

        return lookup

    def _format4(self, data: bytes, offset: int) -> Callable[[int], int]:
        segments = struct.unpack_from(">H", data, offset + 6)[0] // 2
        ends = struct.unpack_from(f">{segments}H", data, offset + 14)
        starts_at = offset + 16 + 2 * segments
        starts = struct.unpack_from(f">{segments}H", data, starts_at)
        deltas: tuple[int, ...] = struct.unpack_from(
            f">{segments}h", data, starts_at + 2 * segments
        )
        ranges_at = starts_at + 4 * segments
        ranges = struct.unpack_from(f">{segments}H", data, ranges_at)

        def lookup(code: int) -> int:
            index = bisect.bisect_left(ends, code)
            if index >= segments or code < starts[index] or code == 0xFFFF:
                return 0
            if ranges[index] == 0:
                return (code + deltas[index]) & 0xFFFF
            at = ranges_at + 2 * index + ranges[index] + 2 * (code - starts[index])
            glyph: int = struct.unpack_from(">H", data, at)[0]
            return (glyph + deltas[index]) & 0xFFFF if glyph else 0

        return lookup

    def get(self, code: int) -> int | None:
        known = self._known
        if code in known:
            return known[code]
        glyph = None
        if _covered(code, self._blocks):
            try:
                glyph = self._lookup(code) or None
            except struct.error:  # a damaged subtable points past the font's end
                glyph = None
            if glyph is not None and glyph >= self._glyphs:
                glyph = None  # a glyph the font does not have
        if len(known) < 65536:
            known[code] = glyph
        return glyph

    def has_all(self, chars: Iterable[str]) -> bool:
        """Whether every character of ``chars`` has a glyph (looked up once per code)."""
        known, get = self._known, self.get
        for char in chars:
            code = ord(char)
            glyph = known[code] if code in known else get(code)
            if glyph is None:
                return False
        return True

    def __contains__(self, code: object) -> bool:
        return isinstance(code, int) and self.get(code) is not None

    def __getitem__(self, code: int) -> int:
        glyph = self.get(code)
        if glyph is None:
            raise KeyError(code)
        return glyph


def _short_name_table(table: bytes) -> bytes:
    """A ``name`` table with only the family, style, unique, full, version and PostScript
    names (IDs 1-6), in English for Windows: the copyright and licence texts stay out."""
    count, storage = struct.unpack_from(">2xHH", table)
    records = []
    for index in range(count):
        platform, encoding, language, name_id, length, offset = struct.unpack_from(
            ">6H", table, 6 + 12 * index
        )
        if platform == 3 and encoding in (1, 10) and language == 0x409 and 1 <= name_id <= 6:
            text = table[storage + offset : storage + offset + length]
            records.append((platform, encoding, language, name_id, text))
    records.sort()
    header = struct.pack(">3H", 0, len(records), 6 + 12 * len(records))
    directory, strings = b"", b""
    for platform, encoding, language, name_id, text in records:
        directory += struct.pack(
            ">6H", platform, encoding, language, name_id, len(text), len(strings)
        )
        strings += text
    return header + directory + strings


def _unhinted(data: bytes) -> bytes:
    """A glyph's outline without its TrueType instructions (the font is not hinted)."""
    if len(data) < 12:
        return data
    contours = struct.unpack_from(">h", data)[0]
    if contours >= 0:
        at = 10 + 2 * contours
        length = struct.unpack_from(">H", data, at)[0]
        return data[:at] + b"\0\0" + data[at + 2 + length :] if length else data
    records, end = _component_records(data)
    patched, instructions = bytearray(data), False
    for at, flags, _ in records:
        if flags & 0x0100:  # WE_HAVE_INSTRUCTIONS
            patched[at : at + 2] = struct.pack(">H", flags & ~0x0100)
            instructions = True
    return bytes(patched[:end]) if instructions else data


@cache
def _subset_cache() -> dict[tuple[int, frozenset[str]], UnicodeSubset]:
    return {}


def unicode_subset(chars: frozenset[str], font: int = 0) -> UnicodeSubset:
    """The subset of ``fallbacks()[font]`` showing ``chars``, built once per distinct set."""
    cache_ = _subset_cache()
    key = (id(fallbacks()[font]), chars)
    subset_ = cache_.get(key)
    if subset_ is None:
        if len(cache_) >= 512:
            cache_.clear()
        subset_ = cache_[key] = UnicodeSubset(chars, font)
    return subset_


class UnicodeSubset:
    """Noto Sans cut down to the glyphs one output draws, numbered 1..n in a CID font.

    Appearance streams show text as two-byte glyph ids of this subset; ToUnicode maps them
    back to characters so the text stays searchable and copyable.
    """

    _program: tuple[int, bytes] | None
    _objects: tuple[FontRefs, list[tuple[int, bytes]]] | None

    def __init__(self, chars: frozenset[str], font: int = 0) -> None:
        g = self._glyphs = fallbacks()[font]
        self.ascent, self.descent = g.ascent, g.descent
        self._vertical: dict[str, tuple[float, float]] = {}
        wanted = {g.cmap[ord(c)] for c in chars if ord(c) in g.cmap}
        old = sorted(_with_components(g, wanted | {0}))
        self._new = {gid: i for i, gid in enumerate(old)}
        self._old = old
        self._bbox = g.bbox(old)
        self._code = {
            c: self._new[g.cmap[ord(c)]].to_bytes(2, "big") for c in chars if ord(c) in g.cmap
        }
        scale = 1 / g.units_per_em
        self._width = {
            code: g.advance(old[int.from_bytes(code, "big")]) * scale
            for code in self._code.values()
        }
        self._chars = {int.from_bytes(code, "big"): c for c, code in sorted(self._code.items())}
        self._program = None
        self._objects = None

    def encode(self, text: str) -> bytes | None:
        try:
            return b"".join(map(self._code.__getitem__, text))
        except KeyError:
            return None

    def width(self, codes: bytes) -> float:
        widths = self._width
        return sum(widths[codes[i : i + 2]] for i in range(0, len(codes), 2))

    def extent(self, text: str) -> tuple[float, float]:
        """(top, bottom) of the outlines of ``text``'s glyphs per 1 pt: the ink, not the
        font's line (Noto Sans' ascent and descent span 1.36 em; its capitals 0.71)."""
        g, vertical = self._glyphs, self._vertical
        top, bottom = 0.0, 0.0
        for char in set(text):
            box = vertical.get(char)
            if box is None:
                gid = g.cmap.get(ord(char))
                y_min, y_max = g.vertical(gid) if gid is not None else (0, 0)
                box = vertical[char] = (y_max / g.units_per_em, y_min / g.units_per_em)
            top, bottom = max(top, box[0]), min(bottom, box[1])
        return top, bottom

    def pdf_objects(self, ref: FontRefs) -> list[tuple[int, bytes]]:
        """The five objects that embed this subset, numbered from ``ref``."""
        built = self._objects  # read once: another thread may replace it meanwhile
        if built is None or built[0] != ref:
            built = self._objects = (ref, self._build_objects(ref))
        return built[1]

    def _build_objects(self, ref: FontRefs) -> list[tuple[int, bytes]]:
        g = self._glyphs
        if self._program is None:
            raw = _subset_program(g, self._old, self._new, self._bbox)
            self._program = (len(raw), zlib.compress(raw, 6))
        return _embedding_objects(g, self._old, self._bbox, self._chars, ref, self._program)


def _embedding_objects(
    g: _Glyphs,
    old: list[int],
    bbox: tuple[int, int, int, int],
    chars: dict[int, str],
    ref: FontRefs,
    program: tuple[int, bytes],
) -> list[tuple[int, bytes]]:
    """The five objects embedding a subset whose code ``n`` draws glyph ``old[n]`` of ``g``
    and reads back as ``chars[n]``; ``program`` is its TrueType program (length, deflated)."""
    base = f"{_subset_tag(old, g.postscript_name)}+{g.postscript_name}".encode()
    scale = 1000 / g.units_per_em
    widths = b" ".join(
        b"%d[%d]" % (new, round(g.advance(old[new]) * scale)) for new in sorted(chars)
    )
    x0, y0, x1, y1 = (round(v * scale) for v in bbox)
    descriptor = (
        b"<</Type/FontDescriptor/FontName/%s/Flags 32/FontBBox[%d %d %d %d]/ItalicAngle 0"
        b"/Ascent %d/Descent %d/CapHeight %d/StemV 80/FontFile2 %d 0 R>>"
        % (
            base,
            x0,
            y0,
            x1,
            y1,
            round(g.ascent * 1000),
            round(g.descent * 1000),
            round(g.cap_height * 1000),
            ref.file,
        )
    )
    cid_font = (
        b"<</Type/Font/Subtype/CIDFontType2/BaseFont/%s/CIDSystemInfo<</Registry(Adobe)"
        b"/Ordering(Identity)/Supplement 0>>/FontDescriptor %d 0 R/DW 1000/W[%s]"
        b"/CIDToGIDMap/Identity>>" % (base, ref.descriptor, widths)
    )
    type0 = (
        b"<</Type/Font/Subtype/Type0/BaseFont/%s/Encoding/Identity-H/DescendantFonts[%d 0 R]"
        b"/ToUnicode %d 0 R>>" % (base, ref.cid_font, ref.to_unicode)
    )
    font_file = b"<</Length %d/Length1 %d/Filter/FlateDecode>>\nstream\n%s\nendstream" % (
        len(program[1]),
        program[0],
        program[1],
    )
    cmap = zlib.compress(_to_unicode_cmap(chars), 9)  # a fixed level: same bytes
    to_unicode = b"<</Length %d/Filter/FlateDecode>>\nstream\n%s\nendstream" % (
        len(cmap),
        cmap,
    )
    return [
        (ref.font, type0),
        (ref.cid_font, cid_font),
        (ref.descriptor, descriptor),
        (ref.file, font_file),
        (ref.to_unicode, to_unicode),
    ]


class GlyphSubset:
    """The glyphs of one font that shaping chose for one output, coded 1..n in the order
    they are first drawn, with what each reads back as (ToUnicode).

    Shaped text is drawn by glyph, not by character (a contextual form, a ligature, a
    reordered vowel sign), so the subset grows as lines are drawn. A glyph that stands for
    different characters in different places (one letter body under several dot patterns)
    gets a code, and a copy, for each: every code reads back as what it drew.
    """

    def __init__(self, glyphs: _Glyphs, refs: FontRefs) -> None:
        self._glyphs = glyphs
        self.refs = refs
        self._old: list[int] = [0]  # code -> glyph id; code 0 is .notdef
        self._codes: dict[tuple[int, str], tuple[bytes, float]] = {}  # (glyph, text) -> code
        self._chars: dict[int, str] = {}  # code -> the text it reads back as

    def code(self, gid: int, text: str) -> tuple[bytes, float]:
        """The two-byte code drawing glyph ``gid`` for ``text`` and its width per 1 pt, as
        ``/W`` says."""
        known = self._codes.get((gid, text))
        if known is None:
            g = self._glyphs
            number = len(self._old)
            self._old.append(gid)
            self._chars[number] = text or "\u200b"  # (a glyph of no character: read as nothing)
            width = round(g.advance(gid) * 1000 / g.units_per_em) / 1000
            known = self._codes[(gid, text)] = (number.to_bytes(2, "big"), width)
        return known

    def pdf_objects(self) -> list[tuple[int, bytes]]:
        """The five objects that embed the glyphs drawn so far."""
        g = self._glyphs
        drawn = set(self._old)
        parts = sorted(_with_components(g, drawn) - drawn)
        old = self._old + parts
        new: dict[int, int] = {}
        for index, gid in enumerate(old):
            new.setdefault(gid, index)  # a component points at the first copy
        bbox = g.bbox(old)
        raw = _subset_program(g, old, new, bbox)
        program = (len(raw), zlib.compress(raw, 6))
        return _embedding_objects(g, old, bbox, self._chars, self.refs, program)


class FontRefs(NamedTuple):
    """Object numbers of the five objects that embed a Noto Sans subset."""

    font: int
    cid_font: int
    descriptor: int
    file: int
    to_unicode: int

    @classmethod
    def starting_at(cls, number: int) -> FontRefs:
        return cls(number, number + 1, number + 2, number + 3, number + 4)


def _component_records(data: bytes) -> tuple[list[tuple[int, int, int]], int]:
    """(offset, flags, glyph index) of each component record of a composite glyph, and
    where the records end (before any instructions); ``([], 0)`` for a simple glyph."""
    if len(data) < 10 or struct.unpack(">h", data[:2])[0] >= 0:
        return [], 0
    records: list[tuple[int, int, int]] = []
    pos = 10
    while True:
        flags, component = struct.unpack(">HH", data[pos : pos + 4])
        records.append((pos, flags, component))
        pos += 4 + (4 if flags & 0x0001 else 2)
        if flags & 0x0008:
            pos += 2
        elif flags & 0x0040:
            pos += 4
        elif flags & 0x0080:
            pos += 8
        if not flags & 0x0020:  # MORE_COMPONENTS
            return records, pos


def _components(data: bytes) -> list[tuple[int, int]]:
    """(offset of the glyph index, glyph index) of each component of a composite glyph."""
    return [(at + 2, component) for at, _, component in _component_records(data)[0]]


def _with_components(g: _Glyphs, gids: set[int]) -> set[int]:
    """``gids`` plus every glyph their composite glyphs are built from."""
    todo, seen = list(gids), set()
    while todo:
        gid = todo.pop()
        if gid in seen or gid >= g.count:
            continue
        seen.add(gid)
        parts = g._parts.get(gid)
        if parts is None:
            parts = g._parts[gid] = tuple(c for _, c in _components(g.raw_glyph(gid)))
        todo.extend(parts)
    return seen


def _subset_program(
    g: _Glyphs, old: list[int], new: dict[int, int], bbox: tuple[int, int, int, int]
) -> bytes:
    """A TrueType program holding the ``old`` glyphs, renumbered 0..n-1 in that order."""
    glyf, offsets, hmtx = bytearray(), [], bytearray()
    for gid in old:
        offsets.append(len(glyf))
        data = g.glyph(gid)
        components = _components(data)
        if components:
            patched = bytearray(data)
            for at, component in components:
                patched[at : at + 2] = new.get(component, 0).to_bytes(2, "big")
            data = bytes(patched)
        glyf += data
        glyf += b"\0" * (-len(data) % 4)
        hmtx += struct.pack(">Hh", g.advance(gid), g.bearing(gid))
    offsets.append(len(glyf))
    count = len(old)
    tables = dict(g.tables)
    tables["head"] = tables["head"][:36] + struct.pack(">4h", *bbox) + tables["head"][44:]
    tables["glyf"] = bytes(glyf)
    tables["loca"] = struct.pack(f">{len(offsets)}L", *offsets)
    tables["hmtx"] = bytes(hmtx)
    tables["maxp"] = tables["maxp"][:4] + struct.pack(">H", count) + tables["maxp"][6:]
    tables["hhea"] = tables["hhea"][:34] + struct.pack(">H", count) + tables["hhea"][36:]
    return _assemble_sfnt(tables)


def _checksum(data: bytes) -> int:
    padded = data + b"\0" * (-len(data) % 4)
    words: tuple[int, ...] = struct.unpack(f">{len(padded) // 4}L", padded)
    return sum(words) & 0xFFFFFFFF


def _assemble_sfnt(tables: dict[str, bytes]) -> bytes:
    tags = sorted(tables)
    count = len(tags)
    power = 1 << (count.bit_length() - 1)
    header = struct.pack(
        ">LHHHH", 0x00010000, count, power * 16, power.bit_length() - 1, count * 16 - power * 16
    )
    offset = 12 + 16 * count
    head = bytearray(tables["head"])
    head[8:12] = b"\0\0\0\0"
    tables = {**tables, "head": bytes(head)}
    directory, body, head_at = b"", b"", 0
    for tag in tags:
        data = tables[tag]
        if tag == "head":
            head_at = offset + len(body)
        directory += struct.pack(
            ">4sLLL", tag.encode("latin-1"), _checksum(data), offset + len(body), len(data)
        )
        body += data + b"\0" * (-len(data) % 4)
    font = bytearray(header + directory + body)
    adjustment = (0xB1B0AFBA - _checksum(bytes(font))) & 0xFFFFFFFF
    font[head_at + 8 : head_at + 12] = struct.pack(">L", adjustment)
    return bytes(font)


def _subset_tag(gids: list[int], font: str = "NotoSans") -> str:
    seed = repr(gids) if font == "NotoSans" else f"{font}:{gids!r}"
    digest = hashlib.md5(seed.encode(), usedforsecurity=False).digest()
    return "".join(chr(ord("A") + b % 26) for b in digest[:6])


def _to_unicode_cmap(used: dict[int, str]) -> bytes:
    lines = [
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap",
        "/CIDSystemInfo <</Registry (Adobe) /Ordering (UCS) /Supplement 0>> def",
        "/CMapName /Adobe-Identity-UCS def /CMapType 2 def",
        "1 begincodespacerange <0000> <FFFF> endcodespacerange",
    ]
    items = sorted(used.items())
    for start in range(0, len(items), 100):
        chunk = items[start : start + 100]
        lines.append(f"{len(chunk)} beginbfchar")
        lines.extend(
            f"<{gid:04X}> <{char.encode('utf-16-be').hex().upper()}>" for gid, char in chunk
        )
        lines.append("endbfchar")
    lines.append("endcmap CMapName currentdict /CMap defineresource pop end end")
    return "\n".join(lines).encode("ascii")
