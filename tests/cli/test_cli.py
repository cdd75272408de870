"""The ``fillpdf`` console script, run as a user runs it: the installed entry point."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import subprocess
from pathlib import Path

import pdfplumber
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fillpdf_provider.engine import inspect
from kits import formedit, viewcheck
from kits.cli_support import ROOT, assert_clean_error, run
from kits.formkit import Spec, build_form
from kits.tables import write_csv

SAMPLE_FORM = ROOT / "include" / "sample_form.pdf"
SAMPLE_ROWS = ROOT / "include" / "sample_rows.csv"
MANIFEST_COLUMNS = ["row", "path", "sha256", "pages", "bytes", "status", "error", "cut"]
UNSAFE = re.compile(r"[^\w.\- ]+")


def sample_rows() -> list[dict[str, str]]:
    with SAMPLE_ROWS.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def manifest(out_dir: Path) -> list[dict[str, object]]:
    return pq.read_table(out_dir / "manifest.parquet").to_pylist()


# --------------------------------------------------------------------------- inspect


def test_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    assert re.fullmatch(r"fillpdf \d+\.\d+\.\d+\S*", done.stdout.strip())


def test_inspect_json_prints_the_schema_entries() -> None:
    done = run("inspect", SAMPLE_FORM, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert list(data) == ["fields"]
    assert data["fields"] == [f.to_dict() for f in inspect(SAMPLE_FORM)]
    names = [f["name"] for f in data["fields"]]
    assert names[:3] == ["full_name", "date_of_birth", "email"]
    assert {"plan", "interests", "newsletter", "photo_consent", "signature"} <= set(names)


def test_inspect_json_keeps_non_ascii_readable(tmp_path: Path) -> None:
    spec = Spec("sprache", "listbox", (40, 600, 240, 680), options=["Deutsch", "Ελληνικά"])
    form = tmp_path / "form.pdf"
    form.write_bytes(build_form([spec]))
    done = run("inspect", form, "--json")
    assert "Ελληνικά" in done.stdout
    assert json.loads(done.stdout)["fields"][0]["options"] == ["Deutsch", "Ελληνικά"]


def test_inspect_table_lists_every_field() -> None:
    done = run("inspect", SAMPLE_FORM)
    assert done.returncode == 0, done.stderr
    for field in inspect(SAMPLE_FORM):
        assert field.name in done.stdout
    assert done.stdout.strip().endswith(f"{len(inspect(SAMPLE_FORM))} fields")


def test_inspect_flat_pdf_json_is_empty(tmp_path: Path) -> None:
    flat = tmp_path / "flat.pdf"
    flat.write_bytes(formedit.flat_pdf())
    done = run("inspect", flat, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"fields": []}


# --------------------------------------------------------------------------- fill


def test_fill_writes_the_values(tmp_path: Path) -> None:
    values = {"full_name": "Zoë Ångström", "newsletter": True, "plan": "Premium", "zip": "12345"}
    (tmp_path / "v.json").write_text(json.dumps(values), encoding="utf-8")
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", tmp_path / "out.pdf")
    assert done.returncode == 0, done.stderr
    out = (tmp_path / "out.pdf").read_bytes()
    stored = formedit.stored_values(out)
    assert stored["full_name"] == "Zoë Ångström"
    assert stored["newsletter"] == "/Yes"
    assert stored["plan"] == "/Premium"
    assert formedit.acroform(out) is not None


def test_fill_flatten(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text('{"full_name": "Flat Name", "city": "Αθήνα"}', "utf-8")
    out = tmp_path / "out.pdf"
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", out, "--flatten")
    assert done.returncode == 0, done.stderr
    assert viewcheck.count_widgets(out.read_bytes()) == (False, 0)
    with pdfplumber.open(io.BytesIO(out.read_bytes())) as doc:
        text = doc.pages[0].extract_text()
    assert "Flat Name" in text and "Αθήνα" in text


def test_fill_unknown_field_suggests_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text('{"ful_name": "x"}', encoding="utf-8")
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", tmp_path / "out.pdf")
    assert_clean_error(done, "'ful_name'", "'full_name'")
    assert not (tmp_path / "out.pdf").exists()


def test_fill_wrong_type(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text('{"newsletter": "maybe"}', encoding="utf-8")
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", tmp_path / "out.pdf")
    assert_clean_error(done, "'newsletter'")
    assert not (tmp_path / "out.pdf").exists()


@pytest.mark.parametrize(
    ("content", "needle"),
    [(None, "No such values file"), ("{not json", "not valid JSON"), ("[1, 2]", "JSON object")],
    ids=["missing", "invalid", "array"],
)
def test_fill_bad_values_file(tmp_path: Path, content: str | None, needle: str) -> None:
    values = tmp_path / "v.json"
    if content is not None:
        values.write_text(content, encoding="utf-8")
    done = run("fill", SAMPLE_FORM, "--values", values, "-o", tmp_path / "out.pdf")
    assert_clean_error(done, needle)


def test_fill_into_a_folder_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text('{"full_name": "x"}', encoding="utf-8")
    (tmp_path / "taken").mkdir()
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", tmp_path / "taken")
    assert_clean_error(done)


# --------------------------------------------------------------------------- bad files


def test_missing_form(tmp_path: Path) -> None:
    assert_clean_error(run("inspect", tmp_path / "missing.pdf"), "missing.pdf")
    done = run("batch", tmp_path / "missing.pdf", SAMPLE_ROWS, "--out-dir", tmp_path / "o")
    assert_clean_error(done, "missing.pdf")


def test_not_a_pdf(tmp_path: Path) -> None:
    fake = tmp_path / "fake.pdf"
    fake.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    assert_clean_error(run("inspect", fake, "--json"), "not a PDF")


def test_encrypted_form(tmp_path: Path) -> None:
    locked = tmp_path / "locked.pdf"
    locked.write_bytes(
        build_form([Spec("a", "text", (40, 700, 290, 716))], encrypt_user_password="pw")
    )
    assert_clean_error(run("inspect", locked), "password")


def test_no_form_points_to_a_command_that_exists(tmp_path: Path) -> None:
    flat = tmp_path / "flat.pdf"
    flat.write_bytes(formedit.flat_pdf())
    (tmp_path / "v.json").write_text("{}", encoding="utf-8")
    done = run("fill", flat, "--values", tmp_path / "v.json", "-o", tmp_path / "out.pdf")
    assert_clean_error(done, "no fillable fields")
    suggested = re.findall(r"`fillpdf (\w+)", done.stderr)
    for command in suggested:
        assert run(command, "--help").returncode == 0, f"`fillpdf {command}` does not exist"


def test_bad_usage_exits_2() -> None:
    assert run().returncode == 2
    assert run("fill", SAMPLE_FORM).returncode == 2


# --------------------------------------------------------------------------- batch


@pytest.fixture(scope="module")
def sample_batch(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    out_dir = tmp_path_factory.mktemp("batch") / "out"
    return out_dir, run("batch", SAMPLE_FORM, SAMPLE_ROWS, "--out-dir", out_dir)


def test_batch_fills_every_row(sample_batch: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out_dir, done = sample_batch
    assert done.returncode == 0, done.stderr
    pdfs = sorted(p.name for p in out_dir.glob("*.pdf"))
    assert pdfs == sorted(f"{i}.pdf" for i in range(1, 26))
    assert sorted(p.name for p in out_dir.iterdir()) == sorted([*pdfs, "manifest.parquet"])


def test_batch_prints_a_one_line_summary(
    sample_batch: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    _, done = sample_batch
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 1
    assert "25 of 25" in lines[0] and "0 failed" in lines[0]


def test_batch_manifest(sample_batch: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    out_dir, _ = sample_batch
    table = pq.read_table(out_dir / "manifest.parquet")
    assert table.column_names == MANIFEST_COLUMNS
    records = table.to_pylist()
    assert [r["row"] for r in records] == list(range(1, 26))
    for record in records:
        data = (out_dir / record["path"]).read_bytes()
        assert record["sha256"] == hashlib.sha256(data).hexdigest()
        assert record["bytes"] == len(data)
        assert record["pages"] == 1
        assert record["status"] == "ok"
        assert record["error"] is None


def test_batch_pdfs_hold_their_rows(
    sample_batch: tuple[Path, subprocess.CompletedProcess[str]],
) -> None:
    out_dir, _ = sample_batch
    rows = sample_rows()
    for number in (1, 3, 5, 7):
        stored = formedit.stored_values((out_dir / f"{number}.pdf").read_bytes())
        row = rows[number - 1]
        assert stored["full_name"] == row["full_name"]
        assert stored["country"] == row["country"]
        assert stored["plan"] == "/" + row["plan"]
        assert stored["notes"] == (row["notes"] or None)


def test_batch_name_template_and_flatten(tmp_path: Path) -> None:
    out_dir = tmp_path / "named"
    done = run(
        "batch",
        SAMPLE_FORM,
        SAMPLE_ROWS,
        "--out-dir",
        out_dir,
        "--name-template",
        "{row}-{full_name}.pdf",
        "--flatten",
    )
    assert done.returncode == 0, done.stderr
    records = manifest(out_dir)
    expected = [
        f"{i}-{UNSAFE.sub('_', r['full_name'])}.pdf" for i, r in enumerate(sample_rows(), 1)
    ]
    assert [r["path"] for r in records] == expected
    assert "1-Emily Clarke.pdf" in expected and "4-Liam O_Brien.pdf" in expected
    for record in records[:3]:
        data = (out_dir / record["path"]).read_bytes()
        assert viewcheck.count_widgets(data) == (False, 0)


def test_batch_names_are_made_safe_and_unique(tmp_path: Path) -> None:
    rows = [
        {"full_name": name, "email": "a@example.org"} for name in ("Ann/Lee", "Ann/Lee", "../up")
    ]
    write_csv(tmp_path / "rows.csv", rows)
    out_dir = tmp_path / "o"
    done = run(
        "batch",
        SAMPLE_FORM,
        tmp_path / "rows.csv",
        "--out-dir",
        out_dir,
        "--name-template",
        "{full_name}.pdf",
    )
    assert done.returncode == 0, done.stderr
    paths = [r["path"] for r in manifest(out_dir)]
    assert len(set(paths)) == 3
    assert all("/" not in p and not p.startswith(".") for p in paths), paths
    assert sorted(p.name for p in out_dir.glob("*.pdf")) == sorted(paths)
    assert not (tmp_path / "up.pdf").exists()


def test_batch_parquet_rows(tmp_path: Path) -> None:
    rows = sample_rows()[:6]
    truth = [True, False, True, False, True, False]
    table = pa.table(
        {
            "full_name": [r["full_name"] for r in rows],
            "plan": [r["plan"] for r in rows],
            "zip": [int(r["zip"]) for r in rows],  # a number, not text
            "newsletter": truth,
        }
    )
    pq.write_table(table, tmp_path / "rows.parquet")
    done = run("batch", SAMPLE_FORM, tmp_path / "rows.parquet", "--out-dir", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    for i, (row, ticked) in enumerate(zip(rows, truth, strict=True), 1):
        stored = formedit.stored_values((tmp_path / "o" / f"{i}.pdf").read_bytes())
        assert stored["full_name"] == row["full_name"]
        assert stored["zip"] == row["zip"]
        assert stored["newsletter"] == ("/Yes" if ticked else "/Off")


CHECKBOX_CELLS = {
    "true": True,
    "TRUE": True,
    "yes": True,
    "Yes": True,
    "1": True,
    "x": True,
    "X": True,
    "false": False,
    "no": False,
    "0": False,
    "": False,
}


def test_batch_checkbox_spellings(tmp_path: Path) -> None:
    rows = [{"full_name": f"Row {i}", "newsletter": cell} for i, cell in enumerate(CHECKBOX_CELLS)]
    write_csv(tmp_path / "rows.csv", rows)
    done = run("batch", SAMPLE_FORM, tmp_path / "rows.csv", "--out-dir", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    for i, (cell, ticked) in enumerate(CHECKBOX_CELLS.items(), 1):
        stored = formedit.stored_values((tmp_path / "o" / f"{i}.pdf").read_bytes())
        assert str(stored["newsletter"] or "/Off") == ("/Yes" if ticked else "/Off"), cell


def test_batch_csv_with_byte_order_mark_keeps_text_as_text(tmp_path: Path) -> None:
    # spreadsheet exports start with a BOM; a zip code must keep its leading zero
    (tmp_path / "rows.csv").write_bytes("\ufeffzip,full_name\n01234,Anna\n".encode())
    done = run("batch", SAMPLE_FORM, tmp_path / "rows.csv", "--out-dir", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    stored = formedit.stored_values((tmp_path / "o" / "1.pdf").read_bytes())
    assert stored["zip"] == "01234"
    assert stored["full_name"] == "Anna"


@pytest.fixture(scope="module")
def bad_rows(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rows = sample_rows()[:6]
    rows[2]["plan"] = "Gold"  # row 3
    return write_csv(tmp_path_factory.mktemp("bad") / "rows.csv", rows)


def test_batch_records_a_bad_row_and_goes_on(bad_rows: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    done = run("batch", SAMPLE_FORM, bad_rows, "--out-dir", out_dir)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    records = manifest(out_dir)
    assert [r["row"] for r in records] == [1, 2, 3, 4, 5, 6]
    assert [r["status"] for r in records] == ["ok", "ok", "error", "ok", "ok", "ok"]
    bad = records[2]
    assert bad["path"] is None and bad["sha256"] is None
    assert "'plan'" in bad["error"] and "'Gold'" in bad["error"]
    assert sorted(p.name for p in out_dir.glob("*.pdf")) == [
        "1.pdf",
        "2.pdf",
        "4.pdf",
        "5.pdf",
        "6.pdf",
    ]
    assert "5 of 6" in done.stdout and "1 failed" in done.stdout
    assert "row 3" in done.stderr


def test_batch_on_error_fail_stops_at_the_bad_row(bad_rows: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    done = run("batch", SAMPLE_FORM, bad_rows, "--out-dir", out_dir, "--on-error", "fail")
    assert_clean_error(done, "row 3", "'Gold'")
    assert sorted(p.name for p in out_dir.glob("*.pdf")) == ["1.pdf", "2.pdf"]


def test_batch_reports_unmapped_columns(tmp_path: Path) -> None:
    rows = [{"full_name": "A", "nickname": "a"}, {"full_name": "B", "nickname": "b"}]
    write_csv(tmp_path / "rows.csv", rows)
    done = run("batch", SAMPLE_FORM, tmp_path / "rows.csv", "--out-dir", tmp_path / "o")
    assert done.returncode == 0, done.stderr
    assert "nickname" in done.stderr


@pytest.mark.parametrize(
    ("rows_name", "extra", "needle"),
    [
        ("missing.csv", (), "missing.csv"),
        ("rows.xlsx", (), ".csv or .parquet"),
        ("rows.csv", ("--name-template", "{nope}.pdf"), "nope"),
    ],
    ids=["missing-rows", "unsupported-rows", "unknown-column-in-name"],
)
def test_batch_that_cannot_start_leaves_no_output(
    tmp_path: Path, rows_name: str, extra: tuple[str, ...], needle: str
) -> None:
    if rows_name != "missing.csv":
        (tmp_path / rows_name).write_bytes(SAMPLE_ROWS.read_bytes())
    out_dir = tmp_path / "o"
    done = run("batch", SAMPLE_FORM, tmp_path / rows_name, "--out-dir", out_dir, *extra)
    assert_clean_error(done, needle)
    assert not out_dir.exists() or not any(out_dir.iterdir()), sorted(out_dir.iterdir())


def test_batch_out_dir_that_is_a_file_is_a_clean_error(tmp_path: Path) -> None:
    (tmp_path / "taken").write_text("not a folder")
    done = run("batch", SAMPLE_FORM, SAMPLE_ROWS, "--out-dir", tmp_path / "taken")
    assert_clean_error(done)


# --------------------------------------------------------------------------- overflow

LONG_SIGNATURE = "W" * 200  # the signature line holds about 78 characters at 4 pt


def test_fill_overflow_shrink_writes_the_pdf_and_names_the_fields_cut(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text(json.dumps({"signature": LONG_SIGNATURE}), "utf-8")
    out = tmp_path / "out.pdf"
    done = run(
        "fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", out, "--overflow", "shrink"
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b"%PDF-")
    notes = [line for line in done.stderr.splitlines() if line.startswith("note:")]
    assert notes == ["note: text cut to fit its box in 'signature' (--overflow shrink)"]
    assert done.stdout == ""


def test_fill_overflow_is_an_error_by_default_naming_the_field_and_the_flag(
    tmp_path: Path,
) -> None:
    (tmp_path / "v.json").write_text(json.dumps({"signature": LONG_SIGNATURE}), "utf-8")
    out = tmp_path / "out.pdf"
    done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", out)
    assert_clean_error(
        done, "'signature'", "200 characters", "--overflow shrink or truncate", only_line=True
    )
    assert "overflow policy" not in done.stderr  # the engine's words, put as the flag
    assert not out.exists()
    smaller = run(
        "fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", out, "--min-font-size", "1"
    )
    assert smaller.returncode == 0 and "note:" not in smaller.stderr  # it fits at 1.6 pt


def test_fill_overflow_truncate_draws_fewer_characters_than_shrink(tmp_path: Path) -> None:
    (tmp_path / "v.json").write_text(json.dumps({"signature": LONG_SIGNATURE}), "utf-8")
    drawn = {}
    for policy in ("shrink", "truncate"):
        out = tmp_path / f"{policy}.pdf"
        done = run("fill", SAMPLE_FORM, "--values", tmp_path / "v.json", "-o", out,
                   "--overflow", policy, "--flatten")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"(--overflow {policy})" in done.stderr
        with pdfplumber.open(out) as doc:
            drawn[policy] = (doc.pages[0].extract_text() or "").count("W")
    assert 0 < drawn["truncate"] < drawn["shrink"] < len(LONG_SIGNATURE)


def test_batch_overflow_truncate_lists_the_fields_cut_in_the_manifest(tmp_path: Path) -> None:
    rows = [
        {"full_name": "Ada", "signature": "Ada"},
        {"full_name": "Bo", "signature": LONG_SIGNATURE},
    ]
    write_csv(tmp_path / "rows.csv", rows)
    out_dir = tmp_path / "o"
    done = run("batch", SAMPLE_FORM, tmp_path / "rows.csv", "--out-dir", out_dir,
               "--overflow", "truncate")  # fmt: skip
    assert done.returncode == 0, done.stderr
    records = manifest(out_dir)
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert [r["cut"] for r in records] == [None, ["signature"]]
    assert "2 of 2" in done.stdout and "1 with text cut to fit" in done.stdout
    default = run("batch", SAMPLE_FORM, tmp_path / "rows.csv", "--out-dir", tmp_path / "d")
    assert default.returncode == 1
    assert "row 2: Field 'signature'" in default.stderr and "--overflow" in default.stderr


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (("--overflow", "clip"), "invalid choice: 'clip'"),
        (("--min-font-size", "0"), "'0' is not a size from 0.5 to 72 pt"),
        (("--min-font-size", "small"), "'small' is not a size"),
    ],
    ids=["policy", "size", "not-a-number"],
)
@pytest.mark.parametrize("command", ["fill", "batch"])
def test_a_bad_overflow_flag_is_bad_usage(
    tmp_path: Path, command: str, flags: tuple[str, str], needle: str
) -> None:
    (tmp_path / "v.json").write_text("{}", "utf-8")
    args = (
        ("--values", tmp_path / "v.json", "-o", tmp_path / "out.pdf")
        if command == "fill"
        else (SAMPLE_ROWS, "--out-dir", tmp_path / "o")
    )
    done = run(command, SAMPLE_FORM, *args, *flags)
    assert done.returncode == 2 and needle in done.stderr, done.stderr
    assert not (tmp_path / "out.pdf").exists() and not (tmp_path / "o").exists()
