"""The form a fill starts from, in either mode: a conversion id, or a fillable PDF anywhere.

It is the engine's ``Template`` wherever the rows are filled on the worker: embedded, and in
api mode by default, where the conversion's fillable PDF is downloaded once and filled by the
same engine the service runs (fills are never metered, so the result is the service's,
byte for byte, without a request per row). With ``fill_on="service"`` it is ``ApiForm``: the
form's fields are known locally (so every row is checked and coerced the same way), and each
fill is one request to the service, by conversion id. Both are a ``Form``
(``fillpdf_provider.backend``), so whoever fills one never asks which it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from fillpdf_provider.backend import Form
from fillpdf_provider.client import Expired, InvalidRequest, NotFound
from fillpdf_provider.engine.appearance import OVERFLOW_POLICIES, Fit
from fillpdf_provider.engine.errors import FillPdfError, NoFormError, PdfError
from fillpdf_provider.engine.fillable import date_formats
from fillpdf_provider.engine.filler import Filled, Template
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.hooks.fillpdf import FillPdfHook, InputError, MissingInput
from fillpdf_provider.storage import read_bytes

FILL_ON = ("worker", "service")


def is_conversion_id(template: str) -> bool:
    return template.startswith("conv_") and "/" not in template and "." not in template


def template_location(hook: FillPdfHook, template: str) -> str:
    """Where ``template`` lives: the path or URI given, or a conversion's location."""
    return hook.conversion_location(template) if is_conversion_id(template) else template


def fills_on_service(hook: FillPdfHook, fill_on: str) -> bool:
    """True when the service fills each row: ``fill_on="service"`` on a connection to one
    (the embedded engine fills on the worker whatever ``fill_on`` says)."""
    return fill_on == "service" and hook.get_conn().remote


def fit_for(overflow: str, min_font_size: float | str) -> Fit:
    """The engine's overflow policy from an operator's ``overflow`` and ``min_font_size``,
    refused with a message that names the parameter."""
    if overflow not in OVERFLOW_POLICIES:
        raise ValueError(f"overflow must be one of {OVERFLOW_POLICIES}, not {overflow!r}.")
    try:
        size = float(min_font_size)
    except (TypeError, ValueError):
        raise ValueError(
            f"min_font_size must be a size in points, not {min_font_size!r}."
        ) from None
    try:
        return Fit(overflow, size)
    except ValueError as exc:
        raise ValueError(f"min_font_size {min_font_size!r} is refused: {exc}.") from None


def fit_on(hook: FillPdfHook, fill_on: str, fit: Fit) -> Fit | None:
    """``fit`` where the engine fills on the worker; None where the service fills, which
    applies its own default (``overflow="error"``, 4 pt): any other policy is refused there
    rather than silently ignored."""
    if not fills_on_service(hook, fill_on):
        return fit
    if fit != Fit():
        raise InputError(
            f"overflow={fit.policy!r}, min_font_size={fit.min_size:g}: the overflow policy "
            "applies to the embedded engine, which fills on the worker; with "
            "fill_on='service' the service fills each row with its own (overflow='error', "
            "4 pt). Fill on the worker (fill_on='worker', the default) to use it, or leave "
            "overflow and min_font_size at their defaults."
        )
    return None


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

    def fill_result(
        self, values: Mapping[str, object], *, flatten: bool = False, fit: Fit | None = None
    ) -> Filled:
        """``fill``; the service applies its own overflow policy and names no cut text, so
        ``fit`` (the engine's policy, on the worker) is refused rather than ignored."""
        if fit is not None:
            raise ValueError("an overflow policy applies to the embedded engine's fills only")
        return Filled(self.fill(values, flatten=flatten))


def open_form(
    hook: FillPdfHook, template: str, *, fill_on: str = "worker", conn_id: str | None = None
) -> Form:
    """The fillable form named by ``template`` (a conversion id, a path or a URI), filled on
    the worker or, with ``fill_on="service"`` in api mode, by the service. A template that
    is missing, no PDF or no form fails at once (``InputError``, ``MissingInput``), named."""
    if fill_on not in FILL_ON:
        raise InputError(f"fill_on must be one of {FILL_ON}, not {fill_on!r}.")
    remote = fills_on_service(hook, fill_on)
    if not is_conversion_id(template):
        if remote:
            raise InputError(
                f"fill_on='service' fills a conversion by its id, and {template!r} is a file; "
                "convert it first (ConvertOperator) and pass the conversion id, or fill on "
                "the worker (fill_on='worker')."
            )
        return _template(read_template(template, conn_id), template)
    try:
        local = _template(hook.get_conversion(template).pdf, template)
    except (NotFound, Expired) as exc:  # gone or never made: converting again is the fix
        raise InputError(f"template {template!r}: {exc}") from None
    if not remote:
        return local
    return ApiForm(hook, local.fields, local.page_count, conversion_id=template,
                   date_formats=date_formats(local))  # fmt: skip


def read_template(template: str, conn_id: str | None = None) -> bytes:
    """The bytes of a template file, or ``MissingInput`` saying what ``template`` takes."""
    try:
        return read_bytes(template, conn_id)
    except (FileNotFoundError, IsADirectoryError):
        raise MissingInput(
            f"template {template!r}: no such file. Give the path or URI of a fillable PDF, or "
            "a conversion id (conv_...) from ConvertOperator."
        ) from None


def _template(pdf: bytes, template: str) -> Template:
    """The engine's form, or ``InputError`` naming the template and what to do instead."""
    try:
        return Template(pdf)
    except NoFormError as exc:
        raise InputError(
            f"template {template!r}: {exc.message} To fill a flat PDF, convert it first "
            "(ConvertOperator, or `fillpdf convert`) and fill its NAME.fillable.pdf or its "
            "conversion id."
        ) from None
    except PdfError as exc:
        raise InputError(f"template {template!r}: {exc.message}") from None


def mapping_of(value: Mapping[str, str | None] | str | None) -> dict[str, str | None] | None:
    """A mapping given as a dict, or as the JSON a template renders (``tojson``)."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise InputError(
                f"mapping {value!r} is not a JSON object of column -> field; give a dict, "
                'or render one with "{{ params.mapping | tojson }}".'
            ) from None
        if value is None:  # a param left empty renders as null
            return None
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str | None) for k, v in value.items()
    ):
        raise InputError(
            f"mapping {value!r} must map column names to field names (or to '' to leave a "
            "column out)."
        )
    return dict(value)


def flag_of(name: str, value: bool | str) -> bool:
    """A yes/no option given as a bool, or as a template renders one (``"True"``)."""
    if isinstance(value, bool):
        return value
    words = {"true": True, "false": False, "1": True, "0": False, "": False}
    if str(value).strip().lower() not in words:
        raise InputError(f"{name} must be true or false, not {value!r}.")
    return words[str(value).strip().lower()]
