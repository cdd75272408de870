"""Names a table can map to, on small flat forms built here.

A mail-merge maps a CSV's columns to a form's field names, so a name has to say which field
it is: the cells of a table by their column's header and their row (``quantity_2``) or the
row's label (``wages_last_year``); a Yes/No grid as one radio group per question; a date
by its label, its format hint ("(MM/DD/YYYY)") becoming the field's date format; and the
schema in reading order. A field's own label is the one on its own line, not another
field's label on the line above; a writing area under an instruction is named by its
heading; a long label is cut where its meaning stays whole. Both detection modes are held
to the same forms.
"""

from __future__ import annotations

import datetime as dt
import re

import pytest

from fillpdf_provider.engine import Field, Template
from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.dates import format_date
from fillpdf_provider.engine.detect.labels import MAX_NAME, snake
from fillpdf_provider.engine.detect.naming import date_hint, joined_name, reading_order
from kits import viewcheck
from kits.flatkit import FlatPage, Rect, one_page

MODES = ("fields", "fields_fast")
#: What a converter falls back on when it finds no label: never a name here.
GENERIC = re.compile(r"(text|checkbox|choice|date|signature|field)(_[0-9]+)?")


def detect(pdf: bytes, mode: str) -> list[Field]:
    return convert(pdf, detect=mode).schema


def listing(fields: list[Field]) -> str:
    return "; ".join(f"{f.name}:{f.type} label={f.label!r} options={f.options}" for f in fields)


def names(fields: list[Field]) -> list[str]:
    return [f.name for f in fields]


# --------------------------------------------------------------------------- the forms


def table(page: FlatPage, top: float, headers: list[str], rows: int, x: float = 72) -> None:
    """A ruled table: a row of ``headers``, then ``rows`` rows of empty cells."""
    for header in headers:
        width = 200 if header == headers[0] else 80
        page.box((x, top - 20, x + width, top))
        page.text(x + 4, top - 14, header)
        for row in range(rows):
            page.box((x, top - 40 - 20 * row, x + width, top - 20 - 20 * row))
        x += width


def labelled_rows(
    page: FlatPage, top: float, corner: str, headers: list[str], rows: list[str]
) -> None:
    """A ruled table whose first column labels each row, under ``corner``."""
    columns = [(72.0, 250.0, corner)] + [
        (250.0 + 100 * i, 350.0 + 100 * i, h) for i, h in enumerate(headers)
    ]
    for x0, x1, header in columns:
        page.box((x0, top - 20, x1, top))
        page.text(x0 + 4, top - 14, header)
    for number, label in enumerate(rows):
        row_top = top - 20 - 20 * number
        for x0, x1, _header in columns:
            page.box((x0, row_top - 20, x1, row_top))
        page.text(76, row_top - 14, label)


def yes_no_grid(
    page: FlatPage, top: float, questions: list[str], options: tuple[str, ...] = ("Yes", "No")
) -> list[list[Rect]]:
    """Questions down the left, a column of squares under each option's header; the squares."""
    squares = []
    for n, option in enumerate(options):
        page.text(400 + 40 * n, top + 14, option)
    for row, question in enumerate(questions):
        y = top - 20 * row
        page.text(72, y, question)
        squares.append([(402 + 40 * n, y - 1, 412 + 40 * n, y + 9) for n in range(len(options))])
        for square in squares[-1]:
            page.box(square)
    return squares


def member_form() -> bytes:
    """The form a new member fills in: a few boxes, a date with a format hint, an order
    table, a Yes/No grid and an income table whose rows have labels (23 fields)."""
    page = FlatPage()
    page.text(72, 740, "Membership application", size=14)
    for y, label in ((700, "Full name"), (672, "Email")):
        page.text(72, y + 5, label)
        page.box((160, y, 450, y + 20))
    page.text(72, 649, "Date of birth (MM/DD/YYYY)")
    page.box((220, 644, 330, 664))
    table(page, 620, ["Item", "Quantity", "Price"], rows=3)
    yes_no_grid(page, 500, ["Do you smoke?", "Are you over 65?", "Do you own a car?"])
    labelled_rows(
        page, 400, "Income", ["This year", "Last year"], ["Wages", "Interest", "Dividends"]
    )
    return one_page(page)


MEMBER_NAMES = [
    "full_name", "email", "date_of_birth",
    "item_1", "quantity_1", "price_1",
    "item_2", "quantity_2", "price_2",
    "item_3", "quantity_3", "price_3",
    "do_you_smoke", "are_you_over_65", "do_you_own_a_car",
    "wages_this_year", "wages_last_year",
    "interest_this_year", "interest_last_year",
    "dividends_this_year", "dividends_last_year",
]  # fmt: skip


# --------------------------------------------------------------------------- whole form


