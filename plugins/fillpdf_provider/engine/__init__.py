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
    from fillpdf_provider.engine.filler import Filled, Template, fill, inspect

#: Names loaded on first use, by module: importing ``engine.errors`` alone (the CLI does, for
#: ``except FillPdfError``, before it knows the command) must not import pypdf and the filler.
_LAZY = {
    "OVERFLOW_POLICIES": "appearance",
    "Fit": "appearance",
    "Filled": "filler",
    "Template": "filler",
    "fill": "filler",
    "inspect": "filler",
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
    "FIELD_TYPES",
    "OVERFLOW_POLICIES",
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
    "PdfError",
    "SchemaError",
    "Template",
    "TextOverflowError",
    "UnknownFieldError",
    "fill",
    "inspect",
]
