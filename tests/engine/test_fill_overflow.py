"""Text too long for its box is a decision: refused by default, or cut and reported.

A value used to shrink to 1 pt and, past that, be drawn cut off with the fill exiting 0.
Now text shrinks to ``Fit.min_size`` (4 pt) and then the overflow policy decides: "error"
refuses the row naming the field, "shrink" draws what fits at the minimum size and
"truncate" what fits at the field's own size; both report the field as cut.
"""

from __future__ import annotations

import io
from pathlib import Path

import pdfplumber
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from fillpdf_provider.engine import FieldValueError, Fit, Template, TextOverflowError
from fillpdf_provider.engine.batch import fill_rows
from kits import formedit, viewcheck
from kits.formkit import Spec, build_form

SAMPLE = Path(__file__).resolve().parents[2] / "include" / "sample_form.pdf"
LONG_LINE = "W" * 200  # the 300 pt signature line holds about 78 at 4 pt
LONG_NOTES = "word " * 3000  # the notes box holds about 7,000 characters at 4 pt


@pytest.fixture(scope="module")
def form() -> Template:
    return Template(SAMPLE.read_bytes())


def shown(pdf: bytes) -> str:
    with pdfplumber.open(io.BytesIO(pdf)) as plumber:
        return plumber.pages[0].extract_text() or ""


@pytest.mark.parametrize(("field", "value"), [("signature", LONG_LINE), ("notes", LONG_NOTES)])
def test_by_default_text_that_needs_under_4_pt_is_refused_by_name(
    form: Template, field: str, value: str
) -> None:
    with pytest.raises(TextOverflowError) as raised:
        form.fill({field: value})
    message = str(raised.value)
    assert isinstance(raised.value, FieldValueError) and raised.value.field == field
    assert f"{len(value):,} characters" in message and "4 pt" in message
    assert "holds about" in message and "'shrink' or 'truncate'" in message


def test_text_that_fits_at_4_pt_or_more_shrinks_and_is_not_cut(form: Template) -> None:
    result = form.fill_result({"signature": "W" * 60, "notes": "word " * 1000})
    assert result.cut == ()
    text = shown(form.fill({"signature": "W" * 60}, flatten=True))
    assert text.count("W") == 60


def test_shrink_draws_what_fits_at_the_minimum_and_reports_it(form: Template) -> None:
    result = form.fill_result(
        {"signature": LONG_LINE, "notes": LONG_NOTES, "city": "Zürich"},
        fit=Fit("shrink"),
        flatten=True,
    )
    assert result.cut == ("notes", "signature")  # in the form's order, fields that fit left out
    text = shown(result.pdf)
    assert 70 <= text.count("W") < 200
    assert 1000 <= text.count("word") < 3000


def test_truncate_keeps_the_fields_size_and_draws_fewer_characters(form: Template) -> None:
    shrunk = shown(form.fill({"signature": LONG_LINE}, fit=Fit("shrink"), flatten=True))
    truncated = form.fill_result({"signature": LONG_LINE}, fit=Fit("truncate"), flatten=True)
    assert truncated.cut == ("signature",)
    assert 0 < shown(truncated.pdf).count("W") < shrunk.count("W")


def test_a_smaller_minimum_lets_more_text_shrink_instead(form: Template) -> None:
    assert form.fill_result({"signature": LONG_LINE}, fit=Fit(min_size=1.0)).cut == ()


def test_a_policy_or_size_that_makes_no_sense_is_refused() -> None:
    with pytest.raises(ValueError, match="overflow must be one of error, shrink, truncate"):
        Fit("clip")
    with pytest.raises(ValueError, match=r"between 0\.5 and 72"):
        Fit(min_size=0)


def test_a_cut_value_keeps_its_whole_text_as_the_fields_value(form: Template) -> None:
    """What is drawn is cut; what the field holds (``/V``) is the whole value."""
    from pypdf import PdfReader

    pdf = form.fill({"notes": LONG_NOTES}, fit=Fit("truncate"))
    fields = PdfReader(io.BytesIO(pdf)).get_fields() or {}
    assert fields["notes"].get("/V") == LONG_NOTES


def test_the_batch_manifest_lists_the_fields_cut_in_each_row(
    form: Template, tmp_path: Path
) -> None:
    rows = tmp_path / "rows.csv"
    table = pa.table(
        {"full_name": ["Ada", "Bo", "Cy"], "signature": ["short", LONG_LINE, "W" * 60]}
    )
    pacsv.write_csv(table, rows)
    summary = fill_rows(form, rows, tmp_path / "out", fit=Fit("shrink"))
    assert (summary.ok, summary.failed, summary.cut) == (3, 0, 1)
    manifest = pq.read_table(tmp_path / "out" / "manifest.parquet").to_pylist()
    assert [r["cut"] for r in manifest] == [None, ["signature"], None]
    assert "1 with text cut to fit" in summary.line()


