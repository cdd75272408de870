"""``ConvertOperator``: flat PDFs in, fillable PDFs and their schemas out."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from airflow.sdk import BaseOperator, Context

from fillpdf_provider.engine.filler import write_atomic
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators.storage import expand, read_bytes, writable_dir


class ConvertOperator(BaseOperator):
    """Convert one or many flat PDFs into fillable ones, with a schema JSON beside each.

    :param pdfs: paths, globs or URIs (``s3://inbox/*.pdf``) of flat PDFs. Templated.
    :param output_dir: folder or URI for ``NAME.fillable.pdf`` and ``NAME.schema.json``. Templated.
    :param detect: ``fields`` (every cue) or ``fields_fast``.
    :param fillpdf_conn_id: the FillPDF connection (none: the embedded engine).

    XCom: a list of conversion results (the API's JSON, without PDF bytes) with the paths
    of the files written.
    """

    template_fields: Sequence[str] = ("pdfs", "output_dir", "detect")
    ui_color = "#e8f1fb"

    def __init__(
        self,
        *,
        pdfs: str | list[str],
        output_dir: str,
        detect: str = "fields",
        fillpdf_conn_id: str = FillPdfHook.default_conn_name,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.pdfs = pdfs
        self.output_dir = output_dir
        self.detect = detect
        self.fillpdf_conn_id = fillpdf_conn_id

    def execute(self, context: Context) -> list[dict[str, Any]]:
        hook = FillPdfHook(self.fillpdf_conn_id)
        sources = expand(self.pdfs)
        results = []
        with writable_dir(self.output_dir) as folder:
            for source in sources:
                stem = PurePosixPath(str(source)).stem
                result = hook.convert(read_bytes(source), detect=self.detect)
                pdf_name, schema_name = f"{stem}.fillable.pdf", f"{stem}.schema.json"
                write_atomic(folder / pdf_name, result.pdf)
                entry = {**result.to_dict(), "source": str(source)}
                schema = {"source": str(source), "schema": entry["schema"]}
                write_atomic(folder / schema_name, json.dumps(schema, indent=2).encode())
                entry["fillable_pdf"] = f"{str(self.output_dir).rstrip('/')}/{pdf_name}"
                entry["schema_json"] = f"{str(self.output_dir).rstrip('/')}/{schema_name}"
                self.log.info(
                    "%s: %d fields on %d pages in %d ms -> %s",
                    source, result.fields, result.pages, result.ms, entry["fillable_pdf"],
                )  # fmt: skip
                results.append(entry)
        return results
