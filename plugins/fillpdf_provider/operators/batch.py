"""``BatchFillOperator``: mail-merge a table into PDFs, and the helpers to scale it out.

One template, rows from CSV or Parquet (streamed in record batches, so memory stays flat),
one PDF per row, a manifest Parquet of every row's outcome. To spread a large table over
workers, ``plan_chunks`` splits the rows into ranges, the operator is mapped over them with
``.expand(chunk=...)``, and ``merge_manifests`` joins the chunks' manifests at the end. A
chunk run again writes the same bytes under the same names.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from airflow.sdk import Asset, BaseOperator, Context

from fillpdf_provider.engine.batch import (
    MANIFEST_NAME,
    MANIFEST_SCHEMA,
    fill_rows,
    read_batches,
)
from fillpdf_provider.engine.batch import count_rows as count_parquet_rows
from fillpdf_provider.engine.filler import write_atomic
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators.forms import open_form
from fillpdf_provider.operators.storage import readable, writable_dir

OUTPUT_FORMATS = ("files", "merged", "zip")
CHUNK_MANIFESTS = "_manifests"
MERGED_NAME = "merged.pdf"
ZIP_NAME = "filled.zip"


def count_rows(rows: str) -> int:
    """Rows in a CSV or Parquet file (Parquet from its footer; CSV read once, streamed)."""
    with readable(rows) as path:
        footer = count_parquet_rows(path)
        if footer is not None:
            return footer
        return sum(batch.num_rows for batch in read_batches(path, batch_rows=65536))


def plan_chunks(
    rows: str, *, chunks: int | None = None, rows_per_chunk: int | None = None
) -> list[dict[str, int]]:
    """Split the rows into ranges for ``BatchFillOperator.partial(...).expand(chunk=...)``.

    Give ``chunks`` (how many) or ``rows_per_chunk``. Each range is ``{"index", "first",
    "stop"}`` with 1-based row numbers, ``first <= row < stop``.
    """
    if (chunks is None) == (rows_per_chunk is None):
        raise ValueError("Give one of chunks or rows_per_chunk.")
    total = count_rows(rows)
    if total == 0:
        return []
    size = rows_per_chunk or -(-total // max(1, int(chunks or 1)))
    return [
        {"index": i, "first": first, "stop": min(first + size, total + 1)}
        for i, first in enumerate(range(1, total + 1, size))
    ]


def merge_manifests(output: str) -> dict[str, Any]:
    """Join the chunks' manifests into ``manifest.parquet``; fail on two rows with one name."""
    with writable_dir(output) as folder:
        parts = sorted((folder / CHUNK_MANIFESTS).glob("chunk-*.parquet"))
        if not parts:
            raise FileNotFoundError(f"No chunk manifests under {output}/{CHUNK_MANIFESTS}.")
        table = pa.concat_tables(pq.read_table(p, schema=MANIFEST_SCHEMA) for p in parts)
        table = table.sort_by("row")
        paths = [p for p in table.column("path").to_pylist() if p]
        duplicates = sorted({p for p in paths if paths.count(p) > 1})
        if duplicates:
            raise ValueError(
                f"Chunks wrote the same file name for different rows: {duplicates[:5]}; "
                "put {row} in name_template."
            )
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        write_atomic(folder / MANIFEST_NAME, buffer.getvalue())
        statuses = table.column("status").to_pylist()
        return {
            "rows": table.num_rows,
            "ok": statuses.count("ok"),
            "failed": table.num_rows - statuses.count("ok"),
            "manifest": f"{str(output).rstrip('/')}/{MANIFEST_NAME}",
            "chunks": len(parts),
        }


