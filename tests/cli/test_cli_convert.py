"""``fillpdf convert``, run as a user runs it: the installed console script on a flat PDF."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

import pytest
from PIL import Image

from fillpdf_provider.engine import Template, inspect
from kits import cli_support, viewcheck
from kits.contract import SCHEMA_KEYS
from kits.flatkit import FlatPage, build

RESULT_KEYS = {
    "status",
    "document_url",
    "conversion_id",
    "fields",
    "confidence",
    "pages",
    "ms",
    "schema",
}

#: ``fillpdf convert`` runs detection on whole pages: it gets 120 s (the other commands 60 s).
run = partial(cli_support.run, timeout=120)
#: Its errors are a single line on stderr, ``fillpdf convert: error: ...``.
assert_clean_error = partial(
    cli_support.assert_clean_error, prefix="fillpdf convert: error: ", only_line=True
)


@pytest.fixture
def flat(tmp_path: Path) -> Path:
    """Two pages: a ruled box after "Full name", then nine comb cells after "SSN"."""
    first = FlatPage()
    end = first.text(72, 700, "Full name")
    first.box((end + 8, 695, 400, 715))
    second = FlatPage()
    second.text(72, 700, "SSN")
    for i in range(9):
        second.box((110 + 14 * i, 696, 124 + 14 * i, 714))
    path = tmp_path / "flat.pdf"
    path.write_bytes(build([first, second]))
    return path


def leftovers(folder: Path) -> list[str]:
    """Temporary files a write left behind."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".") or ".tmp" in p.name)


@pytest.mark.parametrize("mode", ["fields", "fields_fast"])
def test_json_prints_the_conversion_result(flat: Path, tmp_path: Path, mode: str) -> None:
    out = tmp_path / "out" / "fillable.pdf"
    done = run("convert", flat, "-o", out, "--detect", mode, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert set(result) == RESULT_KEYS
    assert result["status"] == "converted"
    assert result["document_url"] is None
    assert result["conversion_id"] is None
    assert result["pages"] == 2
    assert result["fields"] == len(result["schema"]) == 2
    assert isinstance(result["ms"], int) and result["ms"] >= 0
    assert 0 < result["confidence"] <= 1
    for entry in result["schema"]:
        assert set(entry) == SCHEMA_KEYS  # neither is a date (which adds "date_format")
    by_name = {entry["name"]: entry for entry in result["schema"]}
    assert set(by_name) == {"full_name", "ssn"}
    assert (by_name["ssn"]["max_length"], by_name["ssn"]["comb"]) == (9, True)
    assert [by_name["full_name"]["page"], by_name["ssn"]["page"]] == [0, 1]


def test_the_fillable_pdf_is_written_and_fills(flat: Path, tmp_path: Path) -> None:
    out = tmp_path / "fillable.pdf"
    done = run("convert", flat, "-o", out, "--json")
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)["schema"]
    fields = inspect(out)
    assert [f.to_dict()["name"] for f in fields] == [e["name"] for e in schema]
    assert [list(f.to_dict()["rect"]) for f in fields] == [e["rect"] for e in schema]
    assert viewcheck.visible_field_names(out) == {"full_name", "ssn"}
    filled = Template(out).fill({"full_name": "Ada Lovelace", "ssn": "123456789"})
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    rects = {f.name: f.rect for f in fields}
    assert viewcheck.text_in_rect(shown, 0, rects["full_name"]) == "AdaLovelace"
    assert viewcheck.text_in_rect(shown, 1, rects["ssn"]) == "123456789"
    assert leftovers(tmp_path) == []


def test_without_json_one_summary_line(flat: Path, tmp_path: Path) -> None:
    out = tmp_path / "fillable.pdf"
    done = run("convert", flat, "-o", out)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    line = lines[0]
    assert "2 fields" in line and "2 pages" in line and " ms" in line, line
    assert str(out) in line, line
    assert done.stderr == ""
    assert out.read_bytes().startswith(b"%PDF-")


def test_preview_writes_one_png_per_page(flat: Path, tmp_path: Path) -> None:
    out, previews = tmp_path / "fillable.pdf", tmp_path / "previews"
    done = run("convert", flat, "-o", out, "--preview", previews, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pages"] == 2  # stdout stays pure JSON
    assert sorted(p.name for p in previews.iterdir()) == ["page-001.png", "page-002.png"]
    for path in previews.iterdir():
        with Image.open(path) as image:
            assert image.format == "PNG"
            assert image.width > 0 and image.height > 0
    assert str(previews) in done.stderr
    assert out.is_file()


@pytest.mark.parametrize("what", ["missing", "not_a_pdf", "folder"])
def test_bad_input_is_one_line_and_exit_1(tmp_path: Path, what: str) -> None:
    source = tmp_path / "in.pdf"
    if what == "not_a_pdf":
        source.write_text("Name,City\nAda,London\n", encoding="utf-8")
    elif what == "folder":
        source.mkdir()
    out = tmp_path / "out" / "fillable.pdf"
    done = run("convert", source, "-o", out, "--json", "--preview", tmp_path / "previews")
    assert_clean_error(done)
    assert done.stdout == ""
    assert not out.exists()
    assert not (tmp_path / "out").exists() or leftovers(tmp_path / "out") == []
    assert not (tmp_path / "previews").exists()


def test_preview_onto_a_file_is_refused_before_writing(flat: Path, tmp_path: Path) -> None:
    taken = tmp_path / "taken"
    taken.write_text("not a folder", encoding="utf-8")
    out = tmp_path / "fillable.pdf"
    done = run("convert", flat, "-o", out, "--preview", taken)
    assert_clean_error(done, "--preview")
    assert not out.exists()


def test_an_unknown_detect_mode_is_a_usage_error(flat: Path, tmp_path: Path) -> None:
    out = tmp_path / "fillable.pdf"
    done = run("convert", flat, "-o", out, "--detect", "ocr")
    assert done.returncode == 2
    assert "fields_fast" in done.stderr
    assert not out.exists()
