"""Append an incremental update to a PDF: the original bytes stay, changed objects follow.

A filled form differs from its template in a few dozen small objects, so writing only those
(plus a cross-reference section that points back with ``/Prev``) costs little more than
copying the template. The cross-reference section has the same kind as the template's last
one: a table after a table, a stream after a stream. After a stream (a PDF 1.5 file, whose
readers all read object streams) the update is compact as well: its dictionaries (widgets,
fields, fonts) go into one compressed object stream, and the cross-reference stream is
compressed too, which takes 40-50% off a filled form's update.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Iterable
from typing import NamedTuple

_STARTXREF = re.compile(rb"startxref\s+(\d+)")


class Base(NamedTuple):
    """What an update needs to know about the file it extends.

    (A named tuple, not a dataclass: defining one costs a one-off CLI fill 0.4 ms.)"""

    data: bytes
    prev_xref: int
    xref_is_stream: bool
    size: int  # the template's /Size: new objects are numbered from here
    root: bytes  # "N G R"
    info: bytes | None
    id0: bytes


def last_startxref(data: bytes) -> int | None:
    """Offset of the last cross-reference section, as the file's tail says."""
    matches = list(_STARTXREF.finditer(data, max(0, len(data) - 4096)))
    return int(matches[-1].group(1)) if matches else None


def previous_revision(data: bytes) -> bytes | None:
    """The file as it was before its last incremental update, or None when it has none.

    A conversion is its flat PDF with the form appended as an update (``append_update``), so
    this gives back the flat PDF a conversion was made from, to review and build again.
    """
    last = last_startxref(data)
    if last is None or not 0 < last < len(data):
        return None
    prev = re.search(rb"/Prev\s+(\d+)", data[last:])
    end = data.rfind(b"%%EOF", 0, last)
    if prev is None or end < 0:
        return None
    end += len(b"%%EOF")
    while data[end : end + 1] in (b"\r", b"\n"):  # its line end; the update starts an object
        end += 1
    earlier = data[:end]
    return earlier if last_startxref(earlier) == int(prev.group(1)) else None


def xref_kind_at(data: bytes, offset: int) -> str | None:
    """``"table"`` or ``"stream"`` if a cross-reference section starts at ``offset``."""
    if not 0 <= offset < len(data):
        return None
    head = data[offset : offset + 64].lstrip()
    if head.startswith(b"xref"):
        return "table"
    if re.match(rb"\d+\s+\d+\s+obj", head) and b"/XRef" in data[offset : offset + 1024]:
        return "stream"
    return None


def pdf_id(data: bytes) -> bytes:
    """A content-derived file identifier (16 bytes)."""
    return hashlib.md5(data, usedforsecurity=False).digest()


def append_update(base: Base, objects: Iterable[tuple[int, int, bytes]]) -> bytes:
    """``base.data`` followed by ``objects`` ((number, generation, body)) and an xref section.

    Output is a function of the inputs alone: the second half of ``/ID`` hashes the update.
    """
    data = base.data
    parts = [data] if data.endswith((b"\n", b"\r")) else [data, b"\n"]
    position = sum(len(p) for p in parts)
    # entries: number -> (1, offset, generation) or (2, object stream number, index)
    entries: dict[int, tuple[int, int, int]] = {}
    size = base.size
    if base.xref_is_stream:
        objects, size = _packed(list(objects), size, entries)
    for number, generation, body in objects:
        chunk = b"%d %d obj\n%s\nendobj\n" % (number, generation, body)
        entries[number] = (1, position, generation)
        parts.append(chunk)
        position += len(chunk)
        if number >= size:
            size = number + 1
    update = b"".join(parts[1:])
    id1 = pdf_id(base.id0 + update)
    ids = b"[<%s><%s>]" % (base.id0.hex().encode(), id1.hex().encode())
    info = b"/Info %s" % base.info if base.info else b""
    xref = _xref_stream if base.xref_is_stream else _xref_table
    parts.append(xref(entries, size, position, base, info, ids))
    return b"".join(parts)


