"""Small pieces of PDF syntax the filler writes on every row, kept fast and exact."""

from __future__ import annotations

import io

from pypdf.generic import DictionaryObject, IndirectObject, NameObject, PdfObject

from fillpdf_provider.engine.appearance import escape


def text_string(value: str) -> bytes:
    """A PDF text string: PDFDocEncoding where it suffices, else UTF-16BE with a BOM."""
    if value.isascii() or all(0xA0 <= ord(c) <= 0xFF or ord(c) < 0x80 for c in value):
        return escape(value.encode("latin-1"))
    return b"<FEFF" + value.encode("utf-16-be").hex().upper().encode("ascii") + b">"


def name(value: str) -> bytes:
    """A PDF name object for ``value`` (without its slash), escaped as the syntax needs."""
    buffer = io.BytesIO()
    NameObject("/" + value).write_to_stream(buffer)
    return buffer.getvalue()


def ref(obj: IndirectObject) -> bytes:
    return b"%d %d R" % (obj.idnum, obj.generation)


def serialize(obj: PdfObject) -> bytes:
    """An object as pypdf writes it; indirect references stay references."""
    buffer = io.BytesIO()
    obj.write_to_stream(buffer)
    return buffer.getvalue()


def dict_without(obj: DictionaryObject, drop: frozenset[str]) -> bytes:
    """``obj`` serialised without ``drop`` keys and without its closing ``>>``.

    The caller appends the entries it sets and closes the dictionary, so a row costs one
    concatenation per object.
    """
    kept = DictionaryObject({k: v for k, v in obj.items() if k not in drop})
    data = serialize(kept).rstrip()
    assert data.endswith(b">>")
    return data[:-2]


def value_or_ref(obj: DictionaryObject, key: str) -> bytes | None:
    """The raw (unresolved) entry ``key`` of ``obj`` as bytes, or None."""
    if key not in obj:
        return None
    return serialize(obj.raw_get(key))
