"""A one-off ``fillpdf fill``: what its process imports, the Noto Sans subset it embeds
(cut without fontTools), and how much an update adds to the template."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from fillpdf_provider.engine import fill, fonts
from kits import formedit, viewcheck
from kits.formkit import Spec, build_form

ROOT = Path(__file__).resolve().parents[2]
SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
BOX = (40, 700, 290, 716)

#: Modules a ``fillpdf fill`` process has no use for: the detector and previews (numpy,
#: PDFium, Pillow's drawing), batches (pyarrow), the service and the Airflow provider, the
#: text extraction stack, and fontTools' subsetter (the engine cuts Noto Sans itself).
HEAVY = (
    "airflow",
    "fastapi",
    "fillpdf_provider.engine.batch",
    "fillpdf_provider.engine.convert",
    "fillpdf_provider.engine.detect",
    "fillpdf_provider.engine.preview",
    "fillpdf_provider.hooks",
    "fillpdf_provider.operators",
    "fillpdf_provider.service",
    "fontTools.subset",
    "httpx",
    "numpy",
    "pandas",
    "pdfminer",
    "pdfplumber",
    "pyarrow",
    "pypdfium2",
    "sqlalchemy",
    "uvicorn",
)

#: Runs the CLI's ``main`` as the console script does, then lists the modules it loaded.
_PROBE = """
import json, sys
from fillpdf_provider.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _loaded(*args: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_a_fill_process_imports_nothing_heavy(bench_pdf: bytes, tmp_path: Path) -> None:
    form = tmp_path / "form.pdf"
    form.write_bytes(bench_pdf)
    values = tmp_path / "values.json"
    # Greek and Cyrillic: the row embeds a Noto Sans subset, the costliest path.
    row = {"first_name": "Ελένη", "last_name": "Кузнецова", "terms": True}
    values.write_text(json.dumps(row, ensure_ascii=False), encoding="utf-8")
    out = tmp_path / "out.pdf"
    code, modules = _loaded("fill", str(form), "--values", str(values), "-o", str(out))
    assert code == 0
    assert formedit.stored_values(out.read_bytes())["first_name"] == "Ελένη"
    assert _heavy(modules) == []


def test_building_the_parser_imports_no_pdf_library() -> None:
    code = (
        "import json, sys\n"
        "from fillpdf_provider.cli import build_parser\n"
        "build_parser().parse_args(['fill', 'a.pdf', '--values', 'v.json', '-o', 'o.pdf'])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    modules = set(json.loads(done.stdout))
    assert _heavy(modules) == []
    assert "pypdf" not in modules
    assert "fillpdf_provider.engine.filler" not in modules


def test_the_cli_detect_choices_are_the_detector_modes() -> None:
    from fillpdf_provider.cli import DETECT_MODES
    from fillpdf_provider.engine.detect import MODES

    assert DETECT_MODES == MODES


def test_the_engine_package_loads_the_filler_on_first_use() -> None:
    code = (
        "import sys\n"
        "import fillpdf_provider.engine as engine\n"
        "assert 'pypdf' not in sys.modules, 'engine imported pypdf'\n"
        "assert engine.Template is engine.filler.Template\n"
        "from fillpdf_provider.engine import *\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


# --------------------------------------------------------------------------- Noto Sans


def test_noto_cmap_and_metrics_match_fonttools() -> None:
    from fontTools.ttLib import TTFont

    font = TTFont(str(fonts.noto_path()), lazy=True)
    best = font.getBestCmap()
    order = font.getGlyphOrder()
    hmtx = font["hmtx"]
    noto = fonts.fallbacks()[0]  # Noto Sans comes first
    covered = [code for lo, hi, _ in fonts.COVERED_BLOCKS for code in range(lo, hi + 1)]
    assert {c for c in covered if c in best} == {c for c in covered if c in noto.cmap}
    for code in covered:
        if code in best:
            gid = noto.cmap[code]
            assert order[gid] == best[code], hex(code)
            assert (noto.advance(gid), noto.bearing(gid)) == hmtx[best[code]], hex(code)
    assert 0x4E00 not in noto.cmap  # CJK: not a covered block
    assert noto.units_per_em == font["head"].unitsPerEm


def _font_program(pdf: bytes) -> bytes:
    (number,) = formedit.embedded_font_files(pdf)
    return formedit.reader(pdf).get_object(number).get_data()


def test_the_embedded_subset_holds_only_the_glyphs_drawn() -> None:
    from fontTools.ttLib import TTFont

    text = "Ελένη Кузнецова"
    out = fill(build_form([Spec("t", "text", BOX)]), {"t": text})
    font = TTFont(io.BytesIO(_font_program(out)))
    glyf = font["glyf"]
    for name in font.getGlyphOrder():
        glyf[name].getCoordinates(glyf)  # every outline (and component) resolves
        assert not getattr(glyf[name], "program", None), "hinting instructions are dropped"
    # .notdef, one glyph per distinct character, and the parts of composite accents
    assert len(set(text)) + 1 <= font["maxp"].numGlyphs <= len(set(text)) + 8
    assert set(font.keys()) - {"GlyphOrder"} == {
        "OS/2",
        "glyf",
        "head",
        "hhea",
        "hmtx",
        "loca",
        "maxp",
        "name",
        "post",
    }
    assert font["post"].formatType == 3.0  # no glyph names
    flat = viewcheck.flatten_with_pdfium(out)  # ToUnicode: the text reads back
    assert viewcheck.text_in_rect(flat, 0, BOX) == viewcheck.squash(text)


def test_the_to_unicode_map_is_compressed() -> None:
    out = fill(build_form([Spec("t", "text", BOX)]), {"t": "Ωμέγα"})
    reader = formedit.reader(out)
    fonts_seen = 0
    for number in range(1, len(reader.xref_objStm) + int(reader.trailer["/Size"])):
        try:
            obj = reader.get_object(number)
        except Exception:  # free or missing numbers
            continue
        if hasattr(obj, "get") and obj.get("/Subtype") == "/Type0":
            cmap = obj["/ToUnicode"].get_object()
            assert cmap["/Filter"] == "/FlateDecode"
            assert b"beginbfchar" in cmap.get_data()
            fonts_seen += 1
    assert fonts_seen == 1


# --------------------------------------------------------------------------- output size

SAMPLE_VALUES = {
    "full_name": "Emily Clarke",
    "date_of_birth": "1982-09-25",
    "email": "emily.clarke@example.com",
    "phone": "+46 53 8677766",
    "street": "Main Street 195",
    "city": "Boston",
    "zip": "49755",
    "country": "Sweden",
    "plan": "Standard",
    "interests": "Chess",
    "newsletter": True,
    "notes": "Prefers contact by email.",
}


def _value_bytes(values: dict[str, object]) -> int:
    return sum(len(v.encode("utf-8")) for v in values.values() if isinstance(v, str))


def test_an_ascii_fill_adds_no_font_and_stays_small() -> None:
    template = SAMPLE_FORM.read_bytes()
    out = fill(template, SAMPLE_VALUES)
    assert b"/FontFile2" not in out  # WinAnsi text: standard Helvetica, nothing embedded
    assert out.count(b"/BaseFont/Helvetica/") <= 1
    # Each filled widget costs its rewritten dictionary and its appearance stream: about
    # 600 bytes here, with no copy of anything per widget.
    assert len(out) <= 2.0 * (len(template) + _value_bytes(SAMPLE_VALUES))
    assert len(out) - len(template) <= 700 * len(SAMPLE_VALUES)


@pytest.mark.parametrize("values", [SAMPLE_VALUES, {**SAMPLE_VALUES, "city": "Θεσσαλονίκη"}])
def test_an_update_after_an_xref_stream_is_compact(values: dict[str, object]) -> None:
    table = SAMPLE_FORM.read_bytes()
    stream = formedit.to_xref_stream(table)
    plain = fill(table, values)
    compact = fill(stream, values)
    assert compact.startswith(stream)
    tail = compact[len(stream) :]
    assert b"/Type/ObjStm" in tail and b"/Type/XRef" in tail and b"/Widget" not in tail
    assert len(compact) - len(stream) <= 0.75 * (len(plain) - len(table))
    # Non-Latin text adds its Noto Sans subset: about 2 KB for a word of a dozen letters.
    font = 0 if all(str(v).isascii() for v in values.values()) else 3_000
    assert len(compact) <= 1.75 * (len(stream) + _value_bytes(values)) + font
    # Every reader still finds the values, and the same values give the same bytes.
    formedit.reader(compact, strict=True)
    stored = formedit.stored_values(compact)
    assert {k: stored[k] for k in ("full_name", "city")} == {
        "full_name": values["full_name"],
        "city": values["city"],
    }
    assert fill(stream, dict(reversed(list(values.items())))) == compact
    flat = viewcheck.flatten_with_pdfium(compact)
    assert viewcheck.squash(str(values["city"])) in viewcheck.squash(
        "".join(c["text"] for c in formedit.page_chars(flat))
    )


def test_an_object_stream_decodes_to_the_objects_it_lists() -> None:
    stream = formedit.to_xref_stream(SAMPLE_FORM.read_bytes())
    tail = fill(stream, SAMPLE_VALUES)[len(stream) :]
    rest = tail.partition(b"/Type/ObjStm")[2]
    length = int(rest.split(b"/Length ")[1].split(b">>")[0])
    data = zlib.decompress(rest.split(b"stream\n", 1)[1][:length])
    count = int(rest.split(b"/N ")[1].split(b"/")[0])
    first = int(rest.split(b"/First ")[1].split(b"/")[0])
    pairs = data[:first].split()
    assert len(pairs) == 2 * count
    offsets = [int(v) for v in pairs[1::2]]
    assert offsets == sorted(offsets) and offsets[0] == 0
    for at in offsets:
        assert data[first + at : first + at + 2] == b"<<"


def test_the_cli_overflow_choices_and_sizes_are_the_engines() -> None:
    from fillpdf_provider.cli import FONT_SIZES, OVERFLOW_POLICIES
    from fillpdf_provider.engine import OVERFLOW_POLICIES as ENGINE_POLICIES
    from fillpdf_provider.engine import Fit

    assert OVERFLOW_POLICIES == ENGINE_POLICIES
    low, high = FONT_SIZES
    assert Fit(min_size=low) and Fit(min_size=high)
    for outside in (low - 0.01, high + 0.01):
        with pytest.raises(ValueError):
            Fit(min_size=outside)
