"""Mail-merge: one template, a table of rows, one PDF per row, and a manifest of them all.

Rows stream in record batches (pyarrow), so memory stays flat however long the table is.
Outputs go to a sink that only ever shows whole files: a local folder (``files.write_atomic``)
or anything with the same methods, such as a folder in object storage. Each row's file is
written while the next rows fill, by a process of its own for a large batch into a local
folder (``file_writer``), else on a thread (``in_order``), and a row is in the manifest only
once its file is written. The manifest is built in a local temporary file and
published once the last row is done, so a crash leaves no half-written file behind.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
import re
import string
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from difflib import get_close_matches
from pathlib import Path
from typing import NotRequired, Protocol, TypedDict

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from fillpdf_provider.engine.appearance import Fit
from fillpdf_provider.engine.coerce import coerce_values, is_empty
from fillpdf_provider.engine.columns import no_column_matches, plan_columns
from fillpdf_provider.engine.errors import FieldValueError, FillPdfError
from fillpdf_provider.engine.file_writer import FileWriter, Outcome
from fillpdf_provider.engine.files import (
    TEMP_SUFFIX,
    private_temp,
    publish,
    set_new_file_mode,
    write_atomic,
)
from fillpdf_provider.engine.fillable import Form, date_formats
from fillpdf_provider.engine.in_order import InOrder
from fillpdf_provider.engine.schema import Field

MANIFEST_NAME = "manifest.parquet"
MANIFEST_SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("path", pa.string()),
        ("sha256", pa.string()),
        ("pages", pa.int32()),
        ("bytes", pa.int64()),
        ("status", pa.string()),
        ("error", pa.string()),
        # fields whose text the overflow policy ("shrink", "truncate") cut to fit its box
        ("cut", pa.list_(pa.string())),
    ]
)
_UNSAFE = re.compile(r"[^\w.\- ]+", re.UNICODE)
#: Files a batch fills ahead of its writes (written by a process or a thread of their own).
WRITE_AHEAD = 32
#: A batch of a local folder expected to fill at least this many rows has its files written
#: by a process of its own (``file_writer``): starting it costs about 0.1 s.
WRITER_PROCESS_ROWS = 10_000
CSV_ROW_BYTES = 100  # what a CSV row is taken to hold, to tell its rows from its size
#: What makes a row a bad row, recorded in the manifest, rather than stopping the batch.
ROW_ERRORS = (FillPdfError, ValueError, TypeError, OSError)
SHOWN_COLUMNS = 20  # columns a name-template error lists; the rest are counted
EXAMPLE_NAMES = "{row}.pdf or {id}-{last_name}.pdf"


@dataclass
class BatchSummary:
    """What a batch did, for a log line, an XCom or a test."""

    rows: int = 0
    ok: int = 0
    failed: int = 0
    seconds: float = 0.0
    out_dir: str = ""
    manifest: str = ""
    unused_columns: list[str] = field(default_factory=list)  # match no field, listed once
    unused_note: str | None = None  # the line that lists them, and why each is not used
    unfilled_fields: list[str] = field(default_factory=list)
    errors: list[dict[str, object]] = field(default_factory=list)  # the first few, for humans
    cut: int = 0  # rows whose text the overflow policy cut to fit
    bytes: int = 0  # of the PDFs written
    finished: bool = False  # every row is done: the last progress report says so

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds else 0.0

    def progress_parts(self, seconds: float, total: int | None = None) -> list[str]:
        """What a progress report says, most needed first, so a narrow display can drop
        from the end: rows done (of how many), failures so far, rate, and time left (or,
        once finished, taken)."""
        done = self.rows
        rate = done / seconds if seconds > 0 else 0.0
        counts = f"{done:,} rows"
        if total:
            counts = f"{done:,}/{total:,} rows ({min(100, 100 * done // total)}%)"
        parts = [counts, f"{self.failed:,} failed", f"{rate:,.{1 if rate < 10 else 0}f} rows/s"]
        if self.finished:
            parts.append(f"done in {took(seconds)}")
        elif total and rate:
            parts.append(f"ETA {_duration(max(total - done, 0) / rate)}")
        else:
            parts.append(f"{_duration(seconds)} so far")
        return parts

    def progress_line(self, seconds: float, total: int | None = None) -> str:
        """One plain line of progress, for a log: ``1,200/5,000 rows (24%), 3 failed, ...``."""
        return ", ".join(self.progress_parts(seconds, total))

    def line(self) -> str:
        cut = f", {self.cut} with text cut to fit" if self.cut else ""
        return (
            f"filled {self.ok} of {self.rows} rows into {self.out_dir} ({self.failed} failed"
            f"{cut}) in {took(self.seconds)}, {self.rows_per_second:.0f} rows/s; "
            f"manifest: {self.manifest}"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "rows": self.rows,
            "ok": self.ok,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            "rows_per_second": round(self.rows_per_second, 1),
            "out_dir": self.out_dir,
            "manifest": self.manifest,
            "unused_columns": self.unused_columns,
            "unfilled_fields": self.unfilled_fields,
            "cut": self.cut,
            "errors": self.errors,
        }


def took(seconds: float) -> str:
    """How long something finished took: ``8 ms`` under a second (a small chunk is not
    "0.0s"), ``3.0s`` under a minute, then as ``_duration``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f}s" if seconds < 60 else _duration(seconds)