def test_by_default_the_batch_records_an_overflowing_row_as_failed(
    form: Template, tmp_path: Path
) -> None:
    rows = tmp_path / "rows.csv"
    pacsv.write_csv(pa.table({"signature": ["short", LONG_LINE]}), rows)
    summary = fill_rows(form, rows, tmp_path / "out")
    assert (summary.ok, summary.failed) == (1, 1)
    manifest = pq.read_table(tmp_path / "out" / "manifest.parquet").to_pylist()
    assert manifest[1]["status"] == "error" and "'signature'" in manifest[1]["error"]
    assert not (tmp_path / "out" / "2.pdf").exists()


def test_a_choice_too_long_for_its_box_shows_its_start_at_its_own_size() -> None:
    """A combo's option is the form's own text: never refused; it shows from its start at
    the field's size, cut at the box's edge as a viewer's combo box shows it, and is
    reported as cut."""
    long_option = "Bachelor of Science in Mechanical and Aerospace Engineering " * 3
    pdf = build_form(
        [Spec("degree", "combo", (40, 700, 160, 716), options=["None", long_option],
              da="/Helv 10 Tf 0 g")]
    )  # fmt: skip
    form = Template(pdf)
    for policy in ("error", "shrink", "truncate"):
        result = form.fill_result({"degree": long_option}, fit=Fit(policy))
        assert result.cut == ("degree",), policy
        with pdfplumber.open(io.BytesIO(form.fill({"degree": long_option}, flatten=True))) as doc:
            chars = doc.pages[0].chars
        drawn = "".join(c["text"] for c in chars)
        assert len(drawn) >= 10 and long_option.startswith(drawn), drawn
        assert {round(c["size"]) for c in chars} == {10}  # the field's own size, not 4 pt
        assert max(c["x1"] for c in chars) <= 160 + 0.5  # cut at the box's edge
    assert form.fill_result({"degree": "None"}).cut == ()


TICK_BOX = (358.7, 654.3, 364.6, 660.2)  # a 6 pt square for an X, as court forms have
DAY_BOX = (86.9, 463.3, 106.5, 479.1)  # 20 pt wide, under a dd/mm/yyyy script


def _drawn_across(pdf: bytes, rect: tuple[float, float, float, float]) -> tuple[str, float, float]:
    """The text a viewer shows in ``rect`` and how far its glyphs run left and right."""
    chars = [c for c in formedit.page_chars(viewcheck.flatten_with_pdfium(pdf)) if c["text"]]
    inside = [c for c in chars if c["x1"] > rect[0] - 20 and c["x0"] < rect[2] + 20]
    text = "".join(c["text"] for c in inside)
    return text, min(c["x0"] for c in inside), max(c["x1"] for c in inside)


def test_a_box_too_narrow_for_one_character_at_4_pt_takes_one_at_the_size_it_allows() -> None:
    form = Template(build_form([Spec("tick", "text", TICK_BOX, da="/Helv 0 Tf 0 g")]))
    text, left, right = _drawn_across(form.fill({"tick": "X"}), TICK_BOX)
    assert text == "X" and TICK_BOX[0] - 0.5 <= left < right <= TICK_BOX[2] + 0.5
    with pytest.raises(TextOverflowError, match="2 characters need"):
        form.fill({"tick": "XX"})  # more than one character: shortening it helps


def test_a_date_box_too_narrow_for_its_date_at_4_pt_takes_one_at_the_size_it_allows() -> None:
    specs = [Spec("day", "text", DAY_BOX, da="/Helv 9 Tf 0 g")]
    form = Template(formedit.add_date_script(build_form(specs), "day", "dd/mm/yyyy"))
    text, left, right = _drawn_across(form.fill({"day": "2025-03-05"}), DAY_BOX)
    assert text == "05/03/2025" and DAY_BOX[0] - 0.5 <= left < right <= DAY_BOX[2] + 0.5


def test_the_same_box_without_a_date_format_still_refuses_ten_characters() -> None:
    form = Template(build_form([Spec("day", "text", DAY_BOX, da="/Helv 9 Tf 0 g")]))
    with pytest.raises(TextOverflowError, match="10 characters need"):
        form.fill({"day": "05/03/2025"})
