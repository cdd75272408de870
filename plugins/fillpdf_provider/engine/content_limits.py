"""Refuse pages whose drawing instructions inflate past a sane size, before anyone inflates them.

A few hundred kilobytes of Flate data can expand to gigabytes (a decompression bomb); the
detectors would hold the result in memory several times over. Each page's content streams,
and the form XObjects it draws, are measured by inflating in bounded steps and discarding
the output, so the check itself needs no more than a step's worth of memory.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

from pypdf import PdfReader
from pypdf.generic import ArrayObject, DictionaryObject, NameObject, StreamObject

from fillpdf_provider.engine.errors import DamagedPdfError

#: Decoded content per page; real pages stay far below (the densest corpus page: ~5 MB).
MAX_PAGE_CONTENT_BYTES = 64 * 1024 * 1024
_STEP = 1024 * 1024


def check_content_sizes(reader: PdfReader, limit: int = MAX_PAGE_CONTENT_BYTES) -> None:
    """Raise ``DamagedPdfError`` if a page's content inflates past ``limit`` bytes."""
    for number, page in enumerate(reader.pages, start=1):
        total = 0
        for stream in _page_streams(page):
            total += _decoded_size(stream, limit - total)
            if total > limit:
                raise DamagedPdfError(
                    f"Page {number}'s content inflates past {limit // (1024 * 1024)} MB; a page "
                    "this large looks built to exhaust PDF readers and is not processed."
                )


def _page_streams(page: DictionaryObject) -> Iterator[StreamObject]:
    contents = page.get("/Contents")
    contents = contents.get_object() if contents is not None else None
    items = contents if isinstance(contents, ArrayObject) else [contents]
    for item in items:
        item = item.get_object() if item is not None else None
        if isinstance(item, StreamObject):
            yield item
    resources = page.get("/Resources")
    resources = resources.get_object() if resources is not None else None
    xobjects = resources.get("/XObject") if isinstance(resources, DictionaryObject) else None
    xobjects = xobjects.get_object() if xobjects is not None else None
    if isinstance(xobjects, DictionaryObject):
        for ref in xobjects.values():
            xobject = ref.get_object()
            if isinstance(xobject, StreamObject) and xobject.get("/Subtype") == "/Form":
                yield xobject


def _decoded_size(stream: StreamObject, budget: int) -> int:
    """Bytes ``stream`` decodes to, counting no further than just past ``budget``."""
    raw = getattr(stream, "_data", b"") or b""
    filters = stream.get("/Filter")
    filters = filters.get_object() if filters is not None else None
    names = list(filters) if isinstance(filters, ArrayObject) else [filters] if filters else []
    if not names:
        return len(raw)
    if names[0] not in (NameObject("/FlateDecode"), NameObject("/Fl")):
        return len(raw)  # other filters expand by small, bounded factors
    inflater = zlib.decompressobj()
    total = 0
    pending = raw
    try:
        while pending and total <= budget:
            chunk = inflater.decompress(pending, _STEP)
            total += len(chunk)
            pending = inflater.unconsumed_tail
            if not chunk and not pending:
                break
    except zlib.error:
        return total  # broken data: the readers recover what they can, as with any page
    return total
