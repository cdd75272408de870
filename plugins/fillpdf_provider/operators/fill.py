"""``FillOperator``: one form, one set of values, one PDF."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from airflow.sdk import BaseOperator, Context

from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators.forms import fit_for, fit_on, open_form
from fillpdf_provider.storage import Store


class FillOperator(BaseOperator):
    """Fill a form once.

    :param template: a conversion id, or the path or URI of a fillable PDF. Templated.
    :param values: field name to value (strings; booleans for checkboxes). Templated.
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
    :param storage_conn_id: connection for object-storage URIs that name none.

    XCom: ``{"output", "bytes", "sha256", "cut"}`` (``cut``: the fields whose text was cut).
    """

    template_fields: Sequence[str] = ("template", "values", "output_path", "storage_conn_id")
    ui_color = "#eaf6ea"

    def __init__(
        self,
        *,
        template: str,
        values: Mapping[str, Any],
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

    def execute(self, context: Context) -> dict[str, Any]:
        import hashlib

        hook = FillPdfHook(self.fillpdf_conn_id)
        fit = fit_on(hook, self.fill_on, fit_for(self.overflow, self.min_font_size))
        form = open_form(hook, self.template, fill_on=self.fill_on,
                         conn_id=self.storage_conn_id)  # fmt: skip
        cut: tuple[str, ...] = ()
        if fit is None:  # the service fills, with its own policy
            data = form.fill(dict(self.values), flatten=self.flatten)
        else:
            filled = form.fill_result(dict(self.values), flatten=self.flatten, fit=fit)
            data, cut = filled.pdf, filled.cut
        target = PurePosixPath(str(self.output_path))
        parent = str(self.output_path)[: -len(target.name)].rstrip("/") or "."
        Store(parent, self.storage_conn_id).write(target.name, data)
        self.log.info("wrote %s (%d bytes)", self.output_path, len(data))
        if cut:
            self.log.warning("text cut to fit its box (overflow=%r): %s", self.overflow,
                             ", ".join(cut))  # fmt: skip
        return {"output": str(self.output_path), "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(), "cut": list(cut)}  # fmt: skip
