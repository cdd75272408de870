"""Which column fills which field (``engine.columns``), as a batch applies it: by name (case,
spaces and punctuation set aside) or by mapping; a column that looks like a field no column
fills refuses the batch with the fix; any other is listed once as not used (strict: refused);
suggestions pair one column with one field and numbers agree."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fillpdf_provider.engine import ColumnError, Field, FieldError, FieldValueError, Template
from fillpdf_provider.engine.batch import fill_rows
from fillpdf_provider.engine.columns import plan_columns, similarity
from kits.cli_support import ROOT
from kits.tables import field_values, table, write_csv

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"


@pytest.fixture(scope="module")
def template() -> Template:
    return Template.open(SAMPLE_FORM)


def text_fields(*names: str) -> list[Field]:
    return [Field(name, "text", 0, (0, 0, 10, 10)) for name in names]


# --------------------------------------------------------------------------- matching


def test_columns_fill_fields_of_their_name_whatever_the_case_and_punctuation(
    template: Template, tmp_path: Path
) -> None:
    rows = write_csv(
        tmp_path / "rows.csv",
        table(["Full Name", "E-Mail", "ZIP"], ["Ada", "ada@example.com", "12"]),
    )
    summary = fill_rows(template, rows, tmp_path / "out")
    assert (summary.ok, summary.unused_columns) == (1, [])
    values = field_values(tmp_path / "out" / "1.pdf")
    assert (values["full_name"], values["email"], values["zip"]) == ("Ada", "ada@example.com", "12")
    assert "phone" in summary.unfilled_fields  # no column: left as the form has it
    assert values["phone"] in (None, "")


def test_no_matching_column_refuses_the_batch(template: Template, tmp_path: Path) -> None:
    rows = write_csv(tmp_path / "rows.csv", table(["nickname", "Emial"], ["a", "ada@example.com"]))
    out_dir = tmp_path / "out"
    with pytest.raises(FieldError) as caught:
        fill_rows(template, rows, out_dir)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("No column of the rows matches a field")
    assert "column 'Emial' matches no field (did you mean 'email'?)" in message
    assert "; column 'nickname' matches no field. Name the columns" in message
    assert not out_dir.exists()


def test_no_matching_parquet_column_refuses_too(template: Template, tmp_path: Path) -> None:
    pq.write_table(pa.table({"FulName ": ["Ada"]}), tmp_path / "rows.parquet")
    with pytest.raises(FieldError, match="did you mean 'full_name'"):
        fill_rows(template, tmp_path / "rows.parquet", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_many_unmatched_columns_are_cut_short(template: Template, tmp_path: Path) -> None:
    header = [f"col{i}" for i in range(30)]
    rows = write_csv(tmp_path / "rows.csv", table(header, ["x"] * 30))
    with pytest.raises(FieldError, match="and 20 more columns"):
        fill_rows(template, rows, tmp_path / "out")


def test_a_header_without_rows_is_still_an_empty_batch(template: Template, tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("full_name,email\n", encoding="utf-8")
    summary = fill_rows(template, rows, tmp_path / "out")
    assert (summary.rows, summary.failed) == (0, 0)


# --------------------------------------------------------------------------- near names


def test_a_column_that_looks_like_a_field_no_column_fills_refuses_the_batch(
    template: Template, tmp_path: Path
) -> None:
    rows = write_csv(
        tmp_path / "rows.csv", table(["full_name", "Emial", "nickname"], ["Ada", "a@b.c", "a"])
    )
    with pytest.raises(ColumnError) as caught:
        fill_rows(template, rows, tmp_path / "out")
    assert str(caught.value) == (
        "column 'Emial' matches no field but looks like 'email', which no column fills: map "
        "it (mapping={'Emial': 'email'}), rename the column, or map it to nothing "
        "(mapping={'Emial': ''}) to leave it out. Nothing was filled. `fillpdf inspect "
        "FORM.pdf` lists the fields."
    )
    assert not (tmp_path / "out").exists()


def test_the_mapping_the_error_names_fills_the_field(template: Template, tmp_path: Path) -> None:
    rows = write_csv(tmp_path / "rows.csv", table(["full_name", "Emial"], ["Ada", "a@b.c"]))
    summary = fill_rows(template, rows, tmp_path / "out", mapping={"Emial": "email"})
    assert (summary.ok, summary.unused_columns) == (1, [])
    assert field_values(tmp_path / "out" / "1.pdf")["email"] == "a@b.c"


def test_a_column_mapped_to_nothing_is_left_out(template: Template, tmp_path: Path) -> None:
    rows = write_csv(tmp_path / "rows.csv", table(["full_name", "Emial"], ["Ada", "a@b.c"]))
    summary = fill_rows(template, rows, tmp_path / "out", mapping={"Emial": ""})
    assert (summary.ok, summary.unused_columns) == (1, [])
    assert field_values(tmp_path / "out" / "1.pdf")["email"] in (None, "")


def test_other_columns_are_listed_once_as_not_used_and_strict_refuses_them(
    template: Template, tmp_path: Path
) -> None:
    rows = write_csv(
        tmp_path / "rows.csv", table(["full_name", "nickname", "id"], ["Ada", "a", "7"])
    )
    summary = fill_rows(template, rows, tmp_path / "out")
    assert summary.unused_columns == ["nickname", "id"]
    assert summary.as_dict()["unused_columns"] == ["nickname", "id"]
    with pytest.raises(ColumnError, match=r"column 'nickname' matches no field \(strict"):
        fill_rows(template, rows, tmp_path / "strict", strict_columns=True)
    assert not (tmp_path / "strict").exists()


def test_a_column_the_file_names_use_is_used(template: Template, tmp_path: Path) -> None:
    rows = write_csv(tmp_path / "rows.csv", table(["full_name", "customer_id"], ["Ada", "c-7"]))
    summary = fill_rows(
        template, rows, tmp_path / "out", name_template="{customer_id}.pdf", strict_columns=True
    )
    assert (summary.ok, summary.unused_columns) == (1, [])
    assert (tmp_path / "out" / "c-7.pdf").exists()


# --------------------------------------------------------------------------- suggestions


def test_suggestions_pair_one_column_with_one_field_and_numbers_agree() -> None:
    fields = text_fields(
        "email_address", "item1_description", "item1_quantity", "item1_price", "item3_price"
    )
    columns = ["item1_desc", "item1_qty", "item3_desc", "unit_price_3"]
    plan = plan_columns(columns, fields)
    assert plan.near == {"item1_desc": "item1_description", "item1_qty": "item1_quantity"}
    assert plan.not_used == ["item3_desc", "unit_price_3"]
    assert similarity("item1_desc", "email_address") == 0
    assert similarity("unit_price_3", "item1_price") == 0  # numbers disagree
    assert similarity("item3_desc", "item1_description") == 0


def test_a_column_that_only_shares_a_word_with_a_field_is_no_mistake(
    template: Template, tmp_path: Path
) -> None:
    """Extra columns are normal: one that shares a word, or two letters, with a field is
    listed as not used, never a reason to refuse the batch."""
    extra = ["No", "photo", "plan_price", "signature_date", "age", "co", "zip_code"]
    rows = write_csv(
        tmp_path / "rows.csv", table(["full_name", "email", *extra], ["Ada", "a@b.c", *"1234567"])
    )
    summary = fill_rows(template, rows, tmp_path / "out")
    assert (summary.ok, summary.unused_columns) == (1, extra)


def test_two_columns_as_like_one_field_get_neither() -> None:
    plan = plan_columns(["Phone (mobile)", "Phone (home)"], text_fields("phone_number"))
    assert plan.near == {} and plan.not_used == ["Phone (mobile)", "Phone (home)"]


def test_no_column_is_taken_for_a_signature() -> None:
    fields = [Field("signature", "signature", 0, (0, 0, 10, 10))]
    assert plan_columns(["signatur"], fields).near == {}


def test_two_columns_never_share_a_suggestion() -> None:
    plan = plan_columns(["Emial", "emial_2nd"], text_fields("email"))
    assert plan.near == {"Emial": "email"} and plan.not_used == ["emial_2nd"]


def test_a_column_as_like_two_fields_gets_neither() -> None:
    plan = plan_columns(["name"], text_fields("first_name", "last_name"))
    assert plan.near == {} and plan.not_used == ["name"]


def test_a_filled_field_is_suggested_for_no_other_column() -> None:
    plan = plan_columns(["email", "Emial"], text_fields("email"))
    assert plan.pairs == {"email": "email"} and plan.not_used == ["Emial"]


def test_a_strict_error_names_the_unfilled_fields_that_fit_each_column() -> None:
    """Initials and words within words, looser than a suggestion: a hint, never a match."""
    fields = [
        *text_fields("date_of_birth", "phone", "first_name", "last_name", "item2_price"),
        Field("sign_here", "signature", 0, (0, 0, 10, 10)),
    ]
    columns = ["DOB", "Phone number", "name", "dob2", "nickname", "item_price", "Sign", "ID"]
    plan = plan_columns(columns, fields)
    assert plan.near == {} and plan.not_used == columns
    assert plan.fits == {
        "DOB": ["date_of_birth"],  # its initials
        "Phone number": ["phone"],  # the field's words within the column's
        "name": ["first_name", "last_name"],
    }  # numbers disagree (dob2, item_price), no word within another, never a signature
    with pytest.raises(ColumnError) as caught:
        plan.check(strict=True)
    lines = str(caught.value).splitlines()
    assert lines[0].startswith("8 columns to fix. Nothing was filled.")
    assert lines[1] == (
        "  column 'DOB' matches no field (strict columns) but fits 'date_of_birth', which no "
        "column fills: map it (mapping={'DOB': 'date_of_birth'}) or to nothing "
        "(mapping={'DOB': ''}) to leave it out"
    )
    assert "but fits 'first_name' or 'last_name', which no column fills" in lines[3]
    assert len(lines) == 9


def test_a_strict_error_shows_ten_columns_a_line_each_then_counts() -> None:
    plan = plan_columns([f"extra{i}" for i in range(1, 14)], text_fields("email"), {})
    with pytest.raises(ColumnError) as caught:
        plan.check(strict=True)
    lines = str(caught.value).splitlines()
    assert len(lines) == 12 and lines[-1] == "  and 3 more columns"
    assert [line.split("'")[1] for line in lines[1:11]] == [f"extra{i}" for i in range(1, 11)]


def test_a_column_whose_field_another_column_fills_is_named_so() -> None:
    plan = plan_columns(["internal_id", "E-mail"], text_fields("email"), {"internal_id": "email"})
    assert plan.not_used == ["E-mail"] and plan.shadowed == {"E-mail": ("email", "internal_id")}
    assert plan.not_used_note() == (
        "column 'E-mail' not used: it matches 'email', which column 'internal_id' already fills"
    )
    with pytest.raises(ColumnError, match="column 'E-mail' matches 'email', which column "
                       "'internal_id' already fills \\(strict columns\\)"):  # fmt: skip
        plan.check(strict=True)


# --------------------------------------------------------------------------- mappings


def test_a_mapping_to_a_field_the_form_lacks_is_refused_with_the_field() -> None:
    with pytest.raises(FieldValueError, match="did you mean 'email'"):
        plan_columns(["mail"], text_fields("email"), {"mail": "emails"})


def test_a_mapping_from_a_column_the_rows_lack_is_refused_with_the_column() -> None:
    with pytest.raises(FieldError, match="column 'Mail' the rows lack; did you mean 'mail'"):
        plan_columns(["mail"], text_fields("email"), {"Mail": "email"})


def test_two_columns_mapped_to_one_field_are_refused() -> None:
    with pytest.raises(FieldError, match="fills 'email' from 2 columns"):
        plan_columns(["a", "b"], text_fields("email"), {"a": "email", "b": "email"})


def test_a_mapping_wins_over_a_column_of_the_fields_name() -> None:
    plan = plan_columns(["email", "work_mail"], text_fields("email"), {"work_mail": "email"})
    assert plan.pairs == {"work_mail": "email"} and plan.not_used == ["email"]
