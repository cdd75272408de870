"""``QualityCheckOperator``: a quality suite as a task that fails, readably, on bad data.

Put the input check before the fill, so a table that cannot fill the form stops the run
before any quota is spent or any PDF written; put the manifest check after it. GX loads
only when the task runs, so a DAG file that uses the operator still parses fast.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from airflow.sdk import BaseOperator, Context

from fillpdf_provider.engine.fillable import date_formats
from fillpdf_provider.engine.schema import Field
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators.forms import flag_of, mapping_of
from fillpdf_provider.quality.report import QualityReport, enforce, save_report
from fillpdf_provider.storage import read_bytes, readable

KINDS = ("input", "manifest", "schema")
RESULTS_DIR = "_quality"
_NEEDS = {"input": ("template", "rows"), "manifest": ("output_dir",), "schema": ("template",)}
# What each argument a check needs is, for the error that says one is missing.
_MEANS = {
    "template": "the form: a PDF path or URI, or a conversion id",
    "rows": "the CSV or Parquet rows to check: a path or URI",
    "output_dir": "the fill's output folder, which holds manifest.parquet",
}
SCHEMA_SHAPE = 'expected a list of entries or {"schema": [...]}, as the convert operator writes.'
NO_ROWS = "No such rows file: {}. Give the path or URI of a CSV, TSV or Parquet file."
NO_MANIFEST = (
    "No manifest at {}: a manifest check runs after the fill; point output_dir at the "
    "fill's output folder."
)


def results_location(output_dir: str, kind: str) -> str:
    """Where a check's JSON goes beside the outputs: ``{output_dir}/_quality/{kind}.json``."""
    return f"{str(output_dir).rstrip('/')}/{RESULTS_DIR}/{kind}.json"