def _duration(seconds: float) -> str:
    """``9s``, ``17m22s``, ``11h34m``: as precise as a person reading an estimate needs."""
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


class OutputSink(Protocol):
    """Where a batch's files go. Both methods publish a whole file under ``name``."""

    def write(self, name: str, data: bytes) -> None: ...

    def publish(self, name: str, path: Path) -> None:
        """Move the finished local file ``path`` to ``name``."""
        ...

    def uri(self, name: str) -> str: ...


class FolderSink:
    """A local folder: each file is published whole (``files.write_atomic``)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def write(self, name: str, data: bytes) -> None:
        write_atomic(self.folder / name, data)

    def publish(self, name: str, path: Path) -> None:
        publish(path, self.folder / name)

    def uri(self, name: str) -> str:
        return str(self.folder / name)

    def plain_folder(self) -> Path | None:
        """The folder, when ``write`` is this class's: a writer process may then write the
        files there itself (``file_writer``); a subclass that writes otherwise says None."""
        return self.folder if type(self).write is FolderSink.write else None

    def scratch(self) -> Path:
        """Where to build a file before publishing it: beside its target, so it is a rename."""
        return self.folder


ProgressCallback = Callable[["BatchSummary", float], None]


class RowError(FillPdfError):
    """A row could not be filled; with the fail-fast policy the batch stops on it."""

    def __init__(self, row: int, cause: Exception) -> None:
        self.row, self.cause = row, cause
        super().__init__(f"row {row}: {cause}", param=getattr(cause, "param", None))


def read_batches(path: str | os.PathLike[str], batch_rows: int = 2048) -> Iterator[pa.RecordBatch]:
    """Record batches of a CSV (every column read as text) or Parquet file; none for a
    table with no rows (``read_columns`` still gives its columns)."""
    path = _rows_file(path)
    if _is_parquet(path):
        yield from pq.ParquetFile(path).iter_batches(batch_size=batch_rows)
        return
    header, delimiter, rows_follow = _csv_header(path)
    if not rows_follow:
        return
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=1 << 20, encoding="utf8"),
        parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=_all_text(header, delimiter), strings_can_be_null=False
        ),
    )
    for batch in reader:
        yield from _split(batch, batch_rows)


def read_columns(path: str | os.PathLike[str]) -> list[str]:
    """The columns of a CSV or Parquet rows file, from its header or schema: a table with
    no rows has them too."""
    path = _rows_file(path)
    if _is_parquet(path):
        return list(pq.read_schema(path).names)
    header, delimiter, _ = _csv_header(path)
    return list(_all_text(header, delimiter))


def _rows_file(path: str | os.PathLike[str]) -> Path:
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"No such rows file: {path}. Give the path or URI of a CSV, TSV or Parquet file."
        )
    if not _is_parquet(path) and path.suffix.lower() not in (".csv", ".txt", ".tsv"):
        raise ValueError(f"Rows must be a .csv or .parquet file, not {path.name!r}.")
    return path


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def _csv_header(path: Path) -> tuple[str, str, bool]:
    """A CSV's header line, its delimiter, and whether anything follows the header."""
    with open(path, "rb") as handle:
        header = handle.readline().decode("utf-8-sig")
        rows_follow = bool(handle.read(1))
    if not header.strip():
        raise ValueError(f"{path.name} is empty: the first line must name the columns.")
    return header, "\t" if path.suffix.lower() == ".tsv" else ",", rows_follow


