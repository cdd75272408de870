"""Fonts for appearance streams: the form's own font where it is safe, else one we bring.

Three kinds of font draw a value:

* the form's ``/DA`` font, when it is a simple font whose encoding and widths we know and
  that holds every character of the value (an embedded subset may not: it is never used);
* standard Helvetica with WinAnsiEncoding, for any value that WinAnsi can encode;
* Noto Sans, embedded as a CID font with a ToUnicode map, for everything else. It covers
  Latin (with Vietnamese and the Latin Extended blocks), Greek and Cyrillic.

Noto Sans ships in the ``fontpkg-noto-sans`` wheel. fonttools reduces it once per process to
the covered blocks with its glyph ids renumbered; each output then carries a subset of that
font that keeps the ids and only the outlines of the glyphs it draws, so the appearance
streams can be written before the subset is known.
"""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

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

_VARIATION_TABLES = ["fvar", "gvar", "HVAR", "MVAR", "STAT", "avar", "cvar"]
_UNUSED_TABLES = ["GSUB", "GPOS", "GDEF", "DSIG", "hdmx", "VORG", "vhea", "vmtx", "kern", "LTSH"]


@dataclass(frozen=True)
class SimpleFont:
    """A one-byte font: how to encode text for it and how wide each code is."""

    base_font: str
    widths: tuple[float, ...]  # 256 entries, in text space units per 1 pt (width / 1000)
    ascent: float  # per 1 pt
    descent: float  # per 1 pt, negative
    encoding: str  # Python codec turning text into the font's codes

    def encode(self, text: str) -> bytes | None:
        """The codes for ``text``, or None where the font cannot show a character."""
        try:
            data = text.encode(self.encoding)
        except UnicodeEncodeError:
            return None
        if any(self.widths[b] == 0 for b in data):
            return None
        return data

    def width(self, codes: bytes) -> float:
        """Width of ``codes`` at 1 pt."""
        widths = self.widths
        return sum(widths[b] for b in codes)


@cache
def _core_metrics() -> dict[str, dict]:
    text = resources.files("fillpdf_provider.engine").joinpath("data/core_font_widths.json")
    return json.loads(text.read_text(encoding="utf-8"))["fonts"]


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


# --- Noto Sans -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Glyphs:
    """The reduced Noto Sans, parsed far enough to cut per-output subsets quickly."""

    tables: dict[str, bytes]
    glyph_data: tuple[bytes, ...]
    cmap: dict[int, int]
    advances: tuple[int, ...]
    units_per_em: int
    ascent: float
    descent: float
    cap_height: float
    bbox: tuple[int, int, int, int]


def _noto_path() -> Path:
    import fontpkg_noto_sans

    files = Path(fontpkg_noto_sans.__file__).parent / "files"
    upright = [p for p in files.glob("NotoSans*.ttf") if "Italic" not in p.name]
    if not upright:
        raise FileNotFoundError(f"Noto Sans not found in {files}; reinstall fontpkg-noto-sans")
    return upright[0]


@cache
def _noto() -> _Glyphs:
    from fontTools import subset
    from fontTools.ttLib import TTFont

    font = TTFont(str(_noto_path()))
    options = subset.Options()
    options.drop_tables += _VARIATION_TABLES + _UNUSED_TABLES
    options.hinting = False
    options.notdef_outline = True
    options.layout_features = []
    options.name_IDs = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=[u for lo, hi, _ in COVERED_BLOCKS for u in range(lo, hi + 1)])
    subsetter.subset(font)
    font["head"].indexToLocFormat = 1
    buffer = io.BytesIO()
    font.save(buffer)
    font = TTFont(io.BytesIO(buffer.getvalue()))
    raw = {tag: font.reader[tag] for tag in font.reader.keys()}  # noqa: SIM118
    loca = struct.unpack(f">{len(raw['loca']) // 4}L", raw["loca"])
    glyf = raw["glyf"]
    glyph_data = tuple(glyf[loca[i] : loca[i + 1]] for i in range(len(loca) - 1))
    order = font.getGlyphOrder()
    gid = {name: i for i, name in enumerate(order)}
    cmap = {u: gid[name] for u, name in font.getBestCmap().items()}
    advances = tuple(font["hmtx"][name][0] for name in order)
    head, os2 = font["head"], font["OS/2"]
    upm = head.unitsPerEm
    return _Glyphs(
        tables=raw,
        glyph_data=glyph_data,
        cmap=cmap,
        advances=advances,
        units_per_em=upm,
        ascent=font["hhea"].ascent / upm,
        descent=font["hhea"].descent / upm,
        cap_height=getattr(os2, "sCapHeight", 714) / upm,
        bbox=(head.xMin, head.yMin, head.xMax, head.yMax),
    )


