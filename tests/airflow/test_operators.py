"""The operators' own options, on the embedded engine: output formats, chunks and reruns,
file:// URIs, the single fill, and the conversion XCom."""

from __future__ import annotations

import hashlib
import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from airflow.sdk.exceptions import AirflowFailException
from pypdf import PdfReader

from fillpdf_provider.hooks.fillpdf import InputError
from fillpdf_provider.operators import (
    BatchFillOperator,
    ConvertOperator,
    FillOperator,
    merge_manifests,
    plan_chunks,
)
from kits.flatkit import flat_form, flat_form_schema

INCLUDE = Path(__file__).resolve().parents[2] / "include"
FORM = str(INCLUDE / "sample_form.pdf")
ROWS = str(INCLUDE / "sample_rows.csv")


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))


def batch(tmp: Path, **kwargs: object) -> dict:
    options = {"task_id": "t", "template": FORM, "rows": ROWS, "output_dir": str(tmp)}
    return BatchFillOperator(**{**options, **kwargs}).execute(context={})  # type: ignore[arg-type]


def test_plan_chunks_gives_no_chunk_fewer_than_min_rows() -> None:
    """A small table is one chunk; a larger one as many as give each ``min_rows``."""
    assert plan_chunks(ROWS, chunks=4, min_rows=100) == [{"index": 0, "first": 1, "stop": 26}]
    assert plan_chunks(ROWS, chunks=4, min_rows=10) == [
        {"index": 0, "first": 1, "stop": 11},
        {"index": 1, "first": 11, "stop": 21},
        {"index": 2, "first": 21, "stop": 26},
    ]
    assert len(plan_chunks(ROWS, chunks=4, min_rows=1)) == 4
    with pytest.raises(InputError, match="min_rows must be a whole number"):
        plan_chunks(ROWS, chunks=4, min_rows=0)


def test_plan_chunks_covers_every_row_once() -> None:
    chunks = plan_chunks(ROWS, chunks=4)
    assert [c["index"] for c in chunks] == [0, 1, 2, 3]
    covered = [row for c in chunks for row in range(c["first"], c["stop"])]
    assert covered == list(range(1, 26))
    assert plan_chunks(ROWS, rows_per_chunk=10) == [
        {"index": 0, "first": 1, "stop": 11},
        {"index": 1, "first": 11, "stop": 21},
        {"index": 2, "first": 21, "stop": 26},
    ]
    with pytest.raises(ValueError, match="one of"):
        plan_chunks(ROWS)


def test_chunks_rerun_to_the_same_bytes_and_merge(tmp_path: Path) -> None:
    chunks = plan_chunks(ROWS, rows_per_chunk=9)
    for chunk in chunks:
        batch(tmp_path, chunk=chunk, name_template="{row}-{city}.pdf")
    first = {p.name: p.read_bytes() for p in tmp_path.glob("*.pdf")}
    batch(tmp_path, chunk=chunks[1], name_template="{row}-{city}.pdf")  # a retried chunk
    assert {p.name: p.read_bytes() for p in tmp_path.glob("*.pdf")} == first
    summary = merge_manifests(str(tmp_path))
    assert summary == {**summary, "rows": 25, "ok": 25, "failed": 0, "chunks": 3}
    rows = pq.read_table(tmp_path / "manifest.parquet").column("row").to_pylist()
    assert rows == list(range(1, 26))


def test_merged_output_is_one_flat_pdf_and_deterministic(tmp_path: Path) -> None:
    result = batch(tmp_path / "a", output_format="merged")
    merged = (tmp_path / "a" / "merged.pdf").read_bytes()
    reader = PdfReader(io.BytesIO(merged))
    assert len(reader.pages) == 25 and not reader.get_fields()
    assert "Emily Clarke" in reader.pages[0].extract_text()
    assert result["ok"] == 25 and not list((tmp_path / "a").glob("[0-9]*.pdf"))
    batch(tmp_path / "b", output_format="merged")
    assert (tmp_path / "b" / "merged.pdf").read_bytes() == merged


def test_zip_output(tmp_path: Path) -> None:
    batch(tmp_path, output_format="zip", name_template="{row}.pdf")
    with zipfile.ZipFile(tmp_path / "filled.zip") as archive:
        names = archive.namelist()
        manifest = pq.read_table(tmp_path / "manifest.parquet").to_pylist()
        assert sorted(names) == sorted(r["path"] for r in manifest)
        first = archive.read(manifest[0]["path"])
    assert hashlib.sha256(first).hexdigest() == manifest[0]["sha256"]


