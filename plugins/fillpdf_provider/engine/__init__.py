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
    UnknownFieldError,
)
from fillpdf_provider.engine.filler import Template, fill, inspect
from fillpdf_provider.engine.schema import FIELD_TYPES, Field

__all__ = [
    "FIELD_TYPES",
    "DamagedPdfError",
    "EncryptedPdfError",
    "Field",
    "FieldError",
    "FieldValueError",
    "FillPdfError",
    "NoFormError",
    "NotAPdfError",
    "PdfError",
    "SchemaError",
    "Template",
    "UnknownFieldError",
    "fill",
    "inspect",
]
