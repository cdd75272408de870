"""Append an incremental update to a PDF: the original bytes stay, changed objects follow.

A filled form differs from its template in a few dozen small objects, so writing only those
(plus a cross-reference section that points back with ``/Prev``) costs little more than
copying the template. The cross-reference section has the same kind as the template's last
one: a table after a table, a stream after a stream.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

_STARTXREF = re.compile(rb"startxref\s+(\d+)")


@dataclass(frozen=True)
class Base:
    """What an update needs to know about the file it extends."""

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
    entries: dict[int, tuple[int, int]] = {}
    for number, generation, body in objects:
        chunk = b"%d %d obj\n%s\nendobj\n" % (number, generation, body)
        entries[number] = (position, generation)
        parts.append(chunk)
        position += len(chunk)
    update = b"".join(parts[1:])
    id1 = pdf_id(base.id0 + update)
    ids = b"[<%s><%s>]" % (base.id0.hex().encode(), id1.hex().encode())
    size = max([base.size, *(n + 1 for n in entries)])
    info = b"/Info %s" % base.info if base.info else b""
    if base.xref_is_stream:
        tail = _xref_stream(entries, size, position, base, info, ids)
    else:
        tail = _xref_table(entries, size, position, base, info, ids)
    parts.append(tail)
    return b"".join(parts)


def _runs(numbers: list[int]) -> list[list[int]]:
    runs: list[list[int]] = []
    for n in numbers:
        if runs and runs[-1][-1] == n - 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return runs


def _xref_table(
    entries: dict[int, tuple[int, int]], size: int, start: int, base: Base, info: bytes, ids: bytes
) -> bytes:
    lines = [b"xref\n"]
    for run in _runs(sorted(entries)):
        lines.append(b"%d %d\n" % (run[0], len(run)))
        lines.extend(b"%010d %05d n\r\n" % entries[n] for n in run)
    lines.append(
        b"trailer\n<</Size %d/Root %s%s/Prev %d/ID%s>>\nstartxref\n%d\n%%%%EOF\n"
        % (size, base.root, info, base.prev_xref, ids, start)
    )
    return b"".join(lines)


def _xref_stream(
    entries: dict[int, tuple[int, int]], size: int, start: int, base: Base, info: bytes, ids: bytes
) -> bytes:
    own = size
    entries = {**entries, own: (start, 0)}
    numbers = sorted(entries)
    index = b" ".join(b"%d %d" % (run[0], len(run)) for run in _runs(numbers))
    rows = b"".join(
        b"\x01" + entries[n][0].to_bytes(5, "big") + entries[n][1].to_bytes(2, "big")
        for n in numbers
    )
    return (
        b"%d 0 obj\n<</Type/XRef/Size %d/W[1 5 2]/Index[%s]/Root %s%s/Prev %d/ID%s/Length %d>>"
        b"\nstream\n%s\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n"
        % (own, own + 1, index, base.root, info, base.prev_xref, ids, len(rows), rows, start)
    )
