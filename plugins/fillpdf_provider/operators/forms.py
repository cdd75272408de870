"""The form a fill starts from, in either mode: a conversion id, or a fillable PDF anywhere.

Embedded, it is the engine's ``Template``. In api mode it is ``ApiForm``: the form's fields
are known locally (so every row is checked and coerced the same way), and each fill is one
request to the service.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fillpdf_provider.client import InvalidRequest
from fillpdf_provider.engine.errors import FillPdfError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators.storage import read_bytes


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
        conversion_id: str | None = None,
        pdf: bytes | None = None,
        date_formats: Mapping[str, str | None] | None = None,
    ) -> None:
        self.hook = hook
        self.fields = fields
        self.page_count = page_count
        self.conversion_id = conversion_id
        self.pdf = pdf
        self._date_formats = dict(date_formats or {})

    def date_format(self, field_name: str) -> str | None:
        return self._date_formats.get(field_name)

    def fill(self, values: Mapping[str, object], *, flatten: bool = False) -> bytes:
        target: str | bytes = self.conversion_id if self.conversion_id else self.pdf or b""
        fields = None if self.conversion_id else self.fields
        try:
            return self.hook.fill(target, values, fields=fields, flatten=flatten)
        except InvalidRequest as exc:  # a bad row, not a broken batch
            raise FillPdfError(exc.message, param=exc.param) from None


def open_form(hook: FillPdfHook, template: str) -> Template | ApiForm:
    """The fillable form named by ``template`` (a conversion id, a path or a URI)."""
    if is_conversion_id(template):
        result = hook.get_conversion(template)
        if hook.mode == "embedded":
            return Template(result.pdf)
        local = Template(result.pdf)
        return ApiForm(hook, local.fields, local.page_count, conversion_id=template,
                       date_formats=_date_formats(local))  # fmt: skip
    pdf = read_bytes(template)
    local = Template(pdf)
    if hook.mode == "embedded":
        return local
    return ApiForm(hook, local.fields, local.page_count, pdf=pdf,
                   date_formats=_date_formats(local))  # fmt: skip


def _date_formats(template: Template) -> dict[str, Any]:
    return {f.name: template.date_format(f.name) for f in template.fields if f.type == "date"}