def _all_text(header: str, delimiter: str) -> dict[str, pa.DataType]:
    table = pacsv.read_csv(
        pa.py_buffer(header.rstrip("\r\n").encode("utf-8") + b"\n"),
        parse_options=pacsv.ParseOptions(delimiter=delimiter),
    )
    return {name: pa.string() for name in table.schema.names}


def _split(batch: pa.RecordBatch, rows: int) -> Iterator[pa.RecordBatch]:
    for start in range(0, batch.num_rows, rows):
        yield batch.slice(start, rows)


def count_rows(path: str | os.PathLike[str], *, scan: bool = False) -> int | None:
    """Rows in a Parquet file from its footer; a CSV's only with ``scan`` (read once,
    streamed: far quicker than filling its rows), else None."""
    path = Path(path)
    if _is_parquet(path):
        counted: int = pq.ParquetFile(path).metadata.num_rows
        return counted
    if not scan:
        return None
    return sum(int(batch.num_rows) for batch in read_batches(path, batch_rows=65536))


def total_rows(path: str | os.PathLike[str]) -> int | None:
    """The rows a batch of ``path`` will fill, for progress only; None when that cannot be
    told (a pipe, which counting would drain, or a file ``fill_rows`` will refuse with its
    own message)."""
    if not Path(path).is_file():
        return None
    try:
        return count_rows(path, scan=True)
    except (OSError, ValueError, pa.ArrowException):
        return None


def _field_roots(pattern: str) -> set[str]:
    """The names a format string's fields start with (``row`` of ``{row[0]}``), nested
    ones (``{id:>{row}}``) included."""
    roots: set[str] = set()
    for _, name, spec, _ in string.Formatter().parse(pattern):
        if name is not None:
            roots.add(re.split(r"[.\[]", name, maxsplit=1)[0])
        if spec:
            roots |= _field_roots(spec)
    return roots


