"""The embedded engine: read a form's fields and fill it, with no server and no key.

It imports neither Airflow nor HTTP code, so the service, the CLI and the Airflow
provider all stand on the same few functions::

    from fillpdf_provider.engine import Template, fill, inspect

    fields = inspect("w9.pdf")                       # list[Field]
    pdf = fill("w9.pdf", {"name": "Zoë Ångström"})   # bytes
    template = Template.open("w9.pdf")               # parse once ...
    for row in rows:
        template.write(f"out/{row['id']}.pdf", row)  # ... fill many
"""

import importlib
from typing import TYPE_CHECKING

from fillpdf_provider.engine.errors import (
    DamagedPdfError,
    EncryptedPdfError,
    FieldError,
    FieldValueError,
    FillPdfError,
    NoFormError,
    NotAPdfError,
    PdfError,
    SchemaError,
    TextOverflowError,
    UnknownFieldError,
)
from fillpdf_provider.engine.schema import FIELD_TYPES, Field

if TYPE_CHECKING:
    from fillpdf_provider.engine.appearance import OVERFLOW_POLICIES, Fit
    from fillpdf_provider.engine.batch import (
        MANIFEST_NAME,
        MANIFEST_SCHEMA,
        BatchSummary,
        OutputNames,
        RowError,
        count_rows,
        fill_rows,
        read_batches,
        read_columns,
        total_rows,
    )
    from fillpdf_provider.engine.coerce import FALSE_WORDS, TRUE_WORDS, coerce_values, to_text
    from fillpdf_provider.engine.columns import ColumnError, ColumnPlan, normalise, plan_columns
    from fillpdf_provider.engine.convert import ConversionResult
    from fillpdf_provider.engine.detect import MODES
    from fillpdf_provider.engine.files import write_atomic
    from fillpdf_provider.engine.filler import Filled, Template, fill, inspect
    from fillpdf_provider.engine.form import check_form_size
    from fillpdf_provider.engine.preview import write_preview
    from fillpdf_provider.engine.rebuild import check_placement, parse_schema, schema_digest
    from fillpdf_provider.engine.source import open_pdf, read_bytes, reading_pdf

#: Names loaded on first use, by module: importing ``engine.errors`` alone (the CLI does, for
#: ``except FillPdfError``, before it knows the command) must not import pypdf and the filler.
#: ``convert`` the function is not among them: it shares its name with its module, and
#: importing ``engine.convert`` rebinds that name to the module, so it is imported from there.
_LAZY = {
    "OVERFLOW_POLICIES": "appearance",
    "Fit": "appearance",
    "BatchSummary": "batch",
    "MANIFEST_NAME": "batch",
    "MANIFEST_SCHEMA": "batch",
    "OutputNames": "batch",
    "RowError": "batch",
    "count_rows": "batch",
    "fill_rows": "batch",
    "read_batches": "batch",
    "read_columns": "batch",
    "total_rows": "batch",
    "FALSE_WORDS": "coerce",
    "TRUE_WORDS": "coerce",
    "coerce_values": "coerce",
    "to_text": "coerce",
    "ColumnError": "columns",
    "ColumnPlan": "columns",
    "normalise": "columns",
    "plan_columns": "columns",
    "ConversionResult": "convert",
    "MODES": "detect",
    "write_atomic": "files",
    "Filled": "filler",
    "Template": "filler",
    "fill": "filler",
    "inspect": "filler",
    "check_form_size": "form",
    "write_preview": "preview",
    "check_placement": "rebuild",
    "parse_schema": "rebuild",
    "schema_digest": "rebuild",
    "open_pdf": "source",
    "read_bytes": "source",
    "reading_pdf": "source",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "FALSE_WORDS",
    "FIELD_TYPES",
    "MANIFEST_NAME",
    "MANIFEST_SCHEMA",
    "MODES",
    "OVERFLOW_POLICIES",
    "TRUE_WORDS",
    "BatchSummary",
    "ColumnError",
    "ColumnPlan",
    "ConversionResult",
    "DamagedPdfError",
    "EncryptedPdfError",
    "Field",
    "FieldError",
    "FieldValueError",
    "FillPdfError",
    "Filled",
    "Fit",
    "NoFormError",
    "NotAPdfError",
    "OutputNames",
    "PdfError",
    "RowError",
    "SchemaError",
    "Template",
    "TextOverflowError",
    "UnknownFieldError",
    "check_form_size",
    "check_placement",
    "coerce_values",
    "count_rows",
    "fill",
    "fill_rows",
    "inspect",
    "normalise",
    "open_pdf",
    "parse_schema",
    "plan_columns",
    "read_batches",
    "read_bytes",
    "read_columns",
    "reading_pdf",
    "schema_digest",
    "to_text",
    "total_rows",
    "write_atomic",
    "write_preview",
]