def test_file_uris_and_an_explicit_mapping(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("customer,mail\nAda Lovelace,ada@example.org\n", encoding="utf-8")
    result = batch(
        tmp_path / "out",
        rows=rows.as_uri(),
        output_dir=(tmp_path / "out").as_uri(),
        mapping={"customer": "full_name", "mail": "email"},
    )
    assert result["ok"] == 1 and result["unused_columns"] == []
    fields = PdfReader(tmp_path / "out" / "1.pdf").get_fields() or {}
    assert fields["full_name"]["/V"] == "Ada Lovelace"


def test_fail_policy_stops_at_the_bad_row(tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    rows.write_text("full_name,plan\nA,Basic\nB,Gold\nC,Basic\n", encoding="utf-8")
    with pytest.raises(Exception, match="row 2") as caught:
        batch(tmp_path / "out", rows=str(rows), on_error="fail")
    assert "Gold" in str(caught.value)


def test_fill_operator(tmp_path: Path) -> None:
    target = tmp_path / "one" / "ada.pdf"
    result = FillOperator(
        task_id="f",
        template=FORM,
        values={"full_name": "Ada", "newsletter": True},
        output_path=str(target),
    ).execute(context={})
    assert result["output"] == str(target) and target.exists()
    assert hashlib.sha256(target.read_bytes()).hexdigest() == result["sha256"]
    assert (PdfReader(target).get_fields() or {})["full_name"]["/V"] == "Ada"


def test_convert_operator_then_fill_by_conversion_id(tmp_path: Path) -> None:
    results = ConvertOperator(
        task_id="c", pdfs=str(INCLUDE / "inbox" / "*.pdf"), output_dir=str(tmp_path)
    ).execute(context={})
    assert len(results) == 2 and all("pdf" not in r for r in results)
    assert all(Path(r["fillable_pdf"]).exists() for r in results)
    conversion_id = results[0]["conversion_id"]
    out = tmp_path / "filled.pdf"
    FillOperator(
        task_id="f", template=conversion_id, values={"full_name": "Ada"}, output_path=str(out)
    ).execute(context={})
    assert (PdfReader(out).get_fields() or {})["full_name"]["/V"] == "Ada"
    with pytest.raises(FileNotFoundError, match="No file matches"):
        ConvertOperator(
            task_id="c", pdfs=str(tmp_path / "none-*.pdf"), output_dir=str(tmp_path)
        ).execute(context={})


def test_convert_operator_rebuilds_from_an_edited_schema_file(tmp_path: Path) -> None:
    """The review loop: convert, edit NAME.schema.json in place, convert again from it."""
    source = tmp_path / "form.pdf"
    source.write_bytes(flat_form(2))
    out = tmp_path / "out"

    def run(**options: object) -> dict:
        operator = ConvertOperator(task_id="c", pdfs=str(source), output_dir=str(out), **options)
        (result,) = operator.execute(context={})  # type: ignore[arg-type]
        return result

    detected = run()
    saved = out / "form.schema.json"
    edited = json.loads(saved.read_text())
    edited["schema"] = [e for e in edited["schema"] if e["name"] != "email"]
    edited["schema"][0]["name"] = "applicant"
    saved.write_text(json.dumps(edited))
    built = run(schema=str(saved))  # not skipped: the files were made another way
    names = [e["name"] for e in edited["schema"]]
    assert [e["name"] for e in built["schema"]] == names != [e["name"] for e in
                                                             detected["schema"]]  # fmt: skip
    assert [f for f in (PdfReader(out / "form.fillable.pdf").get_fields() or {})] == names
    assert run(schema=str(saved)) == built  # the schema it wrote builds the same form: done
    assert run(schema=flat_form_schema())["conversion_id"] != built["conversion_id"]
    assert run()["schema"] == detected["schema"]  # and back to detection


def test_convert_operator_fails_at_once_on_a_bad_schema(tmp_path: Path) -> None:
    source = tmp_path / "form.pdf"
    source.write_bytes(flat_form(1))
    schema = flat_form_schema()
    schema[2]["type"] = "phone"
    operator = ConvertOperator(task_id="c", pdfs=str(source), output_dir=str(tmp_path / "o"),
                               schema=json.dumps(schema))  # fmt: skip
    assert "schema" in ConvertOperator.template_fields
    with pytest.raises(AirflowFailException, match=r"schema\[2\] \('city'\)"):
        operator.execute(context={})  # type: ignore[arg-type]
    assert not (tmp_path / "o" / "form.fillable.pdf").exists()


def _one_option_radio(schema: list[dict]) -> None:
    schema[4]["widgets"].pop()


def _partly_off_the_page(schema: list[dict]) -> None:
    schema[1]["rect"] = [500, 615, 640, 635]


STRICT_SCHEMA = [
    ("unknown key", lambda s: s[2].update(multi_line=True),
     (r"schema\[2\] \('city'\)", "did you mean 'multiline'")),
    ("empty", lambda s: s.clear(), ("no entries",)),
    ("one-option radio", _one_option_radio, (r"schema\[4\] \('plan'\)", "one option")),
    ("duplicate name", lambda s: s[1].update(name="full_name"), ("same name",)),
    ("partly off the page", _partly_off_the_page,
     (r"schema\[1\] \('email'\)", "runs past the edge", "Fix the schema")),
]  # fmt: skip


@pytest.mark.parametrize(
    "change, needles", [r[1:] for r in STRICT_SCHEMA], ids=[r[0] for r in STRICT_SCHEMA]
)
def test_convert_operator_refuses_what_the_schema_rules_refuse(
    tmp_path: Path, change: Any, needles: tuple[str, ...]
) -> None:
    source = tmp_path / "form.pdf"
    source.write_bytes(flat_form(2))
    schema = flat_form_schema()
    change(schema)
    operator = ConvertOperator(task_id="c", pdfs=str(source), output_dir=str(tmp_path / "o"),
                               schema=schema)  # fmt: skip
    with pytest.raises(AirflowFailException) as caught:
        operator.execute(context={})  # type: ignore[arg-type]
    for needle in needles:
        assert re.search(needle, str(caught.value)), (needle, str(caught.value))
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


def test_bad_options_are_refused_when_the_dag_is_parsed() -> None:
    with pytest.raises(ValueError, match="output_format"):
        BatchFillOperator(
            task_id="x", template=FORM, rows=ROWS, output_dir="o", output_format="tar"
        )
    with pytest.raises(ValueError, match="Chunked"):
        BatchFillOperator(
            task_id="x",
            template=FORM,
            rows=ROWS,
            output_dir="o",
            output_format="zip",
            chunk={"index": 0, "first": 1, "stop": 2},
        )


# --------------------------------------------------------------------------- overflow

LONG_SIGNATURE = "W" * 200  # the signature line holds about 78 at 4 pt


def long_rows(tmp_path: Path) -> str:
    rows = tmp_path / "rows.csv"
    rows.write_text(f"full_name,signature\nAda,Ada\nBo,{LONG_SIGNATURE}\n", encoding="utf-8")
    return str(rows)


def test_batch_overflow_shrink_fills_every_row_and_the_manifest_names_the_cut(
    tmp_path: Path,
) -> None:
    rows = long_rows(tmp_path)
    with pytest.raises(AirflowFailException, match="row 2: Field 'signature'"):
        batch(tmp_path / "default", rows=rows)  # "error": the row fails, naming the field
    manifest = pq.read_table(tmp_path / "default" / "manifest.parquet").to_pylist()
    assert [r["status"] for r in manifest] == ["ok", "error"]
    result = batch(tmp_path / "out", rows=rows, overflow="shrink")
    assert (result["ok"], result["failed"], result["cut"]) == (2, 0, 1)
    manifest = pq.read_table(tmp_path / "out" / "manifest.parquet").to_pylist()
    assert [r["cut"] for r in manifest] == [None, ["signature"]]
    assert (tmp_path / "out" / "2.pdf").exists()


def test_a_smaller_min_font_size_fits_the_text_without_cutting(tmp_path: Path) -> None:
    result = batch(tmp_path / "out", rows=long_rows(tmp_path), min_font_size=1)
    assert (result["ok"], result["failed"], result["cut"]) == (2, 0, 0)


def test_fill_operator_overflow_truncate_reports_the_fields_cut(tmp_path: Path) -> None:
    def fill(**options: object) -> dict:
        return FillOperator(
            task_id="f", template=FORM, values={"signature": LONG_SIGNATURE},
            output_path=str(tmp_path / "one.pdf"), flatten=True, **options,
        ).execute(context={})  # type: ignore[arg-type]  # fmt: skip

    assert fill(overflow="truncate")["cut"] == ["signature"]
    drawn = PdfReader(tmp_path / "one.pdf").pages[0].extract_text().count("W")
    assert 0 < drawn < len(LONG_SIGNATURE)  # what fits, at the field's own size
    (tmp_path / "one.pdf").unlink()
    with pytest.raises(Exception, match="'signature'"):
        fill()
    assert not (tmp_path / "one.pdf").exists()


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        ({"overflow": "clip"}, re.escape("one of ('error', 'shrink', 'truncate'), not 'clip'")),
        ({"min_font_size": 0}, r"min_font_size 0 is refused: .*between 0\.5 and 72"),
        ({"min_font_size": "small"}, "min_font_size must be a size in points, not 'small'"),
    ],
    ids=["policy", "size", "not-a-number"],
)
def test_a_bad_overflow_setting_is_refused_when_the_dag_is_parsed(
    options: dict[str, object], needle: str
) -> None:
    with pytest.raises(ValueError, match=needle):
        BatchFillOperator(task_id="x", template=FORM, rows=ROWS, output_dir="o", **options)
    with pytest.raises(ValueError, match=needle):
        FillOperator(task_id="x", template=FORM, values={}, output_path="o.pdf", **options)


def test_the_service_fills_with_its_own_policy_so_another_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """With fill_on="service" each row is the service's fill; a cutting policy would be
    silently ignored there, so the task refuses it before any request is sent."""
    conn = {"conn_type": "fillpdf", "host": "http://127.0.0.1:9", "password": "fpk_unused"}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
    service = {"template": "conv_0123456789abcdef01234567", "fill_on": "service"}
    with pytest.raises(ValueError, match="applies to the embedded engine"):
        batch(tmp_path / "out", overflow="shrink", **service)
    one = FillOperator(task_id="f", values={}, output_path=str(tmp_path / "o.pdf"),
                       overflow="truncate", **service)  # fmt: skip
    with pytest.raises(ValueError, match=r"overflow='truncate'.*fill_on='worker'"):
        one.execute(context={})  # type: ignore[arg-type]
    assert not (tmp_path / "out").exists()