class OutputNames:
    """File names from a template such as ``{row}.pdf`` or ``{row_id}-{last_name}.pdf``.

    Names are made safe for any file system and unique within the batch.
    """

    def __init__(self, pattern: str) -> None:
        if not pattern.lower().endswith(".pdf"):
            pattern += ".pdf"
        self.pattern = pattern
        self._used: set[str] = set()
        try:
            roots = _field_roots(pattern)
        except ValueError:  # a broken pattern: format refuses it, naming what is wrong
            roots = set()
        self.columns = roots - {"row"}
        self._uses_row = "row" in roots

    def check(self, columns: list[str]) -> None:
        """Fail before any row is filled when the pattern names a column the rows lack, or
        is no template at all: every row would fail the same way."""
        self._format(0, dict.fromkeys(columns, "x"))

    def _format(self, row: int, cells: Mapping[str, object]) -> str:
        values = {k: "" if v is None else v for k, v in cells.items()}
        if "row" not in values:
            values["row"] = row
        elif self._uses_row:
            raise ValueError(
                f"The rows have a column named 'row', and the name template {self.pattern!r} "
                "uses {row}, which would mean either that column or the row's number; name "
                "the files by another column, or rename that column."
            )
        try:
            return self.pattern.format(**values)
        except KeyError as exc:
            raise ValueError(self._not_a_column(str(exc.args[0]), list(cells))) from None
        except IndexError:
            raise ValueError(
                f"The name template {self.pattern!r} has an empty or numbered placeholder; "
                f"put {{row}} or a column name in the braces, e.g. {EXAMPLE_NAMES}."
            ) from None
        except (ValueError, AttributeError) as exc:
            raise ValueError(
                f"The name template {self.pattern!r} is not a valid template ({exc}); write "
                f"{{row}} or a column name in braces, e.g. {EXAMPLE_NAMES}, and double a "
                "brace meant literally ({{ or }})."
            ) from None

    def _not_a_column(self, name: str, columns: list[str]) -> str:
        """The column the pattern names, the nearest the rows have, and all of theirs."""
        near = [c for c in columns if c.casefold() == name.casefold()]
        near = near or get_close_matches(name, [*columns, "row"], n=1, cutoff=0.6)
        hint = f"; did you mean {{{near[0]}}}?" if near else "."
        if columns:
            listed = ", ".join(columns[:SHOWN_COLUMNS])
            more = len(columns) - SHOWN_COLUMNS
            have = f"The rows' columns: {listed}" + (f", and {more} more." if more > 0 else ".")
        else:
            have = "The rows have no columns (the first line must name them)."
        return (
            f"The name template {self.pattern!r} names {{{name}}}, which is not a column of "
            f"the rows{hint} {have} Use {{row}} for the row's number and {{column}} for a "
            "column's value."
        )

    def name(self, row: int, cells: Mapping[str, object]) -> str:
        raw = self._format(row, cells)
        stem = _UNSAFE.sub("_", raw[:-4]).strip(" ._") or f"row-{row}"
        candidate, n = f"{stem[:150]}.pdf", 1
        while candidate.casefold() in self._used:
            n += 1
            candidate = f"{stem[:150]}-{n}.pdf"
        self._used.add(candidate.casefold())
        return candidate


def fill_rows(
    template: Form,
    rows: str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | OutputSink,
    *,
    name_template: str = "{row}.pdf",
    flatten: bool = False,
    on_error: str = "skip",
    mapping: Mapping[str, str | None] | None = None,
    strict_columns: bool = False,
    progress: ProgressCallback | None = None,
    progress_every: float = 10.0,
    manifest_name: str = MANIFEST_NAME,
    start_row: int = 1,
    row_range: tuple[int, int] | None = None,
    require: bool = False,
    batch_rows: int = 2048,
    fit: Fit | None = None,
) -> BatchSummary:
    """Fill one PDF per row of ``rows`` (CSV or Parquet) into ``out_dir`` (a folder or a sink).

    ``{row}`` is the row's 1-based number in the file (``start_row`` shifts it for chunks).
    ``row_range=(first, stop)`` fills only rows ``first <= row < stop`` (a chunk of a
    scaled-out batch); the others are read past, not filled.
    ``on_error="skip"`` records a bad row in the manifest and goes on; ``"fail"`` stops.
    Columns fill fields by ``engine.columns``' rule (``mapping``: column -> field, or ``""``
    to leave a column out): a column that looks like a field no column fills refuses the
    batch, as, with ``strict_columns``, does any column that fills nothing.
    With ``require``, a row that leaves a field the form marks required empty is a bad row.
    ``template`` is anything with ``fields``, ``date_format``, ``fill`` and ``page_count``
    (a ``Template``, or a stand-in that fills through the API).
    ``progress(summary, seconds)`` is called at most every ``progress_every`` seconds while
    rows are filled, and once at the end, with ``summary.finished`` set.
    ``fit`` is the overflow policy for text too long for its box (``Fit``: by default a
    row with such a value is a bad row); the manifest's ``cut`` lists the fields it cut.
    """
    if on_error not in ("skip", "fail"):
        raise ValueError("on_error must be 'skip' or 'fail'")
    if fit is not None and not hasattr(template, "fill_result"):
        raise ValueError("an overflow policy applies to the embedded engine's fills only")
    # Everything that can refuse the whole batch is checked before anything is written.
    batches = read_batches(rows, batch_rows)
    first = next(batches, None)
    if first is not None:
        columns = first.schema.names
    else:  # no rows: the header's columns (a pipe, read already, has none to give)
        columns = read_columns(rows) if Path(rows).is_file() else []
    names = OutputNames(name_template)
    names.check(columns)
    filler, summary = _RowFiller.prepare(
        template, columns, mapping, names, out_dir, strict_columns=strict_columns
    )
    filler.flatten, filler.require, filler.fit = flatten, require, fit
    summary.manifest = filler.sink.uri(manifest_name)
    manifest = _ManifestWriter(filler.sink, manifest_name)
    report = _Progress(progress, progress_every)
    finished = False  # a manifest is published only for rows whose files are published
    fail = on_error == "fail"  # each file written before the next row: nothing after a bad one
    try:
        writes = _writes(filler.sink, rows, row_range, fail)
        with writes:
            for row, cells in _numbered_rows(first, batches, start_row, row_range):
                filler.fill(row, cells, writes)
                _record(writes.ready(), manifest, summary, report, fail)
            _record(writes.rest(), manifest, summary, report, fail)
        finished = True
    except RowError:
        finished = True  # the manifest shows the rows up to the bad one
        raise
    finally:
        summary.seconds = time.perf_counter() - report.started
        if finished:
            manifest.close()
        else:
            manifest.discard()
    summary.finished = True
    report.done(summary)
    return summary


