"""Values in every script through the operators, embedded: ``FillOperator`` and
``BatchFillOperator`` on a form of one-line Helvetica boxes (``kits.script_gallery``)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from fillpdf_provider.operators import BatchFillOperator, FillOperator
from kits import script_gallery, viewcheck


@pytest.fixture(autouse=True)
def _embedded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    monkeypatch.setenv("FILLPDF_EMBEDDED_STORE", str(tmp_path / "store"))


@pytest.fixture
def form(tmp_path: Path) -> str:
    path = tmp_path / "form.pdf"
    path.write_bytes(script_gallery.form())
    return str(path)


@pytest.mark.parametrize("flatten", [False, True])
def test_fill_operator(form: str, tmp_path: Path, flatten: bool) -> None:
    target = tmp_path / "out.pdf"
    FillOperator(
        task_id="f",
        template=form,
        values=script_gallery.values(),
        output_path=str(target),
        flatten=flatten,
    ).execute(context={})
    pdf = target.read_bytes()
    script_gallery.check_read_back(pdf if flatten else viewcheck.flatten_with_pdfium(pdf))


def test_batch_fill_operator(form: str, tmp_path: Path) -> None:
    rows = tmp_path / "rows.csv"
    values = script_gallery.values()
    with rows.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(values))
        writer.writeheader()
        writer.writerows([values, values])
    result = BatchFillOperator(
        task_id="b", template=form, rows=str(rows), output_dir=str(tmp_path / "out")
    ).execute(context={})  # type: ignore[arg-type]
    assert result["ok"] == 2, result
    outputs = sorted((tmp_path / "out").glob("*.pdf"))
    assert len(outputs) == 2 and outputs[0].read_bytes() != b""
    for output in outputs:
        script_gallery.check_read_back(viewcheck.flatten_with_pdfium(output.read_bytes()))
