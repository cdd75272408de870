"""The column rule on the command line: ``batch``'s columns and ``fill``'s keys fill fields by
name or by ``--map COLUMN=FIELD`` / ``--mapping FILE.json``; a column that looks like a field
no column fills is one clear error naming the ``--map`` that fixes it; other columns are
listed once as not used, and ``--strict-columns`` refuses them."""

from __future__ import annotations

import json
from pathlib import Path

from kits.cli_support import ROOT, assert_clean_error, run
from kits.tables import field_values, table, write_csv

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"


def batch(tmp_path: Path, header: list[str], *flags: object):
    cells = ["Ada", "ada@example.com", "x"][: len(header)]
    rows = write_csv(tmp_path / "rows.csv", table(header, cells))
    return run("batch", SAMPLE_FORM, rows, "--out-dir", tmp_path / "out", "--no-progress", *flags)


def test_a_near_name_is_one_line_naming_the_map_that_fixes_it(tmp_path: Path) -> None:
    done = batch(tmp_path, ["full_name", "Emial"])
    assert_clean_error(
        done,
        "fillpdf batch: error: column 'Emial' matches no field but looks like 'email', which "
        "no column fills: map it (--map 'Emial=email'), rename the column, or map it to nothing "
        "(--map 'Emial=') to leave it out. Nothing was filled.",
        only_line=True,
    )
    assert not (tmp_path / "out").exists()


def test_map_fills_the_field_and_leaves_nothing_unsaid(tmp_path: Path) -> None:
    done = batch(tmp_path, ["full_name", "Emial"], "--map", "Emial=email")
    assert done.returncode == 0, done.stderr
    assert "not used" not in done.stderr
    assert field_values(tmp_path / "out" / "1.pdf")["email"] == "ada@example.com"


def test_a_mapping_file_and_a_column_left_out(tmp_path: Path) -> None:
    mapping = tmp_path / "mapping.json"
    mapping.write_text(json.dumps({"customer": "full_name", "Emial": ""}), encoding="utf-8")
    done = batch(tmp_path, ["customer", "Emial"], "--mapping", mapping)
    assert done.returncode == 0, done.stderr
    values = field_values(tmp_path / "out" / "1.pdf")
    assert values["full_name"] == "Ada" and values["email"] in (None, "")


def test_other_columns_are_listed_once_and_strict_refuses_them(tmp_path: Path) -> None:
    done = batch(tmp_path, ["full_name", "email", "nickname"])
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("nickname") == 1
    assert "columns not used (they match no field): nickname" in done.stderr
    (tmp_path / "strict").mkdir()
    strict = batch(tmp_path / "strict", ["full_name", "email", "nickname"], "--strict-columns")
    assert_clean_error(
        strict, "column 'nickname' matches no field (strict columns)", "--map 'nickname='"
    )


def test_a_column_used_only_in_the_file_names_is_used(tmp_path: Path) -> None:
    done = batch(
        tmp_path, ["full_name", "email", "ref"], "--name-template", "{ref}.pdf", "--strict-columns"
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "x.pdf").exists() and "not used" not in done.stderr


def test_bad_map_flags_say_how_to_write_them(tmp_path: Path) -> None:
    assert_clean_error(batch(tmp_path, ["full_name"], "--map", "full_name"), "is not COLUMN=FIELD")
    assert_clean_error(
        batch(tmp_path, ["full_name", "mail"], "--map", "mail=emial"),
        "names a field the form does not have; did you mean 'email'?",
    )
    mapping = tmp_path / "m.json"
    mapping.write_text("[1]")
    assert_clean_error(batch(tmp_path, ["full_name"], "--mapping", mapping), "JSON object")


def test_fill_keys_follow_the_same_rule(tmp_path: Path) -> None:
    values = tmp_path / "values.json"
    out = tmp_path / "out.pdf"
    values.write_text(json.dumps({"Full Name": "Ada", "Emial": "a@b.c", "nickname": "a"}))
    assert_clean_error(
        run("fill", SAMPLE_FORM, "--values", values, "-o", out),
        "key 'Emial' matches no field but looks like 'email'", "--map 'Emial=email'",
    )  # fmt: skip
    assert not out.exists()
    done = run("fill", SAMPLE_FORM, "--values", values, "-o", out, "--map", "Emial=email")
    assert done.returncode == 0, done.stderr
    assert "keys not used (they match no field): nickname" in done.stderr
    assert field_values(out)["full_name"] == "Ada" and field_values(out)["email"] == "a@b.c"
    strict = run("fill", SAMPLE_FORM, "--values", values, "-o", out, "--map", "Emial=email",
                 "--strict-columns")  # fmt: skip
    assert_clean_error(strict, "'nickname' matches no field (strict columns)")


def test_fill_with_no_key_that_matches_is_refused(tmp_path: Path) -> None:
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"nickname": "a"}))
    done = run("fill", SAMPLE_FORM, "--values", values, "-o", tmp_path / "out.pdf")
    assert_clean_error(done, "No key of", "matches a field of the form", "--map KEY=FIELD")


def test_a_flat_pdf_is_refused_with_the_command_that_makes_it_fillable(tmp_path: Path) -> None:
    from kits.flatkit import flat_form

    flat = tmp_path / "flat.pdf"
    flat.write_bytes(flat_form(1))
    rows = write_csv(tmp_path / "rows.csv", table(["full_name"], ["Ada"]))
    values = tmp_path / "values.json"
    values.write_text('{"full_name": "Ada"}')
    fix = f"fillpdf convert {flat} -o {tmp_path / 'flat.fillable.pdf'}"
    for done in (
        run("batch", flat, rows, "--out-dir", tmp_path / "out"),
        run("fill", flat, "--values", values, "-o", tmp_path / "out.pdf"),
    ):
        assert_clean_error(done, "has no fillable fields", fix, only_line=True)
    assert not (tmp_path / "out").exists() and not (tmp_path / "out.pdf").exists()