class UnicodeFont:
    """Noto Sans as a CID font: text becomes two-byte glyph ids."""

    def __init__(self) -> None:
        self._g = _noto()
        self.ascent = self._g.ascent
        self.descent = self._g.descent

    def covers(self, text: str) -> bool:
        cmap = self._g.cmap
        return all(ord(c) in cmap or c in "\n\r\t" for c in text)

    def encode(self, text: str) -> bytes:
        """Glyph ids of ``text`` (characters the font lacks become .notdef)."""
        cmap = self._g.cmap
        return b"".join(cmap.get(ord(c), 0).to_bytes(2, "big") for c in text)

    def width(self, codes: bytes) -> float:
        advances, upm = self._g.advances, self._g.units_per_em
        return (
            sum(advances[int.from_bytes(codes[i : i + 2], "big")] for i in range(0, len(codes), 2))
            / upm
        )

    def used_glyphs(self, text: str) -> dict[int, str]:
        cmap = self._g.cmap
        return {cmap[ord(c)]: c for c in text if ord(c) in cmap}

    def pdf_objects(self, used: dict[int, str], ref: FontRefs) -> list[tuple[int, bytes]]:
        """The objects that embed the subset holding ``used`` glyphs (gid -> character)."""
        g = self._g
        gids = _with_components(g.glyph_data, set(used) | {0})
        program = _subset_program(g, gids)
        tag = _subset_tag(sorted(used))
        base = f"{tag}+NotoSans".encode()
        scale = 1000 / g.units_per_em
        widths = b" ".join(
            b"%d[%d]" % (gid, round(g.advances[gid] * scale)) for gid in sorted(used)
        )
        x0, y0, x1, y1 = (round(v * scale) for v in g.bbox)
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
        compressed = zlib.compress(program, 6)
        font_file = b"<</Length %d/Length1 %d/Filter/FlateDecode>>\nstream\n%s\nendstream" % (
            len(compressed),
            len(program),
            compressed,
        )
        cmap = _to_unicode_cmap(used)
        to_unicode = b"<</Length %d>>\nstream\n%s\nendstream" % (len(cmap), cmap)
        return [
            (ref.font, type0),
            (ref.cid_font, cid_font),
            (ref.descriptor, descriptor),
            (ref.file, font_file),
            (ref.to_unicode, to_unicode),
        ]


@dataclass(frozen=True)
class FontRefs:
    """Object numbers of the five objects that embed a Noto Sans subset."""

    font: int
    cid_font: int
    descriptor: int
    file: int
    to_unicode: int

    @classmethod
    def starting_at(cls, number: int) -> FontRefs:
        return cls(number, number + 1, number + 2, number + 3, number + 4)


def _with_components(glyph_data: tuple[bytes, ...], gids: set[int]) -> set[int]:
    """``gids`` plus every glyph their composite glyphs are built from."""
    todo, seen = list(gids), set()
    while todo:
        gid = todo.pop()
        if gid in seen or gid >= len(glyph_data):
            continue
        seen.add(gid)
        data = glyph_data[gid]
        if len(data) >= 10 and struct.unpack(">h", data[:2])[0] < 0:
            pos = 10
            while True:
                flags, component = struct.unpack(">HH", data[pos : pos + 4])
                todo.append(component)
                pos += 4 + (4 if flags & 0x0001 else 2)
                if flags & 0x0008:
                    pos += 2
                elif flags & 0x0040:
                    pos += 4
                elif flags & 0x0080:
                    pos += 8
                if not flags & 0x0020:
                    break
    return seen


def _subset_program(g: _Glyphs, gids: set[int]) -> bytes:
    """A TrueType program with the same glyph ids whose unused glyphs are empty."""
    glyf, offsets = bytearray(), []
    for gid, data in enumerate(g.glyph_data):
        offsets.append(len(glyf))
        if gid in gids:
            glyf += data
            glyf += b"\0" * (-len(data) % 4)
    offsets.append(len(glyf))
    tables = dict(g.tables)
    tables["glyf"] = bytes(glyf)
    tables["loca"] = struct.pack(f">{len(offsets)}L", *offsets)
    tables.pop("cmap", None)
    tables.pop("gasp", None)
    return _assemble_sfnt(tables)


def _checksum(data: bytes) -> int:
    padded = data + b"\0" * (-len(data) % 4)
    return sum(struct.unpack(f">{len(padded) // 4}L", padded)) & 0xFFFFFFFF


def _assemble_sfnt(tables: dict[str, bytes]) -> bytes:
    tags = sorted(tables)
    count = len(tags)
    power = 1 << (count.bit_length() - 1)
    header = struct.pack(
        ">LHHHH", 0x00010000, count, power * 16, power.bit_length() - 1, count * 16 - power * 16
    )
    offset = 12 + 16 * count
    directory, body = b"", b""
    head = bytearray(tables["head"])
    head[8:12] = b"\0\0\0\0"
    tables = {**tables, "head": bytes(head)}
    for tag in tags:
        data = tables[tag]
        directory += struct.pack(
            ">4sLLL", tag.encode("latin-1"), _checksum(data), offset + len(body), len(data)
        )
        body += data + b"\0" * (-len(data) % 4)
    font = bytearray(header + directory + body)
    adjustment = (0xB1B0AFBA - _checksum(bytes(font))) & 0xFFFFFFFF
    head_at = (
        12
        + 16 * count
        + sum(len(tables[t]) + (-len(tables[t]) % 4) for t in tags[: tags.index("head")])
    )
    font[head_at + 8 : head_at + 12] = struct.pack(">L", adjustment)
    return bytes(font)


def _subset_tag(gids: list[int]) -> str:
    digest = hashlib.md5(repr(gids).encode(), usedforsecurity=False).digest()
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