def _record(
    records: Iterator[_Record],
    manifest: _ManifestWriter,
    summary: BatchSummary,
    report: _Progress,
    fail: bool,
) -> None:
    """Add rows whose files are written (or that failed) to the manifest and the summary;
    with ``fail``, stop at a bad one."""
    for record in records:
        manifest.add(record)
        _tally(summary, record["row"], record)
        if "exception" in record and fail:
            raise RowError(record["row"], record["exception"])
        report.tick(summary)


class _Progress:
    """Calls a batch's progress callback at most every ``every`` seconds, and at the end."""

    def __init__(self, callback: ProgressCallback | None, every: float) -> None:
        self.callback, self.every = callback, every
        self.started = self.reported = time.perf_counter()

    def tick(self, summary: BatchSummary) -> None:
        if self.callback is not None and time.perf_counter() - self.reported >= self.every:
            self.reported = time.perf_counter()
            self.callback(summary, self.reported - self.started)

    def done(self, summary: BatchSummary) -> None:
        if self.callback is not None:
            self.callback(summary, summary.seconds)


def _sink(out_dir: str | os.PathLike[str] | OutputSink) -> OutputSink:
    """Where a batch's files go: a folder given by its path, else the sink given."""
    if isinstance(out_dir, str | os.PathLike):
        return FolderSink(out_dir)
    return out_dir


def _numbered_rows(
    first: pa.RecordBatch | None,
    batches: Iterator[pa.RecordBatch],
    start_row: int,
    row_range: tuple[int, int] | None,
) -> Iterator[tuple[int, dict[str, object]]]:
    """Each row to fill, with its number, as ``{column: cell}``: rows outside ``row_range``
    are read past, and no batch past its end is read."""
    row_number = start_row - 1
    for batch in itertools.chain([first] if first is not None else [], batches):
        first_row = row_number + 1  # the number of this batch's first row
        row_number += batch.num_rows
        if row_range is not None:
            if first_row >= row_range[1]:
                break
            low = max(row_range[0] - first_row, 0)
            high = min(row_range[1] - first_row, batch.num_rows)
            if high <= low:
                continue
            batch = batch.slice(low, high - low)
            first_row += low
        values_by_column = {c: batch.column(c).to_pylist() for c in batch.schema.names}
        for i in range(batch.num_rows):
            yield first_row + i, {c: values[i] for c, values in values_by_column.items()}


class _Record(TypedDict):
    """A manifest row as filling writes it; a bad row's exception is kept beside it."""

    row: int
    path: str | None
    sha256: str | None
    pages: int | None
    bytes: int | None
    status: str
    error: str | None
    cut: list[str] | None
    exception: NotRequired[Exception]