class BatchFillOperator(BaseOperator):
    """Fill a form once per row of a CSV or Parquet table.

    :param template: a conversion id, or the path or URI of a fillable PDF. Templated.
    :param rows: path or URI of a ``.csv`` or ``.parquet`` file. Templated.
    :param output_dir: folder or URI for the PDFs and ``manifest.parquet``. Templated.
    :param mapping: column -> field for columns whose names don't say which field they
        fill; other columns are matched to fields by normalised names.
    :param name_template: output names, e.g. ``"{row}.pdf"`` or ``"{id}-{last_name}.pdf"``.
    :param output_format: ``files`` (one PDF per row), ``merged`` (one PDF of all rows,
        flattened) or ``zip`` (the PDFs in one archive).
    :param on_error: ``skip`` records a bad row in the manifest and goes on; ``fail`` stops.
    :param require: a row that leaves a field the form marks required empty is a bad row.
    :param batch_rows: rows read at a time (memory stays flat whatever the table's length).
    :param chunk: a range from ``plan_chunks``: fill only those rows (mapped tasks).
    :param asset: an Asset to emit an event for, with the output location in its extra.

    XCom: the batch summary (rows, ok, failed, rows/s, manifest, unmapped columns and
    unfilled fields, the first errors with their row numbers).
    """

    template_fields: Sequence[str] = ("template", "rows", "output_dir", "name_template", "mapping")
    ui_color = "#fdf3e2"

    def __init__(
        self,
        *,
        template: str,
        rows: str,
        output_dir: str,
        mapping: Mapping[str, str] | None = None,
        name_template: str = "{row}.pdf",
        flatten: bool = False,
        output_format: str = "files",
        on_error: str = "skip",
        require: bool = False,
        chunk: Mapping[str, int] | None = None,
        batch_rows: int = 2048,
        asset: Asset | None = None,
        fillpdf_conn_id: str = FillPdfHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        if output_format not in OUTPUT_FORMATS:
            raise ValueError(f"output_format must be one of {OUTPUT_FORMATS}.")
        if on_error not in ("skip", "fail"):
            raise ValueError("on_error must be 'skip' or 'fail'.")
        if chunk is not None and output_format != "files":
            raise ValueError("Chunked batches write files; merge or zip them afterwards.")
        if asset is not None:
            kwargs["outlets"] = [*kwargs.get("outlets", []), asset]
        super().__init__(**kwargs)
        self.template = template
        self.rows = rows
        self.output_dir = output_dir
        self.mapping = mapping
        self.name_template = name_template
        self.flatten = flatten
        self.output_format = output_format
        self.on_error = on_error
        self.require = require
        self.chunk = chunk
        self.batch_rows = batch_rows
        self.asset = asset
        self.fillpdf_conn_id = fillpdf_conn_id

    def execute(self, context: Context) -> dict[str, Any]:
        hook = FillPdfHook(self.fillpdf_conn_id)
        form = open_form(hook, self.template)
        chunk = dict(self.chunk) if self.chunk else None
        label = f"chunk {chunk['index']} (rows {chunk['first']}-{chunk['stop'] - 1})" if chunk \
            else "batch"  # fmt: skip
        total = (chunk["stop"] - chunk["first"]) if chunk else None
        flatten = self.flatten or self.output_format == "merged"
        manifest = (
            f"{CHUNK_MANIFESTS}/chunk-{chunk['first']:09d}.parquet" if chunk else MANIFEST_NAME
        )
        with readable(self.rows) as rows_path, writable_dir(self.output_dir) as folder:
            if chunk:
                (folder / CHUNK_MANIFESTS).mkdir(exist_ok=True)
            staging = folder if self.output_format == "files" else folder / ".staging"
            summary = fill_rows(
                form,  # type: ignore[arg-type]
                rows_path,
                staging,
                name_template=self.name_template,
                flatten=flatten,
                on_error=self.on_error,
                require=self.require,
                batch_rows=self.batch_rows,
                mapping=self.mapping,
                progress=self._progress(label, total),
                manifest_name=manifest if self.output_format == "files" else MANIFEST_NAME,
                row_range=(chunk["first"], chunk["stop"]) if chunk else None,
            )
            if self.output_format != "files":
                self._package(staging, folder)
        result = {**summary.as_dict(), "format": self.output_format}
        result["out_dir"] = str(self.output_dir)
        result["manifest"] = f"{str(self.output_dir).rstrip('/')}/{manifest}"
        if chunk:
            result["chunk"] = chunk
        self.log.info("%s: %s", label, summary.line())
        for error in summary.errors[:10]:
            self.log.warning("row %s: %s", error["row"], error["error"])
        if summary.unmapped_columns:
            self.log.info("columns that fill no field: %s", ", ".join(summary.unmapped_columns))
        if self.asset is not None:
            context["outlet_events"][self.asset].extra = {
                "output": str(self.output_dir), "rows": summary.rows, "ok": summary.ok,
                "failed": summary.failed, "manifest": result["manifest"],
            }  # fmt: skip
        return result

    def _progress(self, label: str, total: int | None):
        def report(done: int, seconds: float) -> None:
            rate = done / seconds if seconds else 0.0
            eta = f", ETA {(total - done) / rate:,.0f} s" if total and rate else ""
            of = f"/{total:,}" if total else ""
            self.log.info("%s: %s rows, %s rows/s%s", label, f"{done:,}{of}", f"{rate:,.0f}", eta)

        return report

    def _package(self, staging: Path, folder: Path) -> None:
        """Turn the staged per-row PDFs into one merged PDF or one zip; keep the manifest."""
        table = pq.read_table(staging / MANIFEST_NAME)
        done = [(r, p) for r, p, s in zip(table.column("row").to_pylist(),
                table.column("path").to_pylist(), table.column("status").to_pylist(),
                strict=True) if s == "ok"]  # fmt: skip
        if self.output_format == "merged":
            from pypdf import PdfWriter

            writer = PdfWriter()
            for _, name in done:
                writer.append(str(staging / name))
            writer._ID = None  # no random file id: the same rows give the same bytes
            buffer = io.BytesIO()
            writer.write(buffer)
            write_atomic(folder / MERGED_NAME, buffer.getvalue())
        else:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for _, name in done:
                    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
                    info.compress_type = zipfile.ZIP_DEFLATED
                    archive.writestr(info, (staging / name).read_bytes())
            write_atomic(folder / ZIP_NAME, buffer.getvalue())
        write_atomic(folder / MANIFEST_NAME, (staging / MANIFEST_NAME).read_bytes())
        for path in staging.iterdir():
            path.unlink()
        staging.rmdir()