def _packed(
    objects: list[tuple[int, int, bytes]], size: int, entries: dict[int, tuple[int, int, int]]
) -> tuple[list[tuple[int, int, bytes]], int]:
    """``objects`` with their dictionaries packed into object streams (numbered from past the
    highest object number), noted in ``entries``; and the size past the last stream."""
    packed = [(n, body) for n, g, body in objects if g == 0 and not _is_stream(body)]
    objects = [o for o in objects if o[1] != 0 or _is_stream(o[2])]
    size = max([size, *(n + 1 for n, _, _ in objects), *(n + 1 for n, _ in packed)])
    streams = _object_streams(packed, size, entries)
    objects.extend(streams)
    return objects, size + len(streams)


def _object_streams(
    packed: list[tuple[int, bytes]], first: int, entries: dict[int, tuple[int, int, int]]
) -> list[tuple[int, int, bytes]]:
    """Object streams holding ``packed`` ((number, body)), numbered from ``first``, as many
    as the cross-reference stream's index field allows; ``entries`` notes where each is."""
    streams: list[tuple[int, int, bytes]] = []
    for start in range(0, len(packed), _PER_OBJECT_STREAM):
        group = packed[start : start + _PER_OBJECT_STREAM]
        number = first + len(streams)
        for index, (packed_number, _) in enumerate(group):
            entries[packed_number] = (2, number, index)
        streams.append((number, 0, _object_stream(group)))
    return streams


#: Objects per object stream: the cross-reference stream's index field has two bytes.
_PER_OBJECT_STREAM = 10_000
#: One zlib level for every stream the update compresses: the same input, the same bytes.
_ZLIB_LEVEL = 6


def _is_stream(body: bytes) -> bool:
    return body.endswith(b"endstream")


def _object_stream(objects: list[tuple[int, bytes]]) -> bytes:
    """An ``/ObjStm`` holding ``objects`` ((number, body)), compressed."""
    offsets, bodies, at = [], [], 0
    for number, body in objects:
        offsets.append(b"%d %d" % (number, at))
        bodies.append(body)
        at += len(body) + 1
    head = b" ".join(offsets) + b"\n"
    packed = zlib.compress(head + b"\n".join(bodies) + b"\n", _ZLIB_LEVEL)
    return b"<</Type/ObjStm/N %d/First %d/Filter/FlateDecode/Length %d>>\nstream\n%s\nendstream" % (
        len(objects),
        len(head),
        len(packed),
        packed,
    )


def _runs(numbers: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][-1] == n - 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return runs


def _xref_table(
    entries: dict[int, tuple[int, int, int]],
    size: int,
    start: int,
    base: Base,
    info: bytes,
    ids: bytes,
) -> bytes:
    lines = [b"xref\n"]
    for run in _runs(sorted(entries)):
        lines.append(b"%d %d\n" % (run[0], len(run)))
        lines.extend(b"%010d %05d n\r\n" % entries[n][1:] for n in run)
    lines.append(
        b"trailer\n<</Size %d/Root %s%s/Prev %d/ID%s>>\nstartxref\n%d\n%%%%EOF\n"
        % (size, base.root, info, base.prev_xref, ids, start)
    )
    return b"".join(lines)


def _xref_stream(
    entries: dict[int, tuple[int, int, int]],
    size: int,
    start: int,
    base: Base,
    info: bytes,
    ids: bytes,
) -> bytes:
    own = size
    entries = {**entries, own: (1, start, 0)}
    numbers = sorted(entries)
    index = b" ".join(b"%d %d" % (run[0], len(run)) for run in _runs(numbers))
    rows = zlib.compress(
        b"".join(
            bytes((kind,)) + field.to_bytes(5, "big") + second.to_bytes(2, "big")
            for kind, field, second in map(entries.__getitem__, numbers)
        ),
        _ZLIB_LEVEL,
    )
    return (
        b"%d 0 obj\n<</Type/XRef/Size %d/W[1 5 2]/Index[%s]/Root %s%s/Prev %d/ID%s"
        b"/Filter/FlateDecode/Length %d>>\nstream\n%s\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n"
        % (own, own + 1, index, base.root, info, base.prev_xref, ids, len(rows), rows, start)
    )
