"""A batch as one file: every row's PDF in one zip, or every row's pages in one merged PDF.

The same for the command line (``fillpdf batch --output-format``) and ``BatchFillOperator``
(``output_format``). The file is built whole in a hidden local folder, never in memory, and
only then published under its name, with the manifest after it: a reader never sees a
half-built archive or PDF, and a batch stopped part-way publishes nothing.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
from pypdf import PdfWriter

from fillpdf_provider.engine.batch import (
    MANIFEST_NAME,
    BatchSummary,
    FolderSink,
    OutputSink,
    fill_rows,
)
from fillpdf_provider.engine.fillable import Form

#: ``files``: one PDF per row; ``merged``: one flattened PDF of every row; ``zip``: the
#: rows' PDFs in one archive.
OUTPUT_FORMATS = ("files", "merged", "zip")
MERGED_NAME = "merged.pdf"
ZIP_NAME = "filled.zip"
#: What each format gives, for help texts and errors.
FORMATS = {
    "files": "'files' (one PDF per row)",
    "merged": "'merged' (one flattened PDF of every row)",
    "zip": "'zip' (the PDFs in one archive)",
}
#: Every entry of an archive gets this time: the same rows give the same bytes.
ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def one_file_name(output_format: str) -> str:
    """The name of the one file ``output_format`` publishes (``merged`` or ``zip``)."""
    if output_format not in ("merged", "zip"):
        raise ValueError(
            f"output_format must be 'merged' or 'zip' for one file, not {output_format!r}; "
            f"{FORMATS['files']} is a plain batch."
        )
    return MERGED_NAME if output_format == "merged" else ZIP_NAME


def fill_in_format(
    template: Form,
    rows: str | os.PathLike[str],
    out: str | os.PathLike[str] | OutputSink,
    output_format: str = "files",
    **options: Any,
) -> BatchSummary:
    """The batch in ``output_format``: ``files`` (``fill_rows``: one PDF per row), else one
    file (``fill_one_file``); ``options`` are ``fill_rows``'s."""
    if output_format == "files":
        return fill_rows(template, rows, out, **options)
    return fill_one_file(template, rows, out, output_format, **options)


def fill_one_file(
    template: Form,
    rows: str | os.PathLike[str],
    out: str | os.PathLike[str] | OutputSink,
    output_format: str,
    **options: Any,
) -> BatchSummary:
    """Fill every row into one zip (``output_format="zip"``) or one merged, flattened PDF
    (``"merged"``) and publish it to ``out`` (a folder or a sink), then the manifest;
    ``options`` are ``fill_rows``'s.

    The file is built in a hidden folder beside the outputs when they are local (so
    publishing is a rename), else in the system's temporary folder, and that folder is
    removed after. It is made only once ``fill_rows`` has accepted the batch: a batch
    refused before its first row leaves nothing behind, not even ``out``. The manifest's
    ``path`` names the PDF each row made: its entry in the archive, or its pages' source in
    the merge."""
    name = one_file_name(output_format)
    if output_format == "merged":
        options["flatten"] = True  # one PDF of many forms: their fields' names would clash
    staging = _Staging(out)
    try:
        if output_format == "zip":
            sink = _ZipSink(staging)
            summary = fill_rows(template, rows, sink, **options)
            sink.close()
        else:
            summary = _fill_merged(template, rows, staging, options)
        target = FolderSink(out) if isinstance(out, str | os.PathLike) else out
        target.publish(name, staging.path / name)
        target.publish(MANIFEST_NAME, staging.path / MANIFEST_NAME)
    finally:
        staging.remove()
    summary.out_dir = target.uri("").rstrip("/\\")
    summary.manifest = target.uri(MANIFEST_NAME)
    return summary


class _Staging:
    """A hidden folder to build a batch's one file in, made on first use: beside the
    outputs when they are local, else in the system's temporary folder."""

    def __init__(self, out: str | os.PathLike[str] | OutputSink) -> None:
        if isinstance(out, str | os.PathLike):
            parent = Path(out)
        else:
            scratch = getattr(out, "scratch", None)
            parent = (scratch() if scratch is not None else None) or Path(tempfile.gettempdir())
        self.path = parent / f".fillpdf-staging-{os.urandom(6).hex()}"

    def make(self) -> Path:
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.path

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def _fill_merged(
    template: Form, rows: str | os.PathLike[str], staging: _Staging, options: dict[str, Any]
) -> BatchSummary:
    """Each row's PDF into the staging folder's ``pages``, then the rows that filled
    appended, in row order, to one PDF beside them; the manifest moved there too."""
    pages = staging.path / "pages"
    summary = fill_rows(template, rows, pages, **options)
    table = pq.read_table(pages / MANIFEST_NAME)
    done = table.filter(pc.equal(table.column("status"), "ok"))
    writer = PdfWriter()
    for name in done.column("path").to_pylist():
        writer.append(str(pages / name))
    writer._ID = None  # no random file id: the same rows give the same bytes
    with (staging.path / MERGED_NAME).open("wb") as out:
        writer.write(out)
    (pages / MANIFEST_NAME).replace(staging.path / MANIFEST_NAME)
    return summary


class _ZipSink:
    """The batch's PDFs written straight into one zip archive in the staging folder, which
    is made when the batch first needs it; the manifest beside the archive."""

    def __init__(self, staging: _Staging) -> None:
        self.staging = staging
        self.archive: zipfile.ZipFile | None = None

    def _opened(self) -> zipfile.ZipFile:
        if self.archive is None:
            self.archive = zipfile.ZipFile(self.staging.make() / ZIP_NAME, "w")
        return self.archive

    def write(self, name: str, data: bytes) -> None:
        info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
        info.compress_type = zipfile.ZIP_DEFLATED
        self._opened().writestr(info, data)

    def publish(self, name: str, path: Path) -> None:
        path.replace(self.staging.make() / name)

    def uri(self, name: str) -> str:
        return str(self.staging.path / name)

    def scratch(self) -> Path:
        return self.staging.make()

    def close(self) -> None:
        """The archive, finished (an empty one for a table of no rows)."""
        self._opened().close()