class QualityCheckOperator(BaseOperator):
    """Run one quality suite and fail the task, with a summary of what broke, if it fails.

    :param kind: ``input`` (rows against the form), ``manifest`` (a fill's manifest) or
        ``schema`` (a conversion schema against its PDF).
    :param template: conversion id, or path or URI of the PDF: the form whose fields the
        rows must fill (input), whose values a manifest's rows are compared by (manifest,
        optional) or whose pages a schema must fit (schema). Templated.
    :param rows: path or URI of the CSV or Parquet rows (input; manifest: how many rows and
        which of them fill the same values). Templated.
    :param output_dir: the fill's output folder or URI: the manifest is read from its
        ``manifest.parquet`` and the results are written to ``_quality/{kind}.json`` in it.
        Templated.
    :param schema: path or URI of a schema JSON (a list of entries, or ``{"schema": [...]}``
        as the convert operator writes); default: the template's own fields. Templated.
    :param mapping: column -> field, as for the batch (a dict or its JSON). Templated.
    :param require_columns: fields a column must fill (input), beyond those the form
        requires and those the mapping names; see ``input_rows_check``.
    :param strict_columns: (input) a column that fills no field fails the check.
    :param max_failed_rows: (input) the fill's tolerance, a count or a fraction of the rows
        below 1: the check passes while no more rows than it allows have values the form
        can't take, and its summary names it. Default: none, every failure fails. Templated.
    :param name_template: (input) the fill's output names, e.g. ``"{row}-{last_name}.pdf"``:
        the columns it names count as used, so ``strict_columns`` does not refuse them.
        Templated.
    :param check_values: (input) ``False`` reads the form and the rows but checks no value
        (no suite runs): a run that skips the check still fails here on a missing form.
        Templated (``"{{ params.check_input }}"``).
    :param expected_rows: rows the manifest must have; default: as many as ``rows``.
    :param results: where to write the JSON results instead. Templated.
    :param storage_conn_id: connection for object-storage URIs that name none.

    XCom: the report without GX's raw result (kind, success, rows, failures, seconds).

    Lineage: with the OpenLineage provider, the dataset checked (the rows, the manifest or
    the schema) is reported as an input carrying each expectation as a data-quality
    assertion, passed or failed, with its column; a failed check's event carries them too.
    """

    template_fields: Sequence[str] = (
        "template", "rows", "output_dir", "schema", "mapping", "strict_columns", "results",
        "storage_conn_id", "max_failed_rows", "name_template", "check_values",
    )  # fmt: skip
    ui_color = "#e8f4ea"

    def __init__(
        self,
        *,
        kind: str,
        template: str | None = None,
        rows: str | None = None,
        output_dir: str | None = None,
        schema: str | None = None,
        mapping: Mapping[str, str | None] | str | None = None,
        require_columns: Iterable[str] | None = None,
        strict_columns: bool | str = False,
        max_failed_rows: int | float | str | None = None,
        name_template: str | None = None,
        check_values: bool | str = True,
        expected_rows: int | None = None,
        results: str | None = None,
        fillpdf_conn_id: str = FillPdfHook.default_conn_name,
        storage_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, not {kind!r}.")
        given = {"template": template, "rows": rows, "output_dir": output_dir}
        missing = [name for name in _NEEDS[kind] if given[name] is None]
        if missing:
            article = "An" if kind[0] in "aeiou" else "A"
            needs = " and ".join(f"{name}= ({_MEANS[name]})" for name in missing)
            raise ValueError(f"{article} {kind} check needs {needs}.")
        super().__init__(**kwargs)
        self.kind = kind
        self.template = template
        self.rows = rows
        self.output_dir = output_dir
        self.schema = schema
        self.mapping = mapping
        self.require_columns = list(require_columns) if require_columns is not None else None
        self.strict_columns = strict_columns
        self.max_failed_rows = max_failed_rows
        self.name_template = name_template
        self.check_values = check_values
        self.expected_rows = expected_rows
        self.results = results
        self.fillpdf_conn_id = fillpdf_conn_id
        self.storage_conn_id = storage_conn_id
        self._report: QualityReport | None = None
        self._template = ""

    def execute(self, context: Context) -> dict[str, Any]:
        if self.kind == "input" and not flag_of("check_values", self.check_values):
            self._form()  # a form that can't be read fails here, not in every fill
            with contextlib.ExitStack() as files:
                self._open(files, str(self.rows), NO_ROWS)
            self.log.info("Input check off (check_values=False): the form and rows were read.")
            return {"kind": "input", "checked": False}
        report = self.check()
        self._report = report
        # the location the user gave, not the temporary copy a remote file was read from
        report.source = str(
            self.rows if self.kind == "input"
            else self._manifest() if self.kind == "manifest"
            else self.schema or self.template
        )  # fmt: skip
        target = self.results or (
            results_location(self.output_dir, self.kind) if self.output_dir else None
        )
        if target:
            self._save(report, target)
        if report.success:  # failures too, where max_failed_rows tolerates their rows
            (self.log.warning if report.failures else self.log.info)("%s", report.summary())
        enforce(report)  # a failure's summary is the exception's message: logged once
        return report.brief()

    def check(self) -> QualityReport:
        """Run the suite; the ``QualityReport``."""
        from fillpdf_provider.quality import checks

        with contextlib.ExitStack() as files:
            if self.kind == "input":
                rows = self._open(files, str(self.rows), NO_ROWS)
                form_fields, dates = self._form()
                return checks.input_rows_check(
                    rows, form_fields, mapping_of(self.mapping),
                    require_columns=self.require_columns,
                    strict_columns=flag_of("strict_columns", self.strict_columns),
                    used=self._named_columns(),
                    date_formats=dates,
                    max_failed_rows=self.max_failed_rows,
                )  # fmt: skip
            if self.kind == "manifest":
                manifest = self._manifest()
                fields = self._fields() if self.template else None
                path = self._open(files, manifest, NO_MANIFEST)
                if self.rows is None:
                    return checks.manifest_check(path, self.expected_rows)
                rows = self._open(files, self.rows, NO_ROWS)
                return checks.manifest_check(
                    path, self.expected_rows, input_rows=rows,
                    template_fields=fields, mapping=mapping_of(self.mapping),
                )  # fmt: skip
        return self._schema_check()

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """For the OpenLineage provider: the dataset checked, each expectation an assertion."""
        return self._lineage()

    def get_openlineage_facets_on_failure(self, task_instance: Any) -> Any:
        """As on completion: the failed expectations are the news."""
        return self._lineage()

    def _lineage(self) -> Any:
        from fillpdf_provider import lineage

        report = self._report
        outcomes = report.results.get("results", []) if report is not None else None
        assertions = lineage.assertions_facet(outcomes) if outcomes else None
        checked = lineage.input_dataset(self._checked(), assertions=assertions)
        inputs = [checked]
        if self.kind == "input" and self._template:
            inputs.append(lineage.input_dataset(self._template))
        return lineage.lineage(inputs)

    def _checked(self) -> str:
        """The location of what this check reads: the rows, the manifest or the schema."""
        if self.kind == "input":
            return str(self.rows)
        if self.kind == "manifest":
            return self._manifest()
        return str(self.schema or self._template or self.template)

    def _named_columns(self) -> list[str]:
        """The columns ``name_template`` names (none without one)."""
        if not self.name_template:
            return []
        from fillpdf_provider.engine.batch import OutputNames

        return list(OutputNames(str(self.name_template)).columns)

    def _open(self, files: contextlib.ExitStack, location: str, missing: str) -> Path:
        """A local copy of ``location`` for as long as ``files`` is open; a missing file's
        error says what the file should be."""
        try:
            return files.enter_context(readable(location, self.storage_conn_id))
        except FileNotFoundError as err:
            raise FileNotFoundError(missing.format(location)) from err

    def _manifest(self) -> str:
        return f"{str(self.output_dir).rstrip('/')}/manifest.parquet"

    def _hook(self) -> FillPdfHook:
        return FillPdfHook(self.fillpdf_conn_id)

    def _fields(self) -> list[Field]:
        """The form's fields; in api mode too, read locally: nothing is filled or billed."""
        return self._form()[0]

    def _form(self) -> tuple[list[Field], dict[str, str | None]]:
        """The form's fields and each date field's format (dates are checked in it)."""
        from fillpdf_provider.operators.forms import open_form, template_location

        with self._hook() as hook:
            self._template = template_location(hook, str(self.template))
            form = open_form(hook, str(self.template), conn_id=self.storage_conn_id)
            fields = list(form.fields)
            return fields, date_formats(form)

    def _schema_check(self) -> QualityReport:
        from fillpdf_provider.engine.filler import Template
        from fillpdf_provider.operators.forms import is_conversion_id
        from fillpdf_provider.quality.checks import schema_check
        from fillpdf_provider.quality.frames import page_boxes

        template = str(self.template)
        entries: list[Any] | None = None
        if is_conversion_id(template):
            with self._hook() as hook:
                self._template = hook.conversion_location(template)
                conversion = hook.get_conversion(template)
            pdf, entries = conversion.pdf, list(conversion.schema)
        else:
            pdf = read_bytes(template, self.storage_conn_id)
        if self.schema:
            entries = self._schema_entries(self.schema)
        if entries is None:
            entries = list(Template(pdf).fields)
        return schema_check(entries, page_boxes(pdf), source=self.schema or template)

    def _schema_entries(self, location: str) -> list[Any]:
        """The entries of a schema JSON, or an error naming the file and the shape it needs."""
        try:
            data = json.loads(read_bytes(location, self.storage_conn_id))
        except ValueError as err:
            raise ValueError(f"Schema {location} is not JSON ({err}): {SCHEMA_SHAPE}") from err
        entries = data.get("schema") if isinstance(data, dict) else data
        if not isinstance(entries, list):
            raise ValueError(f"Schema {location} has no schema list: {SCHEMA_SHAPE}")
        return entries

    def _save(self, report: QualityReport, target: str) -> None:
        save_report(report, target, self.storage_conn_id)
