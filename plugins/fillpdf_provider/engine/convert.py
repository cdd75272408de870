"""Convert a flat PDF into a fillable one: detect the fields, write the AcroForm, report.

``convert`` is what the CLI, the service and the Airflow operator call. The result carries
the schema (the contract's entries) and the fillable PDF, which fills with ``Template``.
Given a ``schema`` (a reviewed, edited one), it skips detection and writes exactly that form.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from fillpdf_provider.engine.acroform_writer import write_acroform
from fillpdf_provider.engine.content_limits import check_content_sizes
from fillpdf_provider.engine.detect import MODES, detect_fields
from fillpdf_provider.engine.detect.model import Detected
from fillpdf_provider.engine.detect.scorer import Model
from fillpdf_provider.engine.errors import FillPdfError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.rebuild import (
    SchemaInput,
    check_placement,
    fit_to_pages,
    parse_schema,
)
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.engine.source import PdfInput, open_pdf, read_bytes, reading_pdf

MAX_PAGES = 500


@dataclass
class ConversionResult:
    """The spec's conversion result, plus the fillable PDF itself."""

    pdf: bytes
    schema: list[Field]
    pages: int
    ms: int
    status: str = "converted"
    conversion_id: str | None = None
    document_url: str | None = None
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def fields(self) -> int:
        return len(self.schema)

    @property
    def confidence(self) -> float:
        if not self.schema:
            return 0.0
        return round(sum(f.confidence for f in self.schema) / len(self.schema), 3)

    def to_dict(self) -> dict[str, object]:
        """The JSON the API and ``fillpdf convert --json`` return (no PDF bytes)."""
        return {
            "status": self.status,
            "document_url": self.document_url,
            "conversion_id": self.conversion_id,
            "fields": self.fields,
            "confidence": self.confidence,
            "pages": self.pages,
            "ms": self.ms,
            "schema": [f.to_dict() for f in self.schema],
        }


def convert(
    pdf: PdfInput,
    detect: str = "fields",
    *,
    max_pages: int = MAX_PAGES,
    schema: SchemaInput | None = None,
    min_confidence: float = 0.0,
    model: Model | str | None = "shipped",
) -> ConversionResult:
    """Detect the fields of a flat ``pdf`` and return it fillable, with its schema.

    Each detected field carries a calibrated confidence (of fields at 0.9, about nine in
    ten are right); ``min_confidence`` leaves out the fields less sure than that.

    With ``schema`` (the ``schema`` list a conversion returned, that whole result, a list of
    ``Field``, or any of them as JSON text) detection is skipped and the form is written
    exactly as the schema says; a bad entry raises ``SchemaError`` and nothing is written.

    ``model`` is the field scorer (``detect_fields``): the shipped one, or another, such as
    a model trained without the forms it is evaluated on.
    """
    if detect not in MODES:
        raise FillPdfError(
            f"detect must be 'fields' or 'fields_fast', not {detect!r}.", param="detect"
        )
    if not 0.0 <= min_confidence <= 1.0:
        raise FillPdfError(
            f"min_confidence must be between 0 and 1, not {min_confidence!r}.",
            param="min_confidence",
        )
    started = time.perf_counter()
    wanted = parse_schema(schema) if schema is not None else None
    data = read_bytes(pdf)
    opened = open_pdf(data)
    pages = len(opened.reader.pages)
    if pages == 0:
        raise FillPdfError("The PDF has no pages.", param="file")
    if pages > max_pages:
        raise FillPdfError(
            f"The PDF has {pages} pages; at most {max_pages} can be converted.", param="file"
        )
    base = opened.base.data
    detected: Sequence[Detected] = []
    if wanted is not None:
        with reading_pdf():
            check_placement(wanted, opened.reader)
        detected = wanted
    else:
        with reading_pdf():
            drawn = check_content_sizes(opened.reader)
            detected = detect_fields(
                base, detect, model=model, min_confidence=min_confidence, drawn=drawn
            )
            detected = fit_to_pages(detected, opened.reader)
    # Names the detector chose give way to the form's own; a schema's names are the user's.
    output = write_acroform(base, detected, rename_taken=wanted is None) if detected else base
    entries = _schema(output, detected)
    ms = round((time.perf_counter() - started) * 1000)
    return ConversionResult(pdf=output, schema=entries, pages=pages, ms=ms)


def _schema(output: bytes, detected: Sequence[Detected]) -> list[Field]:
    """Schema entries of the written form, with the detector's labels and confidences."""
    if not detected:
        return []
    by_name: dict[str, tuple[str | None, float]] = {}
    for d in detected:
        label, confidence = by_name.get(d.name, (d.label, 0.0))
        by_name[d.name] = (label, max(confidence, d.confidence))
    entries = []
    for entry in Template(output).fields:
        label, confidence = by_name.get(entry.name, (entry.label, 0.5))
        entries.append(replace(entry, label=label, confidence=confidence))
    return entries
