"""Refuse files whose drawing instructions inflate past a sane size, before anyone inflates them.

A few hundred kilobytes of Flate data can expand to gigabytes (a decompression bomb), and a
chain of filters (``[/FlateDecode /FlateDecode]``, ``[/ASCIIHexDecode /FlateDecode]``) can
hide one behind another; the detectors would hold the result in memory several times over.
Each page's content streams, and the form XObjects it draws (nested ones too, each counted
once), are measured by decoding every filter of the chain in bounded steps and discarding the
output, so the check itself needs no more than a few steps' worth of memory. Pages and the
whole file have a budget.

Drawing is bounded too. A form XObject is drawn each time a content stream says ``/Name Do``,
and forms can draw forms: a form that draws itself (through its own or an inherited
``/Resources``), or a few forms that each draw the next twice, make pdfminer and PDFium
draw for ever or for hours. The ``Do`` operators found while decoding are followed through
the resources the readers would use, each form's cost counted once, so a page is refused
in time linear in its forms when drawing it would never end or would draw past a budget.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from pypdf import PdfReader
from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject, PdfObject, StreamObject

from fillpdf_provider.engine.errors import DamagedPdfError
from fillpdf_provider.engine.pdfsyntax import name_bytes

#: Decoded content per page; real pages stay far below (the densest corpus page: ~5 MB).
MAX_PAGE_CONTENT_BYTES = 64 * 1024 * 1024
#: Decoded content of the whole file, every stream counted once.
MAX_FILE_CONTENT_BYTES = 256 * 1024 * 1024
#: Form XObjects drawn for one page, each time one is drawn inside another counted: real
#: pages draw at most a few hundred, and pdfminer takes about two seconds for ten thousand.
MAX_FORM_DRAWS = 10_000
#: Form XObjects drawn inside one another deeper than this are not a real page's drawing.
MAX_FORM_DEPTH = 64
#: Bytes decoded per step: about what measuring a stream holds in memory at once.
DECODE_STEP = 1024 * 1024
_MB = 1024 * 1024


def check_content_sizes(
    reader: PdfReader,
    limit: int = MAX_PAGE_CONTENT_BYTES,
    file_limit: int = MAX_FILE_CONTENT_BYTES,
) -> list[int]:
    """Raise ``DamagedPdfError`` if a page's content inflates past ``limit`` bytes, or all of
    the file's past ``file_limit``, or if drawing a page draws form XObjects without end or
    past ``MAX_FORM_DRAWS`` times or ``limit`` bytes.

    Returns each page's content as drawn: its streams and every form each time it is drawn,
    which is what a reader of the page works through.
    """
    seen: set[int] = set()
    drawing = _Drawing(limit)
    drawn: list[int] = []
    file_total = 0
    for number, page in enumerate(reader.pages, start=1):
        total = 0
        for stream in _page_streams(page, seen):
            size = drawing.scan(stream, min(limit - total, file_limit - file_total)).size
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
        drawn.append(drawing.page(page, number))
    return drawn


def _resolve(value: object) -> object:
    """``value`` with an indirect reference followed (pypdf's values are all ``PdfObject``)."""
    return value.get_object() if isinstance(value, PdfObject) else value


def _page_streams(page: DictionaryObject, seen: set[int]) -> Iterator[StreamObject]:
    """The page's content streams and the form XObjects it can draw, each file object once."""
    for item in _content_items(page):
        if _first_visit(item, seen):
            stream = _resolve(item)
            if isinstance(stream, StreamObject):
                yield stream
    yield from _form_xobjects(page.get("/Resources"), seen, depth=0)


def _content_items(page: DictionaryObject) -> list[object]:
    """The page's ``/Contents``: a stream, or the items of an array of them."""
    contents = _resolve(page.get("/Contents"))
    return list(contents) if isinstance(contents, ArrayObject) else [page.get("/Contents")]


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


def decoded_size(stream: StreamObject, budget: int) -> int:
    """Bytes ``stream`` decodes to through its whole filter chain, counting no further than
    just past ``budget``. Filters this cannot decode (images' own codecs) count what reaches
    them."""
    total = 0
    for chunk in _decoded(stream):
        total += len(chunk)
        if total > budget:
            break
    return total


def _decoded(stream: StreamObject) -> Iterator[bytes]:
    """``stream`` decoded through its filter chain, in steps of about a megabyte."""
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
    return chunks


# --- drawing: which forms a page draws, and how often ----------------------------------------

_DELIMITER = rb"\x00\t\n\x0c\r /\[\]()<>{}%"
#: ``/Name Do``: an XObject drawn. A match spans at most ``_DO_SPAN`` bytes.
_DO = re.compile(
    rb"/([^" + _DELIMITER + rb"]{1,255})[\x00\t\n\x0c\r ]{0,32}Do(?=[" + _DELIMITER + rb"])"
)
_DO_SPAN = 320
_ESCAPE = re.compile(rb"#([0-9A-Fa-f]{2})")
#: Distinct names remembered per stream: far more than any resources dictionary holds.
_MAX_NAMES = 65_536


@dataclass
class _Scan:
    """A decoded stream's size and the names its ``Do`` operators draw, with how often."""

    size: int
    names: Counter[bytes] = field(default_factory=Counter)


def _scan(stream: StreamObject, budget: int) -> _Scan:
    """Decode ``stream`` as ``decoded_size`` does, noting its ``Do`` operators on the way.

    Steps overlap by ``_DO_SPAN`` bytes so an operator split between two is read whole, and
    counted in the step where it starts.
    """
    found = _Scan(0)
    tail = b""
    for chunk in _decoded(stream):
        found.size += len(chunk)
        # "D" alone is looked for with memchr, many times faster than "Do".
        if b"D" in chunk or b"Do" in tail or (tail[-1:] == b"D" and chunk[:1] == b"o"):
            text = tail + chunk
            cut = max(len(text) - _DO_SPAN, 0)
            _count_do(text, cut, found.names)
            tail = text[cut:]
        else:  # most of a big stream (and all of a bomb's padding): nothing to count
            tail = (tail + chunk[-_DO_SPAN:])[-_DO_SPAN:]
        if found.size > budget:
            return found
    _count_do(tail + b"\n", len(tail) + 1, found.names)
    return found


def _count_do(text: bytes, end: int, names: Counter[bytes]) -> None:
    """Count the ``Do`` operators that start before ``end`` in ``text``."""
    if b"Do" not in text:
        return
    for match in _DO.finditer(text):
        if match.start() >= end:
            break
        name = _ESCAPE.sub(lambda m: bytes([int(m[1], 16)]), match[1])
        if name in names or len(names) < _MAX_NAMES:
            names[name] += 1


@dataclass
class _Cost:
    """What drawing a form once costs: forms drawn (itself included), bytes, nesting depth."""

    draws: int
    size: int
    depth: int


class _Drawing:
    """Follows ``Do`` from each page through the form XObjects drawn, as the readers would.

    A form draws with its own ``/Resources``, or without them with those of whoever draws
    it (pdfminer and PDFium both do so). What a form costs is worked out once per form and
    resources, so the walk is linear in the forms however often each is drawn; a form met
    again while it is being drawn is a drawing without end.

    Content is also drawn outside ``Do``, once each: annotations' appearances, the glyphs of
    Type3 fonts, tiling patterns and soft masks of the resources in use. Each is followed
    the same way, so a form that draws itself is found wherever it hides.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._scans: dict[int, _Scan] = {}
        self._costs: dict[tuple[int, int], _Cost] = {}
        self._forms: dict[int, dict[bytes, StreamObject]] = {}
        self._used: set[int] = set()  # every resources dictionary drawn with ...
        self._new: list[DictionaryObject] = []  # ... of which these are not yet followed
        self._painted: set[int] = set()  # content drawn once, followed once per file
        self._keep: list[object] = []  # what the caches are keyed on by id, kept alive
        self._page = 0
        self._fresh = 0  # bytes decoded here for the page beyond what the caller counted

    def scan(self, stream: StreamObject, budget: int) -> _Scan:
        """``stream``'s size and ``Do`` names, decoded once per file."""
        found = self._scans.get(id(stream))
        if found is None:
            found = self._scans[id(stream)] = _scan(stream, budget)
            self._keep.append(stream)
        return found

    def page(self, page: DictionaryObject, number: int) -> int:
        """Bytes drawing the page's content works through (its streams and the forms they
        draw, each time drawn); raises if drawing it, or anything else on it, never ends or
        draws too much."""
        self._page, self._fresh = number, 0
        names: Counter[bytes] = Counter()
        size = 0
        for item in _content_items(page):
            stream = _resolve(item)
            if isinstance(stream, StreamObject):
                found = self._more(stream)
                names.update(found.names)
                size += found.size
        resources = _resolve(page.get("/Resources"))
        total = self._draw(names, resources, set())
        drawn = size + total.size
        pending = [(stream, resources) for stream in _appearances(page)]
        while pending or self._new:
            while self._new:
                pending.extend(_painters(self._new.pop()))
            if not pending:
                break
            stream, outer = pending.pop()
            if id(stream) in self._painted:
                continue
            self._painted.add(id(stream))
            self._keep.append(stream)
            found = self._more(stream)
            inside = self._draw(found.names, _own_resources(stream, outer), {id(stream)})
            total.draws += inside.draws
            total.size += found.size + inside.size
            self._check(total, 0)
        return drawn

    def _more(self, stream: StreamObject) -> _Scan:
        """``scan`` for a stream the caller's budgets may not have counted yet."""
        if id(stream) in self._scans:
            return self._scans[id(stream)]
        found = self.scan(stream, self.limit - self._fresh)
        self._fresh += found.size
        if self._fresh > self.limit:
            raise self._refuse(f"draws past {self.limit // _MB} MB of content")
        return found

    def _draw(self, names: Counter[bytes], resources: object, path: set[int]) -> _Cost:
        """The cost of drawing every ``Do`` in ``names`` with ``resources``."""
        total = _Cost(0, 0, 0)
        if isinstance(resources, DictionaryObject) and id(resources) not in self._used:
            self._used.add(id(resources))
            self._new.append(resources)
            self._keep.append(resources)
        forms = self._forms_of(resources)
        if not forms:
            return total
        for name, count in names.items():
            form = forms.get(name)
            if form is None:
                continue
            if id(form) in path:
                raise self._refuse("draws a form XObject inside itself, so drawing never ends")
            inner = _own_resources(form, resources)
            cost = self._costs.get((id(form), id(inner)))
            if cost is None:
                if len(path) >= MAX_FORM_DEPTH:
                    raise self._refuse(f"draws form XObjects over {MAX_FORM_DEPTH} deep")
                path.add(id(form))
                found = self._more(form)
                inside = self._draw(found.names, inner, path)
                path.discard(id(form))
                cost = _Cost(1 + inside.draws, found.size + inside.size, 1 + inside.depth)
                self._costs[(id(form), id(inner))] = cost
            total.draws += count * cost.draws
            total.size += count * cost.size
            total.depth = max(total.depth, cost.depth)
            self._check(total, len(path))
        return total

    def _check(self, total: _Cost, depth: int) -> None:
        if total.depth + depth > MAX_FORM_DEPTH:
            raise self._refuse(f"draws form XObjects over {MAX_FORM_DEPTH} deep")
        if total.draws > MAX_FORM_DRAWS:
            raise self._refuse(
                f"draws form XObjects inside one another over {MAX_FORM_DRAWS:,} times"
            )
        if total.size > self.limit:
            raise self._refuse(
                f"draws past {self.limit // _MB} MB of content as its form XObjects are drawn "
                "inside one another"
            )

    def _forms_of(self, resources: object) -> dict[bytes, StreamObject]:
        """The form XObjects of ``resources`` by the bytes of their names."""
        key = id(resources)
        forms = self._forms.get(key)
        if forms is None:
            forms = {}
            for name, xobject in _entries(resources, "/XObject"):
                if isinstance(xobject, StreamObject) and xobject.get("/Subtype") == "/Form":
                    forms[name_bytes(name[1:])] = xobject
            self._forms[key] = forms
            self._keep.append(resources)
        return forms

    def _refuse(self, what: str) -> DamagedPdfError:
        return DamagedPdfError(
            f"Page {self._page} {what}; a page like this looks built to exhaust PDF readers "
            "and is not processed. If it came from a real application, print it to a new PDF "
            "from a PDF viewer and upload that."
        )


def _entries(resources: object, kind: str) -> list[tuple[str, object]]:
    """The resolved entries of ``resources[kind]`` (``/XObject``, ``/Font`` ...)."""
    table = _resolve(resources.get(kind)) if isinstance(resources, DictionaryObject) else None
    if not isinstance(table, DictionaryObject):
        return []
    return [(name, _resolve(ref)) for name, ref in table.items()]


def _own_resources(stream: DictionaryObject, outer: object) -> object:
    """The resources content in ``stream`` draws with: its own, else those it is drawn with."""
    own = _resolve(stream.get("/Resources"))
    return own if isinstance(own, DictionaryObject) and own else outer


def _painters(resources: DictionaryObject) -> list[tuple[StreamObject, object]]:
    """Content ``resources`` bring that readers draw without ``Do``: the glyphs of Type3 fonts,
    tiling patterns, soft masks; each with the resources it falls back on."""
    found = _type3_glyphs(resources)
    for _, pattern in _entries(resources, "/Pattern"):
        found.append((pattern, resources))
    for _, state in _entries(resources, "/ExtGState"):
        mask = _resolve(state.get("/SMask")) if isinstance(state, DictionaryObject) else None
        if isinstance(mask, DictionaryObject):
            found.append((_resolve(mask.get("/G")), resources))
    return [(s, outer) for s, outer in found if isinstance(s, StreamObject)]


def _type3_glyphs(resources: DictionaryObject) -> list[tuple[object, object]]:
    """The glyph procedures of the Type3 fonts of ``resources``, each with the resources it
    draws with (the font's own, else these)."""
    found: list[tuple[object, object]] = []
    for _, font in _entries(resources, "/Font"):
        if isinstance(font, DictionaryObject) and font.get("/Subtype") == "/Type3":
            outer = _own_resources(font, resources)
            found += [(glyph, outer) for _, glyph in _entries(font, "/CharProcs")]
    return found


def _appearances(page: DictionaryObject) -> list[StreamObject]:
    """The normal appearances of the page's annotations (of each state), which a page is
    drawn with."""
    annots = _resolve(page.get("/Annots"))
    found: list[StreamObject] = []
    for annot in annots if isinstance(annots, ArrayObject) else []:
        annot = _resolve(annot)
        ap = _resolve(annot.get("/AP")) if isinstance(annot, DictionaryObject) else None
        entry = _resolve(ap.get("/N")) if isinstance(ap, DictionaryObject) else None
        if isinstance(entry, StreamObject):
            found.append(entry)
        elif isinstance(entry, DictionaryObject):
            found += [s for _, s in _entries(ap, "/N") if isinstance(s, StreamObject)]
    return found


def _pieces(data: bytes) -> Iterator[bytes]:
    for start in range(0, len(data), DECODE_STEP):
        yield data[start : start + DECODE_STEP]


def _inflate(chunks: Iterable[bytes]) -> Iterator[bytes]:
    inflater = zlib.decompressobj()
    try:
        for data in chunks:
            pending = data
            while pending:
                out = inflater.decompress(pending, DECODE_STEP)
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
        whole = _whole_groups(text)
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


def _whole_groups(text: bytes) -> int:
    """The length of the longest start of ASCII85 ``text`` made of whole groups (five
    characters, or a ``z`` standing for four zero bytes)."""
    whole, count = 0, 0
    for index, char in enumerate(text):
        if char == 0x7A and count == 0:  # "z": four zero bytes
            whole = index + 1
            continue
        count += 1
        if count == 5:
            count, whole = 0, index + 1
    return whole


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
            if len(out) >= DECODE_STEP:
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
