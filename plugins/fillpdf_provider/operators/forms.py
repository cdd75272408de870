"""The form a fill starts from, in either mode: a conversion id, or a fillable PDF anywhere.

It is the engine's ``Template`` wherever the rows are filled on the worker: embedded, and in
api mode by default, where the conversion's fillable PDF is downloaded once and filled by the
same engine the service runs (fills are never metered, so the result is the service's,
byte for byte, without a request per row). With ``fill_on="service"`` it is ``ApiForm``: the
form's fields are known locally (so every row is checked and coerced the same way), and each
fill is one request to the service, by conversion id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fillpdf_provider.client import InvalidRequest
from fillpdf_provider.engine.errors import FillPdfError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.storage import read_bytes

FILL_ON = ("worker", "service")


def is_conversion_id(template: str) -> bool:
    return template.startswith("conv_") and "/" not in template and "." not in template


class ApiForm:
    """A form filled by the FillPDF service, row by row."""

    def __init__(
        self,
        hook: FillPdfHook,
        fields: list[Field],
        page_count: int,
        *,
        conversion_id: str,
        date_formats: Mapping[str, str | None] | None = None,
    ) -> None:
        self.hook = hook
        self.fields = fields
        self.page_count = page_count
        self.conversion_id = conversion_id
        self._date_formats = dict(date_formats or {})

    def date_format(self, field_name: str) -> str | None:
        return self._date_formats.get(field_name)

    def fill(self, values: Mapping[str, object], *, flatten: bool = False) -> bytes:
        try:
            return self.hook.fill(self.conversion_id, values, flatten=flatten)
        except InvalidRequest as exc:  # a bad row, not a broken batch
            raise FillPdfError(exc.message, param=exc.param) from None


def open_form(
    hook: FillPdfHook, template: str, *, fill_on: str = "worker", conn_id: str | None = None
) -> Template | ApiForm:
    """The fillable form named by ``template`` (a conversion id, a path or a URI), filled on
    the worker or, with ``fill_on="service"`` in api mode, by the service."""
    if fill_on not in FILL_ON:
        raise ValueError(f"fill_on must be one of {FILL_ON}, not {fill_on!r}.")
    remote = fill_on == "service" and hook.mode == "api"
    if not is_conversion_id(template):
        if remote:
            raise ValueError(
                f"fill_on='service' fills a conversion by its id, and {template!r} is a file; "
                "convert it first (ConvertOperator) and pass the conversion id, or fill on "
                "the worker (fill_on='worker')."
            )
        return Template(read_bytes(template, conn_id))
    local = Template(hook.get_conversion(template).pdf)
    if not remote:
        return local
    return ApiForm(hook, local.fields, local.page_count, conversion_id=template,
                   date_formats=_date_formats(local))  # fmt: skip


def _date_formats(template: Template) -> dict[str, Any]:
    return {f.name: template.date_format(f.name) for f in template.fields if f.type == "date"}
