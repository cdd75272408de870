"""Open a PDF the engine can build on, or say exactly why not.

Most templates are used as they are. Two kinds are first rewritten once with pypdf, so that
every update appended later sits on a sound base: encrypted files that open with an empty
password (the rewrite is unencrypted) and files whose cross-reference data had to be
repaired to be read.
"""

from __future__ import annotations

import io
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, NamedTuple, Union

from pypdf import PdfReader, PdfWriter
from pypdf.errors import FileNotDecryptedError, PdfReadError, PyPdfError
from pypdf.generic import DictionaryObject, IndirectObject

from fillpdf_provider.engine.errors import (
    DamagedPdfError,
    EncryptedPdfError,
    FillPdfError,
    NotAPdfError,
)
from fillpdf_provider.engine.incremental import Base, last_startxref, pdf_id, xref_kind_at

PdfInput = Union[bytes, bytearray, memoryview, str, "os.PathLike[str]", IO[bytes]]


class OpenedPdf(NamedTuple):
    reader: PdfReader
    base: Base
    #: What had to be mended to read the file, for a note to the user ("" when nothing):
    #: outputs build on the mended copy, so they open cleanly where the template did not.
    repaired: str = ""


def read_bytes(pdf: PdfInput) -> bytes:
    """The bytes of ``pdf``: bytes as they are, a path read, a binary file object read."""
    if isinstance(pdf, bytes | bytearray | memoryview):
        return bytes(pdf)
    if isinstance(pdf, str | os.PathLike):
        try:
            with open(pdf, "rb") as handle:
                return handle.read()
        except FileNotFoundError:
            raise NotAPdfError(f"No such file: {os.fspath(pdf)!r}.") from None
        except IsADirectoryError:
            raise NotAPdfError(f"{os.fspath(pdf)!r} is a folder, not a PDF file.") from None
    if hasattr(pdf, "read"):
        data = pdf.read()
        if isinstance(data, str):
            raise NotAPdfError("The file object was opened in text mode; open it with 'rb'.")
        return bytes(data)
    raise TypeError(f"Expected PDF bytes, a path or a binary file object, not {type(pdf).__name__}")


#: More objects than a PDF of any plausible size holds: a larger /Size is a lie to make
#: readers allocate, and an update written on top of it confuses other tools.
MAX_OBJECTS = 2_000_000
#: A file that needs this many repairs to be read has lost content along the way; filling
#: or converting what is left would silently give a different document.
MAX_REPAIRS = 1_000


def open_pdf(pdf: PdfInput) -> OpenedPdf:
    """Parse ``pdf`` and describe the base an incremental update can extend."""
    data = read_bytes(pdf)
    if b"%PDF-" not in data[:1024]:
        raise NotAPdfError("The file is not a PDF: it does not start with '%PDF-'.")
    log = logging.getLogger("pypdf")
    repairs = _RepairLog()
    log.addHandler(repairs)
    try:
        with reading_pdf():
            reader, repaired = _parse(data)
            _check_size(reader)
            note = ""
            if reader.is_encrypted:
                reader, data = _decrypt(reader)
            elif repaired or _xref_needs_rewrite(data):
                note = "its cross-reference data was damaged and was rebuilt from its objects"
                data = _rewrite(reader)
                reader, _ = _parse(data)
            opened = OpenedPdf(reader, _describe(reader, data), note)
    finally:
        log.removeHandler(repairs)
    if repairs.count > MAX_REPAIRS:
        raise DamagedPdfError(
            f"The PDF needed over {MAX_REPAIRS:,} repairs to be read ({repairs.count:,}), so "
            "parts of it are lost; re-save it from a PDF viewer and try again."
        )
    return opened


def _check_size(reader: PdfReader) -> None:
    declared = reader.trailer.get("/Size", 0)
    if isinstance(declared, int) and declared > MAX_OBJECTS:
        raise DamagedPdfError(
            f"The PDF declares {declared:,} objects, more than the {MAX_OBJECTS:,} the engine "
            "reads; re-save it from a PDF viewer, which writes the true count."
        )


_MALFORMED = (
    PyPdfError,
    KeyError,
    ValueError,
    TypeError,
    AttributeError,
    IndexError,
    RecursionError,
    struct.error,
    zlib.error,
)


@contextmanager
def reading_pdf(what: str = "The PDF") -> Iterator[None]:
    """Turn whatever a malformed PDF makes pypdf, pdfminer or pdfplumber raise into a
    ``DamagedPdfError`` that says what is wrong in the file, not in the library."""
    try:
        yield
    except FillPdfError:
        raise
    except Exception as exc:
        if not isinstance(exc, _MALFORMED) and not _from_pdf_library(exc):
            raise
        raise DamagedPdfError(
            f"{what} could not be read: {_damage(exc)}; re-save it with a PDF editor (or print "
            "it to a new PDF) and upload it again."
        ) from exc