def test_strict_columns_name_one_column_a_line_with_the_fields_that_fit(tmp_path: Path) -> None:
    extra = [f"extra{i}" for i in range(1, 11)]
    header = ["full_name", "email", "DOB", "Phone number", *extra]
    rows = write_csv(
        tmp_path / "rows.csv", table(header, ["Ada", "ada@example.com", "1990-01-02", "1", *extra])
    )
    done = run("batch", SAMPLE_FORM, rows, "--out-dir", tmp_path / "out", "--no-progress",
               "--strict-columns")  # fmt: skip
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    head, *lines = done.stderr.splitlines()
    assert head == (
        "fillpdf batch: error: 12 columns to fix. Nothing was filled. `fillpdf inspect "
        "FORM.pdf` lists the fields."
    )
    assert len(lines) == 11 and lines[-1] == "  and 2 more columns", done.stderr
    assert all(line.startswith("  column ") for line in lines[:10])
    assert max(map(len, lines)) < 300  # a line a person reads, not one of 2,000 characters
    assert "'DOB' matches no field (strict columns) but fits 'date_of_birth'" in lines[0]
    assert "(--map 'DOB=date_of_birth')" in lines[0] and "(--map 'DOB=')" in lines[0]
    assert "but fits 'phone'" in lines[1] and "(--map 'Phone number=phone')" in lines[1]
    assert "column 'extra1' matches no field (strict columns): map it to a field" in lines[2]
    assert "extra9" not in done.stderr  # the 11th and 12th are counted, not named
    assert not (tmp_path / "out").exists()


def test_a_column_whose_field_another_fills_says_which(tmp_path: Path) -> None:
    header = ["full_name", "internal_id", "E-mail"]
    rows = write_csv(tmp_path / "rows.csv", table(header, ["Ada", "id@example.com", "a@b.c"]))
    done = run("batch", SAMPLE_FORM, rows, "--out-dir", tmp_path / "out", "--no-progress",
               "--map", "internal_id=email")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "column 'E-mail' not used: it matches 'email', which column 'internal_id' already fills"
        in done.stderr
    )
    assert "match no field" not in done.stderr
    assert field_values(tmp_path / "out" / "1.pdf")["email"] == "id@example.com"
    strict = run("batch", SAMPLE_FORM, rows, "--out-dir", tmp_path / "strict", "--no-progress",
                 "--map", "internal_id=email", "--strict-columns")  # fmt: skip
    assert_clean_error(
        strict,
        "column 'E-mail' matches 'email', which column 'internal_id' already fills (strict "
        "columns): map it to another field (--map 'E-mail=FIELD') or to nothing "
        "(--map 'E-mail=')",
        only_line=True,
    )


def test_the_help_names_batch_columns_and_fill_keys(tmp_path: Path) -> None:
    batch_help = " ".join(run("batch", "--help").stdout.split())
    assert '--mapping FILE.json a JSON file of {"COLUMN": "FIELD"}' in batch_help
    assert "--map COLUMN=FIELD fill FIELD from the column COLUMN" in batch_help
    assert 'column COLUMN"' not in batch_help
    fill_help = " ".join(run("fill", "--help").stdout.split())
    assert '--mapping FILE.json a JSON file of {"KEY": "FIELD"}' in fill_help
    assert "--map KEY=FIELD fill FIELD from the key KEY" in fill_help
    assert "a key that matches no field is an error" in fill_help
    assert "COLUMN" not in fill_help


def test_fill_calls_its_keys_keys(tmp_path: Path) -> None:
    values = tmp_path / "values.json"
    values.write_text(json.dumps({"full_name": "Ada", "Emial": "a@b.c", "DOB": "1990-01-02"}))
    out = tmp_path / "out.pdf"
    done = run("fill", SAMPLE_FORM, "--values", values, "-o", out, "--strict-columns")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    head, *lines = done.stderr.splitlines()
    assert head.startswith("fillpdf fill: error: 2 keys to fix.")
    assert lines[0].startswith(
        "  key 'Emial' matches no field but looks like 'email', which no key fills: map it "
        "(--map 'Emial=email'), rename the key"
    )
    assert lines[1].startswith("  key 'DOB' matches no field (strict columns) but fits")
    assert "column" not in done.stderr.replace("(strict columns)", "")
    assert_clean_error(run("fill", SAMPLE_FORM, "--values", values, "-o", out, "--map", "DOB"),
                       "--map 'DOB' is not KEY=FIELD", "leaves the key notes out")  # fmt: skip
    mapping = tmp_path / "m.json"
    mapping.write_text("[1]")
    assert_clean_error(
        run("fill", SAMPLE_FORM, "--values", values, "-o", out, "--mapping", mapping),
        'must hold a JSON object of {"KEY": "FIELD"}', "leaves the key out",
    )  # fmt: skip
    note = run("fill", SAMPLE_FORM, "--values", values, "-o", out, "--map", "Emial=email",
               "--map", "internal=full_name", "--map", "full_name=")  # fmt: skip
    assert note.returncode == 1, note.stderr  # the mapping names a key the values lack
    assert "column" not in note.stderr