def _tally(summary: BatchSummary, row: int, record: _Record) -> None:
    """Count a filled row in ``summary``; the first few bad rows are kept for people."""
    summary.rows += 1
    if record["status"] == "ok":
        summary.ok += 1
        summary.cut += bool(record["cut"])
        summary.bytes += record["bytes"] or 0
        return
    summary.failed += 1
    if len(summary.errors) < 20:
        summary.errors.append({"row": row, "error": record["error"]})


def _writes(
    sink: OutputSink,
    rows: str | os.PathLike[str],
    row_range: tuple[int, int] | None,
    fail: bool,
) -> FileWriter[_Record] | _ThreadWrites:
    """Who writes a batch's files: a process of its own for a large batch into a plain
    local folder, else a thread; with ``fail`` the filling thread itself, so that nothing
    after a bad row is written."""
    if fail:
        return _ThreadWrites(sink, 0)
    plain_folder = getattr(sink, "plain_folder", None)
    folder = plain_folder() if plain_folder is not None else None
    if folder is not None and _expected_rows(rows, row_range) >= WRITER_PROCESS_ROWS:
        writer = FileWriter[_Record].start(folder, WRITE_AHEAD)
        if writer is not None:
            return writer
    return _ThreadWrites(sink, WRITE_AHEAD)


def _expected_rows(rows: str | os.PathLike[str], row_range: tuple[int, int] | None) -> int:
    """About how many rows a batch fills: a Parquet file's count, a CSV's guessed from its
    size, a chunk's at most its range; 0 for what cannot be told (a pipe)."""
    path = Path(rows)
    try:
        counted = count_rows(path) if path.is_file() else 0
        if counted is None:
            counted = path.stat().st_size // CSV_ROW_BYTES
    except (OSError, ValueError, pa.ArrowException):
        return 0
    if row_range is not None:
        return min(counted, max(0, row_range[1] - row_range[0]))
    return counted


class _ThreadWrites(InOrder[_Record]):
    """A batch's files written by its sink on a thread of its own (``in_order``), each
    hashed there; ``ahead=0`` writes each in the caller's thread."""

    def __init__(self, sink: OutputSink, ahead: int) -> None:
        super().__init__(ahead, "fillpdf-write")
        self.sink = sink

    def put_file(self, name: str, data: bytes, done: Callable[[Outcome], _Record]) -> None:
        self.put(functools.partial(self._write, name, data, done))

    def _write(self, name: str, data: bytes, done: Callable[[Outcome], _Record]) -> _Record:
        try:
            self.sink.write(name, data)
        except ROW_ERRORS as exc:
            return done(exc)
        return done(hashlib.sha256(data).hexdigest())


