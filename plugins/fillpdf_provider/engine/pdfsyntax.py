"""PDF syntax the filler writes: objects as the template spelled them, values made exact.

Objects copied from the template are written back with their original bytes wherever pypdf
kept them (names and strings), because appearance state names like ``/Ja`` or a
Shift-JIS ``/はい`` must match the keys of appearance dictionaries byte for byte.
"""

from __future__ import annotations

import re
from functools import lru_cache

from pypdf.generic import (
    ArrayObject,
    BooleanObject,
    ByteStringObject,
    DictionaryObject,
    FloatObject,
    IndirectObject,
    NameObject,
    NullObject,
    NumberObject,
    PdfObject,
    StreamObject,
    TextStringObject,
)

from fillpdf_provider.engine.appearance import escape

# Bytes a name can hold as they are: regular characters other than '#' (PDF 32000 7.3.5).
_NAME_REGULAR = frozenset(range(0x21, 0x7F)) - frozenset(b"#()<>[]{}/%")


# Characters where PDFDocEncoding and Latin-1 differ or are undefined (0x7F, 0xA0, 0xAD ...).
_NOT_PDFDOC = re.compile("[^\t\n\r\x20-\x7e\xa1-\xac\xae-\xff]")


def text_string(value: str) -> bytes:
    """A PDF text string: PDFDocEncoding where it suffices, else UTF-16BE with a BOM."""
    if _NOT_PDFDOC.search(value) is None:
        return escape(value.encode("latin-1"))
    return b"<FEFF" + value.encode("utf-16-be").hex().upper().encode("ascii") + b">"


def name_bytes(value: str) -> bytes:
    """The bytes pypdf decoded into the name ``value`` (it tries each of its charsets)."""
    charsets = NameObject.CHARSETS
    for index, charset in enumerate(charsets):
        try:
            raw = value.encode(charset)
        except UnicodeEncodeError:
            continue
        if all(_fails(raw, earlier) for earlier in charsets[:index]):
            return raw
    return value.encode("utf-8")


def _fails(raw: bytes, charset: str) -> bool:
    try:
        raw.decode(charset)
    except UnicodeDecodeError:
        return True
    return False


@lru_cache(maxsize=4096)
def name(value: str) -> bytes:
    """A PDF name object for ``value`` (without its slash), with its original bytes."""
    raw = name_bytes(value)
    if all(b in _NAME_REGULAR for b in raw):
        return b"/" + raw
    return b"/" + b"".join(bytes([b]) if b in _NAME_REGULAR else b"#%02X" % b for b in raw)


def ref(obj: IndirectObject) -> bytes:
    return b"%d %d R" % (obj.idnum, obj.generation)


def serialize(obj: PdfObject) -> bytes:
    """``obj`` in PDF syntax; indirect references stay references."""
    if isinstance(obj, IndirectObject):
        return b"%d %d R" % (obj.idnum, obj.generation)
    if isinstance(obj, NameObject):
        return name(obj[1:])
    if isinstance(obj, DictionaryObject):
        if isinstance(obj, StreamObject):
            raise ValueError("a stream cannot be written inline")
        return b"<<" + b"".join(name(k[1:]) + b" " + serialize(v) for k, v in obj.items()) + b">>"
    if isinstance(obj, ArrayObject):
        return b"[" + b" ".join(serialize(v) for v in obj) + b"]"
    if isinstance(obj, NumberObject):
        return b"%d" % int(obj)
    return _scalar(obj)


def _scalar(obj: PdfObject) -> bytes:
    """A boolean, real number, string or null (or anything else pypdf reads) in PDF syntax."""
    if isinstance(obj, BooleanObject):
        return b"true" if obj else b"false"
    if isinstance(obj, FloatObject):
        return obj.myrepr().encode("ascii")
    if isinstance(obj, TextStringObject | ByteStringObject):
        return _string(obj)
    if isinstance(obj, NullObject) or obj is None:
        return b"null"
    return str(obj).encode("latin-1")


def _string(obj: TextStringObject | ByteStringObject) -> bytes:
    """A string with the bytes the file had where pypdf kept them."""
    original = getattr(obj, "original_bytes", None)
    if isinstance(obj, ByteStringObject):
        original = bytes(obj)
    return escape(bytes(original)) if original is not None else text_string(str(obj))


def dict_without(obj: DictionaryObject, drop: frozenset[str]) -> bytes:
    """``obj`` serialised without ``drop`` keys and without its closing ``>>``.

    The caller appends the entries it sets and closes the dictionary, so a row costs one
    concatenation per object.
    """
    return b"<<" + b"".join(
        name(k[1:]) + b" " + serialize(v) for k, v in obj.items() if k not in drop
    )