def _from_pdf_library(exc: BaseException) -> bool:
    """Whether pdfminer or pdfplumber raised ``exc`` (checked by module, so neither is imported
    here for the sake of the check)."""
    return type(exc).__module__.split(".")[0] in ("pdfminer", "pdfplumber")


def _damage(exc: BaseException) -> str:
    """What is wrong with the file, told from the exception without naming its library's
    classes or objects (a user cannot act on ``IndirectObject(4, 0, 140095475528976)``)."""
    text = str(exc).lower()
    if isinstance(exc, RecursionError) or "recursion" in text:
        return "its objects are nested, or refer to one another, too deeply to read"
    if _mentions(text, "cyclic", "loop", "self reference", "circular"):
        if "page" in text:
            return "its list of pages loops back on itself"
        return "some of its objects refer back to themselves, in a loop"
    if _mentions(text, "xref", "cross-reference", "trailer", "startxref"):
        return "its cross-reference table is damaged"
    if isinstance(exc, zlib.error) or _mentions(text, "decompress", "flate", "zlib"):
        return "a compressed stream in it is damaged"
    if _mentions(text, "ended unexpectedly", "eof", "truncat"):
        return "it ends early, as if cut short while being copied"
    if isinstance(exc, KeyError | IndexError | AttributeError | TypeError):
        return "an object it needs is missing or of the wrong kind"
    return "its structure is damaged"


def _mentions(text: str, *words: str) -> bool:
    return any(word in text for word in words)


class _RepairLog(logging.Handler):
    """Counts pypdf's warnings, and notices those that say it rebuilt the xref data."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.repaired = False
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        text = record.getMessage().lower()
        if "xref" in text or "startxref" in text or "rebuild" in text or "invalid" in text:
            self.repaired = True


def _parse(data: bytes) -> tuple[PdfReader, bool]:
    log = logging.getLogger("pypdf")
    handler = _RepairLog()
    log.addHandler(handler)
    try:
        with reading_pdf():
            reader = PdfReader(io.BytesIO(data), strict=False)
            if not reader.is_encrypted:
                _ = reader.trailer["/Root"].get_object()
                _ = len(reader.pages)
    finally:
        log.removeHandler(handler)
    return reader, handler.repaired


def _decrypt(reader: PdfReader) -> tuple[PdfReader, bytes]:
    try:
        if not reader.decrypt(""):
            raise FileNotDecryptedError("password required")
        _ = len(reader.pages)
    except (FileNotDecryptedError, PdfReadError, NotImplementedError) as exc:
        raise EncryptedPdfError(
            "The PDF is encrypted with a password; remove the password (for example with "
            "`qpdf --decrypt`) and try again."
        ) from exc
    data = _rewrite(reader)
    return _parse(data)[0], data


def _rewrite(reader: PdfReader) -> bytes:
    writer = PdfWriter(clone_from=reader)
    writer._ID = None  # a content-derived /ID is set by the update
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _xref_needs_rewrite(data: bytes) -> bool:
    offset = last_startxref(data)
    return offset is None or xref_kind_at(data, offset) is None


def _describe(reader: PdfReader, data: bytes) -> Base:
    trailer = reader.trailer
    offset = last_startxref(data)
    if offset is None:
        raise DamagedPdfError("The PDF has no 'startxref'; re-save it from a PDF viewer.")
    root = trailer.raw_get("/Root")
    info = trailer.raw_get("/Info") if "/Info" in trailer else None
    ids = trailer.get("/ID")
    id0 = pdf_id(data)
    if ids and len(ids) >= 1:
        first = ids[0].get_object()
        raw = getattr(first, "original_bytes", None) or bytes(str(first), "latin-1")
        if raw:
            id0 = bytes(raw)
    return Base(
        data=data,
        prev_xref=offset,
        xref_is_stream=xref_kind_at(data, offset) == "stream",
        size=max(int(trailer.get("/Size", 0)), _highest_object(reader) + 1),
        root=_ref_bytes(root),
        info=_ref_bytes(info) if isinstance(info, IndirectObject) else None,
        id0=id0,
    )


def _highest_object(reader: PdfReader) -> int:
    numbers = [n for table in reader.xref.values() for n in table]
    numbers += list(reader.xref_objStm)
    return max(numbers, default=0)


def _ref_bytes(ref: object) -> bytes:
    if isinstance(ref, IndirectObject):
        return b"%d %d R" % (ref.idnum, ref.generation)
    if isinstance(ref, DictionaryObject):
        raise DamagedPdfError("The PDF's catalog is not an indirect object; re-save the file.")
    raise DamagedPdfError("The PDF has no catalog (/Root); re-save it from a PDF viewer.")