@dataclass
class _RowFiller:
    """What every row of a batch is filled with, worked out once before the first row."""

    template: Form
    fields: dict[str, Field]
    date_formats: dict[str, str | None]
    pairs: dict[str, str]  # column -> field
    names: OutputNames
    sink: OutputSink
    flatten: bool = False
    require: bool = False
    fit: Fit | None = None

    @classmethod
    def prepare(
        cls,
        template: Form,
        columns: list[str],
        mapping: Mapping[str, str | None] | None,
        names: OutputNames,
        out_dir: str | os.PathLike[str] | OutputSink,
        *,
        strict_columns: bool = False,
    ) -> tuple[_RowFiller, BatchSummary]:
        """Pair the columns with the form's fields (refusing rows that would fill none, and
        columns to fix), and the summary that says which columns and fields are left out."""
        fields = {f.name: f for f in template.fields}
        plan = plan_columns(columns, list(fields.values()), mapping, used=names.columns)
        if columns and plan.fills_nothing:  # every PDF would be blank
            raise no_column_matches(plan)
        plan.check(strict=strict_columns)
        sink = _sink(out_dir)  # (a folder is made only once the batch is known to be fillable)
        summary = BatchSummary(
            out_dir=sink.uri("").rstrip("/\\"),
            unused_columns=plan.not_used,
            unused_note=plan.not_used_note(),
            unfilled_fields=plan.unfilled,
        )
        return cls(template, fields, date_formats(template), plan.pairs, names, sink), summary

    def fill(
        self, row: int, cells: Mapping[str, object], writes: FileWriter[_Record] | _ThreadWrites
    ) -> None:
        """Fill one row and hand its file to ``writes``, whose result is the row's manifest
        record; a row that cannot be filled or written is recorded, not raised."""
        try:
            data, cut = self._filled(cells)
            file_name = self.names.name(row, cells)
        except ROW_ERRORS as exc:
            writes.put_done(_failed(row, exc))
            return
        done = functools.partial(self._written, row, file_name, len(data), cut)
        writes.put_file(file_name, data, done)

    def _written(
        self, row: int, file_name: str, size: int, cut: tuple[str, ...], outcome: Outcome
    ) -> _Record:
        """The manifest record of a file once written (``outcome``: its sha256), or not."""
        if isinstance(outcome, Exception):
            return _failed(row, outcome)
        return {
            "row": row,
            "path": file_name,
            "sha256": outcome,
            "pages": self.template.page_count,
            "bytes": size,
            "status": "ok",
            "error": None,
            "cut": list(cut) or None,
        }

    def _filled(self, cells: Mapping[str, object]) -> tuple[bytes, tuple[str, ...]]:
        """The row's PDF, and the fields whose text the overflow policy cut."""
        pairs = self.pairs
        row_values = {f: cells.get(c) for c, f in pairs.items() if not is_empty(cells.get(c))}
        values = coerce_values(self.fields, row_values, self.date_formats)
        if self.require:
            _check_required(self.fields, pairs, values)
        if self.fit is None:
            return self.template.fill(values, flatten=self.flatten), ()
        filled = self.template.fill_result(values, flatten=self.flatten, fit=self.fit)
        return filled.pdf, filled.cut


def _failed(row: int, exc: Exception) -> _Record:
    """The manifest record of a row that could not be filled or written."""
    return {
        "row": row,
        "path": None,
        "sha256": None,
        "pages": None,
        "bytes": None,
        "status": "error",
        "error": str(exc),
        "cut": None,
        "exception": exc,
    }


def _check_required(
    fields: Mapping[str, Field], pairs: Mapping[str, str], values: Mapping[str, object]
) -> None:
    """A field the form marks required must get a value: say which, and from which column."""
    for name, form_field in fields.items():
        if getattr(form_field, "required", False) and name not in values:
            columns = [c for c, f in pairs.items() if f == name]
            where = f"column {columns[0]!r} is empty" if columns else "no column fills it"
            raise FieldValueError(name, f"the form requires a value and {where}.")


class _ManifestWriter:
    """Appends manifest rows to a local Parquet file in groups; published whole on close.

    The file is private (0600) while it is built and gets the umask's mode, like every other
    output, only when it is whole.
    """

    def __init__(self, sink: OutputSink, name: str, group: int = 4096) -> None:
        self.sink, self.name = sink, name
        scratch = getattr(sink, "scratch", None)
        self.temp = private_temp(scratch() if scratch else None, ".manifest-", TEMP_SUFFIX)
        self.group = group
        self.pending: list[dict[str, object]] = []
        self.writer = pq.ParquetWriter(self.temp, MANIFEST_SCHEMA)

    def add(self, record: _Record) -> None:
        self.pending.append({k: record.get(k) for k in MANIFEST_SCHEMA.names})
        if len(self.pending) >= self.group:
            self._flush()

    def _flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_pylist(self.pending, schema=MANIFEST_SCHEMA))
            self.pending = []

    def discard(self) -> None:
        self.writer.close()
        self.temp.unlink(missing_ok=True)

    def close(self) -> None:
        try:
            self._flush()
            self.writer.close()
            set_new_file_mode(self.temp)
            self.sink.publish(self.name, self.temp)
        finally:
            self.temp.unlink(missing_ok=True)
