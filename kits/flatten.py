"""Make a fillable form flat: the same pages without its widgets and without ``/AcroForm``.

A flat copy is what a scanned-then-OCRed or printed-to-PDF form looks like to the converter,
and the removed widgets are the answer it should find. ``benchmarks/detect_eval.py`` scores
the detector on flat copies of the corpus (and caches them under its ``FLATTEN_VERSION``: bump
it when ``flatten_form`` changes), ``benchmarks/output_digest.py`` digests converted ones, and
the engine's tests convert and fill them.
"""

from __future__ import annotations

import io
from typing import Any

from pypdf import PdfWriter
from pypdf.generic import ArrayObject, DictionaryObject, NameObject

from kits.viewcheck import _resolve, open_pdf


def _is_widget(annot: Any) -> bool:
    return isinstance(annot, DictionaryObject) and annot.get("/Subtype") == "/Widget"


def _annots(page: Any) -> list[Any]:
    annots = _resolve(page.get("/Annots"))
    return list(annots) if isinstance(annots, list) else []


def flatten_form(pdf: bytes) -> bytes:
    """A flat copy of a fillable form: no widget annotations, no ``/AcroForm``.

    Other annotations (links, comments) stay. ``/NeedsRendering`` goes with the form, as it
    only makes sense with XFA. Encrypted forms (empty user password) come out unencrypted.
    """
    writer = PdfWriter(clone_from=open_pdf(pdf))
    for page in writer.pages:
        if "/Annots" not in page:
            continue
        annots = _annots(page)
        keep = ArrayObject(ref for ref in annots if not _is_widget(_resolve(ref)))
        if keep:
            page[NameObject("/Annots")] = keep
        else:
            del page["/Annots"]
    root = writer.root_object
    for key in ("/AcroForm", "/NeedsRendering"):
        if key in root:
            del root[key]
    writer.compress_identical_objects(remove_duplicates=False, remove_unreferenced=True)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()
