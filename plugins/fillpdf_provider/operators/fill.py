"""``FillOperator``: one form, one set of values, one PDF."""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from airflow.sdk import BaseOperator, Context

from fillpdf_provider.client import InvalidRequest
from fillpdf_provider.engine.errors import FillPdfError
from fillpdf_provider.hooks.fillpdf import FillPdfHook, InputError
from fillpdf_provider.operators.forms import (
    FILL_ON,
    fit_for,
    fit_on,
    open_form,
    template_location,
)
from fillpdf_provider.storage import Store

SHOWN_VALUE = 60  # characters of a refused value quoted in an error


class FillOperator(BaseOperator):
    """Fill a form once.

    :param template: a conversion id, or the path or URI of a fillable PDF. Templated.
    :param values: field name to value (strings; booleans for checkboxes), or that mapping
        as JSON text (what a template renders to unless the DAG sets
        ``render_template_as_native_obj=True``). Templated.
    :param output_path: path or URI of the PDF to write. Templated.
    :param flatten: draw the values into the page and drop the fields.
    :param overflow: text too long for its box even at ``min_font_size``: ``error``
        (default) fails the task naming the field; ``shrink`` draws what fits at that size,
        ``truncate`` what fits at the field's own size, and both name the fields cut in the
        log and the XCom. Applies where the engine fills on the worker (not with
        ``fill_on="service"``).
    :param min_font_size: points text shrinks down to before ``overflow`` applies (default 4).
    :param fill_on: in api mode, ``worker`` (default: the form is filled here by the
        service's own engine) or ``service`` (a request, by conversion id).
    :param fillpdf_conn_id: the FillPDF connection (default ``fillpdf_default``; when that
        does not exist, the embedded engine). A named connection must exist. Templated.
    :param storage_conn_id: connection for object-storage URIs that name none. Templated.

    A value the form refuses (an unknown field, a checkbox given ``"maybe"``) fails the task
    at once, naming the key, the value and the nearest field names.

    XCom: ``{"output", "bytes", "sha256", "cut"}`` (``cut``: the fields whose text was cut).
    """

    template_fields: Sequence[str] = (
        "template",
        "values",
        "output_path",
        "fillpdf_conn_id",
        "storage_conn_id",
    )
    ui_color = "#eaf6ea"

    def __init__(
        self,
        *,
        template: str,
        values: Mapping[str, Any] | str,
        output_path: str,
        flatten: bool = False,
        overflow: str = "error",
        min_font_size: float = 4.0,
        fill_on: str = "worker",
        fillpdf_conn_id: str = FillPdfHook.default_conn_name,
        storage_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        fit_for(overflow, min_font_size)  # a bad policy is a DAG error, not a run's
        if fill_on not in FILL_ON:  # so is a bad fill_on
            raise ValueError(f"fill_on must be one of {FILL_ON}, not {fill_on!r}.")
        super().__init__(**kwargs)
        self.fill_on = fill_on
        self.storage_conn_id = storage_conn_id
        self.template = template
        self.values = values
        self.output_path = output_path
        self.flatten = flatten
        self.overflow = overflow
        self.min_font_size = min_font_size
        self.fillpdf_conn_id = fillpdf_conn_id
        self._filled: tuple[str, list[tuple[str, str]], int] = ("", [], 0)

    def execute(self, context: Context) -> dict[str, Any]:
        import hashlib

        values = self._values()
        with FillPdfHook(self.fillpdf_conn_id) as hook:
            self.log.info("FillPDF: %s", hook.describe())
            # None where the service fills, with its own policy
            fit = fit_on(hook, self.fill_on, fit_for(self.overflow, self.min_font_size))
            form = open_form(hook, self.template, fill_on=self.fill_on,
                             conn_id=self.storage_conn_id)  # fmt: skip
            template = template_location(hook, str(self.template))
            try:
                filled = form.fill_result(values, flatten=self.flatten, fit=fit)
            except (FillPdfError, InvalidRequest) as exc:  # the same values fail every retry
                raise InputError(self._refused(exc, values)) from None
        data, cut = filled.pdf, filled.cut
        target = PurePosixPath(str(self.output_path))
        parent = str(self.output_path)[: -len(target.name)].rstrip("/") or "."
        Store(parent, self.storage_conn_id).write(target.name, data)
        self.log.info("wrote %s (%d bytes)", self.output_path, len(data))
        self._filled = (template, [(f.name, f.type) for f in form.fields], len(data))
        if cut:
            self.log.warning("text cut to fit its box (overflow=%r): %s", self.overflow,
                             ", ".join(cut))  # fmt: skip
        return {"output": str(self.output_path), "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "cut": list(cut)}  # fmt: skip

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """For the OpenLineage provider: the template (its fields as a schema facet) in, the
        PDF out (its bytes)."""
        from fillpdf_provider import lineage

        template, fields, size = self._filled
        inputs = [lineage.input_dataset(template, columns=fields)] if template else []
        outputs = [lineage.output_dataset(str(self.output_path), size=size, files=1)]
        return lineage.lineage(inputs, outputs if template else [])

    def _values(self) -> dict[str, Any]:
        """``values`` as a mapping: given as one, or rendered to JSON (or Python) text."""
        values = self.values
        if isinstance(values, str):
            values = _parse_mapping(values)
        if not isinstance(values, Mapping):
            shown = _short(self.values)
            raise InputError(
                f"values must be a mapping of field name to value, like "
                f'{{"full_name": "Ada"}}, not {shown}. A templated value renders to text: '
                "give JSON text, or set render_template_as_native_obj=True on the DAG."
            )
        return dict(values)

    def _refused(self, exc: FillPdfError | InvalidRequest, values: Mapping[str, Any]) -> str:
        """The engine's (or the service's) reason, with the key and the value it refused."""
        field, where = exc.param, f"(template {self.template!r})"
        if field is not None and field in values:
            return f"values[{field!r}] = {_short(values[field])}: {exc.message} {where}"
        return f"values: {exc.message} {where}"


def _parse_mapping(text: str) -> Any:
    """JSON text, or the Python repr a Jinja template gives a dict; None if it is neither."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return None


def _short(value: Any) -> str:
    shown = repr(value)
    return shown if len(shown) <= SHOWN_VALUE else shown[: SHOWN_VALUE - 3] + "..."