@pytest.mark.parametrize("mode", MODES)
def test_a_self_made_form_has_a_name_for_every_column(mode: str) -> None:
    fields = detect(member_form(), mode)
    assert names(fields) == MEMBER_NAMES, listing(fields)  # in reading order, too
    assert not [f.name for f in fields if GENERIC.fullmatch(f.name)]
    widgets = sum(len(f.widgets or ()) or 1 for f in fields)
    assert widgets == 24  # 3 boxes, 9 cells, 6 squares, 6 cells: no heading cell


@pytest.mark.parametrize("mode", MODES)
def test_the_named_form_fills_from_a_row_keyed_by_its_names(mode: str) -> None:
    result = convert(member_form(), detect=mode)
    form = Template(result.pdf)
    row: dict[str, object] = {f.name: f"{f.name[:6]}" for f in result.schema if f.type == "text"}
    row |= {"do_you_smoke": "no", "are_you_over_65": "yes", "do_you_own_a_car": "no"}
    row["date_of_birth"] = format_date(dt.date(1990, 12, 10), form.date_format("date_of_birth"))
    filled = form.fill(row)
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    for widget in viewcheck.visible_widgets(filled):
        if widget.field_type == "Tx":
            text = viewcheck.text_in_rect(shown, widget.page, widget.rect)
            assert text == viewcheck.squash(str(row[widget.name])), widget.name
    assert (
        viewcheck.text_in_rect(
            shown, 0, next(f.rect for f in result.schema if f.name == "date_of_birth")
        )
        == "12/10/1990"
    )


# --------------------------------------------------------------------------- each rule


@pytest.mark.parametrize("mode", MODES)
def test_table_cells_are_named_by_column_header_and_row_number(mode: str) -> None:
    page = FlatPage()
    table(page, 700, ["Item", "Quantity", "Price"], rows=3)
    fields = detect(one_page(page), mode)
    assert names(fields) == [f"{h}_{r}" for r in (1, 2, 3) for h in ("item", "quantity", "price")]
    assert [f.label for f in fields[:2]] == ["Item (row 1)", "Quantity (row 1)"]


@pytest.mark.parametrize("mode", MODES)
def test_a_table_of_one_row_keeps_its_headers_as_names(mode: str) -> None:
    page = FlatPage()
    table(page, 700, ["Item", "Quantity", "Price"], rows=1)
    assert names(detect(one_page(page), mode)) == ["item", "quantity", "price"]


@pytest.mark.parametrize("mode", MODES)
def test_rows_with_labels_name_their_cells(mode: str) -> None:
    page = FlatPage()
    labelled_rows(page, 700, "Income", ["This year", "Last year"], ["Wages", "Interest"])
    # one column of amounts under its header, each row labelled on its left
    page.text(300, 505, "Amount")
    for n, label in enumerate(("Rent", "Travel", "Meals")):
        top = 500 - 20 * n
        page.text(72, top - 14, label)
        page.box((300, top - 20, 400, top))
    fields = detect(one_page(page), mode)
    assert names(fields) == [
        "wages_this_year", "wages_last_year", "interest_this_year", "interest_last_year",
        "rent", "travel", "meals",
    ], listing(fields)  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_cells_with_labels_of_their_own_keep_them(mode: str) -> None:
    """A column of boxes, each with its own printed label, is no table of generic cells."""
    page = FlatPage()
    for n, label in enumerate(("Street", "City", "Country")):
        top = 700 - 20 * n
        page.box((72, top - 20, 300, top))
        page.text(76, top - 8, label, size=6)  # printed in the box's top corner
    fields = detect(one_page(page), mode)
    assert names(fields) == ["street", "city", "country"], listing(fields)


@pytest.mark.parametrize("mode", MODES)
def test_a_yes_no_grid_is_one_radio_group_per_question(mode: str) -> None:
    page = FlatPage()
    squares = yes_no_grid(page, 700, ["Do you smoke?", "Are you over 65?", "Do you own a car?"])
    result = convert(one_page(page), detect=mode)
    fields = result.schema
    assert names(fields) == ["do_you_smoke", "are_you_over_65", "do_you_own_a_car"], listing(fields)
    for field, row in zip(fields, squares, strict=True):
        assert field.type == "radio"
        assert field.options == ("yes", "no")
        assert field.label is not None and field.label.endswith("?")
        assert [w.export for w in field.widgets or ()] == ["yes", "no"]
        for widget, square in zip(field.widgets or (), row, strict=True):
            assert viewcheck.iou(widget.rect, square) >= 0.5
    filled = Template(result.pdf).fill({"do_you_smoke": "no", "are_you_over_65": "yes"})
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    with viewcheck.Raster(shown) as raster:
        ticked = [[raster.ink(0, square) > 20 for square in row] for row in squares]
    assert ticked == [[False, True], [True, False], [False, False]]


