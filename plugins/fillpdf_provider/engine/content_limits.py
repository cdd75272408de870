"""Refuse files whose drawing instructions inflate past a sane size, before anyone inflates them.

A few hundred kilobytes of Flate data can expand to gigabytes (a decompression bomb), and a
chain of filters (``[/FlateDecode /FlateDecode]``, ``[/ASCIIHexDecode /FlateDecode]``) can
hide one behind another; the detectors would hold the result in memory several times over.
Each page's content streams, and the form XObjects it draws (nested ones too, each counted
once), are measured by decoding every filter of the chain in bounded steps and discarding the
output, so the check itself needs no more than a few steps' worth of memory. Pages and the
whole file have a budget.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Callable, Iterable, Iterator

from pypdf import PdfReader
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, StreamObject

from fillpdf_provider.engine.errors import DamagedPdfError

#: Decoded content per page; real pages stay far below (the densest corpus page: ~5 MB).
MAX_PAGE_CONTENT_BYTES = 64 * 1024 * 1024
#: Decoded content of the whole file, every stream counted once.
MAX_FILE_CONTENT_BYTES = 256 * 1024 * 1024
_STEP = 1024 * 1024
_MB = 1024 * 1024


def check_content_sizes(
    reader: PdfReader,
    limit: int = MAX_PAGE_CONTENT_BYTES,
    file_limit: int = MAX_FILE_CONTENT_BYTES,
) -> None:
    """Raise ``DamagedPdfError`` if a page's content inflates past ``limit`` bytes, or all of
    the file's past ``file_limit``."""
    seen: set[int] = set()
    file_total = 0
    for number, page in enumerate(reader.pages, start=1):
        total = 0
        for stream in _page_streams(page, seen):
            size = _decoded_size(stream, min(limit - total, file_limit - file_total))
            total += size
            file_total += size
            if total > limit:
                raise DamagedPdfError(
                    f"Page {number}'s content inflates past {limit // _MB} MB; a page this "
                    "large looks built to exhaust PDF readers and is not processed."
                )
            if file_total > file_limit:
                raise DamagedPdfError(
                    f"The pages' content inflates past {file_limit // _MB} MB in all; a file "
                    "this large looks built to exhaust PDF readers and is not processed."
                )


def _resolve(value: object) -> object:
    return value.get_object() if value is not None else None  # type: ignore[attr-defined]


def _page_streams(page: DictionaryObject, seen: set[int]) -> Iterator[StreamObject]:
    """The page's content streams and the form XObjects it can draw, each file object once."""
    contents = _resolve(page.get("/Contents"))
    raw_items = page.get("/Contents")
    items = contents if isinstance(contents, ArrayObject) else [raw_items]
    for item in items:
        if _first_visit(item, seen):
            stream = _resolve(item)
            if isinstance(stream, StreamObject):
                yield stream
    yield from _form_xobjects(page.get("/Resources"), seen, depth=0)


def _first_visit(item: object, seen: set[int]) -> bool:
    if isinstance(item, IndirectObject):
        key = item.idnum
        if key in seen:
            return False
        seen.add(key)
    return True


def _form_xobjects(resources: object, seen: set[int], depth: int) -> Iterator[StreamObject]:
    resources = _resolve(resources)
    if not isinstance(resources, DictionaryObject) or depth > 32:
        return
    xobjects = _resolve(resources.get("/XObject"))
    if not isinstance(xobjects, DictionaryObject):
        return
    for ref in xobjects.values():
        if not _first_visit(ref, seen):
            continue
        xobject = _resolve(ref)
        if isinstance(xobject, StreamObject) and xobject.get("/Subtype") == "/Form":
            yield xobject
            yield from _form_xobjects(xobject.get("/Resources"), seen, depth + 1)


def _decoded_size(stream: StreamObject, budget: int) -> int:
    """Bytes ``stream`` decodes to through its whole filter chain, counting no further than
    just past ``budget``. Filters this cannot decode (images' own codecs) count what reaches
    them."""
    raw = getattr(stream, "_data", b"") or b""
    filters = _resolve(stream.get("/Filter"))
    names = [str(n) for n in filters] if isinstance(filters, ArrayObject) else (
        [str(filters)] if filters else []
    )  # fmt: skip
    chunks: Iterator[bytes] = _pieces(raw)
    for name in names:
        stage = _STAGES.get(name)
        if stage is None:
            break
        chunks = stage(chunks)
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > budget:
            break
    return total


def _pieces(data: bytes) -> Iterator[bytes]:
    for start in range(0, len(data), _STEP):
        yield data[start : start + _STEP]


def _inflate(chunks: Iterable[bytes]) -> Iterator[bytes]:
    inflater = zlib.decompressobj()
    try:
        for data in chunks:
            pending = data
            while pending:
                out = inflater.decompress(pending, _STEP)
                pending = inflater.unconsumed_tail
                if out:
                    yield out
                elif pending:
                    return  # no progress: broken data
                if inflater.eof:
                    return
        yield inflater.flush()
    except zlib.error:
        return  # broken data: the readers recover what they can, as with any page


_NOT_HEX = re.compile(rb"[^0-9A-Fa-f]")


def _unhex(chunks: Iterable[bytes]) -> Iterator[bytes]:
    carry = b""
    for data in chunks:
        end = data.find(b">")
        digits = carry + _NOT_HEX.sub(b"", data if end < 0 else data[:end])
        even = len(digits) // 2 * 2
        if even:
            yield binascii.unhexlify(digits[:even])
        carry = digits[even:]
        if end >= 0:
            break
    if carry:
        yield binascii.unhexlify(carry + b"0")


_SPACE = re.compile(rb"\s+")


def _un85(chunks: Iterable[bytes]) -> Iterator[bytes]:
    carry = b""
    for data in chunks:
        end = data.find(b"~>")
        text = carry + _SPACE.sub(b"", data if end < 0 else data[:end])
        whole, count = 0, 0
        for index, char in enumerate(text):  # the longest prefix of whole groups
            if char == 0x7A and count == 0:  # "z": four zero bytes
                whole = index + 1
                continue
            count += 1
            if count == 5:
                count, whole = 0, index + 1
        try:
            if whole:
                yield base64.a85decode(text[:whole])
            carry = text[whole:]
            if end >= 0:
                if carry:
                    yield base64.a85decode(carry)
                return
        except ValueError:
            return
    if carry:
        try:
            yield base64.a85decode(carry)
        except ValueError:
            return


def _unrun(chunks: Iterable[bytes]) -> Iterator[bytes]:
    buffer = b""
    out = bytearray()
    for data in chunks:
        buffer += data
        index = 0
        while index < len(buffer):
            length = buffer[index]
            if length == 128:
                yield bytes(out)
                return
            if length < 128:
                if index + 1 + length + 1 > len(buffer):
                    break
                out += buffer[index + 1 : index + 2 + length]
                index += 2 + length
            else:
                if index + 1 >= len(buffer):
                    break
                out += buffer[index + 1 : index + 2] * (257 - length)
                index += 2
            if len(out) >= _STEP:
                yield bytes(out)
                out.clear()
        buffer = buffer[index:]
    yield bytes(out)


_STAGES: dict[str, Callable[[Iterable[bytes]], Iterator[bytes]]] = {
    "/FlateDecode": _inflate,
    "/Fl": _inflate,
    "/ASCIIHexDecode": _unhex,
    "/AHx": _unhex,
    "/ASCII85Decode": _un85,
    "/A85": _un85,
    "/RunLengthDecode": _unrun,
    "/RL": _unrun,
}