@pytest.mark.parametrize("mode", MODES)
def test_any_option_columns_make_a_grid(mode: str) -> None:
    page = FlatPage()
    yes_no_grid(page, 700, ["Coffee", "Tea"], options=("Daily", "Weekly", "Never"))
    fields = detect(one_page(page), mode)
    assert [(f.name, f.type, f.options) for f in fields] == [
        ("coffee", "radio", ("daily", "weekly", "never")),
        ("tea", "radio", ("daily", "weekly", "never")),
    ], listing(fields)


@pytest.mark.parametrize("mode", MODES)
def test_boxes_with_labels_of_their_own_stay_checkboxes(mode: str) -> None:
    """Rows of ticked boxes each labelled beside it ("Email", "Post") are choices to tick,
    as many as apply: no column headers, no grid."""
    page = FlatPage()
    for row, (first, second) in enumerate((("Email", "Post"), ("Phone", "Text message"))):
        y = 700 - 20 * row
        for n, label in enumerate((first, second)):
            page.box((72 + 150 * n, y - 1, 82 + 150 * n, y + 9))
            page.text(88 + 150 * n, y, label)
    fields = detect(one_page(page), mode)
    assert [(f.name, f.type) for f in fields] == [
        ("email", "checkbox"), ("post", "checkbox"),
        ("phone", "checkbox"), ("text_message", "checkbox"),
    ], listing(fields)  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_a_date_format_hint_is_the_format_not_the_name(mode: str) -> None:
    page = FlatPage()
    page.text(72, 705, "Start date (DD.MM.YYYY)")
    page.box((200, 700, 320, 720))
    page.text(72, 665, "Date of birth (MM/DD/YYYY)")
    page.box((220, 660, 340, 680))
    flat = one_page(page)
    result = convert(flat, detect=mode)
    fields = {f.name: f for f in result.schema}
    assert sorted(fields) == ["date_of_birth", "start_date"], listing(result.schema)
    assert [fields[n].type for n in sorted(fields)] == ["date", "date"]
    assert fields["start_date"].date_format == "dd.mm.yyyy"
    assert fields["start_date"].label == "Start date"
    form = Template(result.pdf)
    assert form.date_format("start_date") == "dd.mm.yyyy"
    filled = form.fill({"start_date": "2026-03-01"})
    shown = viewcheck.flatten_with_pdfium(filled, drop_page_content=True)
    assert viewcheck.text_in_rect(shown, 0, fields["start_date"].rect) == "01.03.2026"
    # the schema says the format, so a reviewed schema builds the same form again
    schema = [f.to_dict() for f in result.schema]
    assert convert(flat, schema=schema).pdf == convert(flat, schema=schema).pdf
    assert Template(convert(flat, schema=schema).pdf).date_format("start_date") == "dd.mm.yyyy"


@pytest.mark.parametrize(
    ("label", "shown", "af_format"),
    [
        ("Date of birth (MM/DD/YYYY)", "Date of birth", "mm/dd/yyyy"),
        ("Start date (DD.MM.YYYY):", "Start date", "dd.mm.yyyy"),
        ("Date MM / DD / YYYY", "Date", "mm/dd/yyyy"),
        ("Issued (yyyy-mm-dd)", "Issued", "yyyy-mm-dd"),
        ("DOB mmddyyyy", "DOB", "mmddyyyy"),
        ("Expires MM/YY", "Expires", None),  # no day: not a date field's format
        ("MM/DD/YYYY", "MM/DD/YYYY", "mm/dd/yyyy"),  # a hint alone is the only label there is
        ("Commander", "Commander", None),
        ("Date of birth", "Date of birth", None),
    ],
)
def test_date_hints(label: str, shown: str, af_format: str | None) -> None:
    assert date_hint(label) == (shown, af_format)


@pytest.mark.parametrize("mode", MODES)
def test_fields_come_in_reading_order(mode: str) -> None:
    """Line by line, left to right, though boxes on one line differ in height and top."""
    page = FlatPage()
    for label, x, bottom, top in (
        ("City", 72, 700, 720),
        ("State", 260, 701, 717),
        ("Zip", 400, 699, 722),
    ):
        page.text(x, 705, label)
        page.box((x + 30, bottom, x + 120, top))
    for label, x in (("Phone", 72), ("Fax", 330)):
        page.text(x, 665, label)
        page.box((x + 40, 660, x + 200, 680))
    assert names(detect(one_page(page), mode)) == ["city", "state", "zip", "phone", "fax"]


def test_reading_order_of_boxes() -> None:
    # top-down page space: two on a line (the right one a little higher), one below
    boxes = [(300, 12, 400, 30), (10, 100, 90, 120), (10, 10, 90, 30)]
    assert reading_order(boxes) == [2, 0, 1]


def test_joined_names_keep_the_row_whole() -> None:
    head = "total_amount_of_everything_that_was_paid_this_year"
    assert joined_name(head, "12") == "total_amount_of_everything_that_was_12"
    assert len(joined_name(head, "12")) <= 40
    assert joined_name("", "3") == "row_3"


# --------------------------------------------------------------------------- own labels


def two_column_lines(page: FlatPage, y: float, second_label: str | None) -> None:
    """ "Name ____  Date of birth ____" on one line, and under it one line across the page,
    labelled ``second_label`` on its left (or not labelled at all)."""
    page.text(72, y, "Name")
    page.line(110, y - 3, 280, y - 3)
    page.text(300, y, "Date of birth")
    page.line(370, y - 3, 540, y - 3)
    if second_label is not None:
        page.text(72, y - 18, second_label)
    page.line(110, y - 21, 540, y - 21)


@pytest.mark.parametrize("mode", MODES)
def test_a_label_on_the_fields_own_line_wins_over_one_above(mode: str) -> None:
    """The E-mail line reaches under "Date of birth", printed on the line above; its own
    label sits beside it."""
    page = FlatPage()
    two_column_lines(page, 700, "E-mail")
    fields = {f.name: f for f in detect(one_page(page), mode)}
    assert sorted(fields) == ["date_of_birth", "e_mail", "name"], listing(list(fields.values()))
    assert (fields["e_mail"].type, fields["e_mail"].label) == ("text", "E-mail")
    assert fields["e_mail"].confidence >= 0.5  # its own label: nothing to flag
    assert fields["date_of_birth"].type == "date"


@pytest.mark.parametrize("mode", MODES)
def test_a_name_from_another_fields_label_is_a_low_confidence_guess(mode: str) -> None:
    """With no label of its own, the line under "Date of birth" is named from it, but it is
    no date, and it is flagged for review by its confidence."""
    page = FlatPage()
    two_column_lines(page, 700, None)
    fields = {f.name: f for f in detect(one_page(page), mode)}
    assert sorted(fields) == ["date_of_birth", "date_of_birth_2", "name"], listing(
        list(fields.values())
    )
    guess = fields["date_of_birth_2"]
    assert guess.type == "text" and guess.date_format is None
    assert guess.confidence < 0.5
    assert fields["date_of_birth"].type == "date"
    assert fields["date_of_birth"].confidence >= 0.5


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_writing_area_is_named_by_its_heading_not_its_instruction(
    mode: str, wrapped: bool
) -> None:
    page = FlatPage()
    page.text(72, 540, "Additional information", size=12)
    if wrapped:
        page.text(72, 524, "Tell us anything else you would like us to know about", size=9)
        page.text(72, 513, "your application, such as your previous jobs.", size=9)
        page.box((72, 400, 540, 508))
    else:
        page.text(72, 524, "Tell us anything else you would like us to know.", size=9)
        page.box((72, 400, 540, 518))
    (field,) = detect(one_page(page), mode)
    assert (field.name, field.label) == ("additional_information", "Additional information")
    assert field.multiline


@pytest.mark.parametrize("mode", MODES)
def test_a_long_question_keeps_its_meaning_in_its_name(mode: str) -> None:
    page = FlatPage()
    yes_no_grid(page, 700, ["Do you have any unspent criminal convictions?"])
    page.text(72, 605, "Name of employer, if self-employed write self")
    page.box((300, 600, 540, 620))
    fields = detect(one_page(page), mode)
    assert names(fields) == ["do_you_have_unspent_criminal_convictions", "name_of_employer"], (
        listing(fields)
    )


@pytest.mark.parametrize(
    ("label", "name"),
    [
        (
            "Do you have any unspent criminal convictions?",
            "do_you_have_unspent_criminal_convictions",
        ),
        ("Name of employer, if self-employed write self", "name_of_employer"),
        (
            "Name and address of the person to contact in an emergency",
            "name_and_address_of_person_to_contact",
        ),
        (
            "Have you ever been convicted of a criminal offence in the United Kingdom?",
            "have_you_ever_been_convicted",
        ),
        ("Tell us anything else you would like us to know", "tell_us_anything_else_you_would_like"),
        (
            "My name or other biographic information has been",
            "my_name_or_other_biographic_information",
        ),
        ("Married filing jointly (even if only one had income)", "married_filing_jointly"),
        ("S I G N A T U R E  O F  A P P L I C A N T S", "s_i_g_n_a_t_u_r_e_o_f_a_p_p_l_i_c_a_n_t"),
        ("1a Your first name and initial", "first_name_and_initial"),  # short: as it was
        ("Are you over 65?", "are_you_over_65"),
        ("Supercalifragilisticexpialidociouslyunreadablewords", ""),  # no word of a name
    ],
)
def test_long_labels_are_cut_where_the_meaning_stays_whole(label: str, name: str) -> None:
    assert snake(label) == name
    assert len(name) <= MAX_NAME
