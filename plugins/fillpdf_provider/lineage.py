"""OpenLineage for the operators: what each task read and wrote, named and described as the
providers Airflow teams already run report theirs.

The operators' ``get_openlineage_facets_on_*`` methods import this module, and only the
OpenLineage provider calls them (``pip install 'airflow-provider-fillpdf[lineage]'``, with a
transport set): with lineage off nothing here is imported and no task pays for it.

Datasets are named by OpenLineage's naming rules: a local file is ``file`` + its absolute
path, an object ``s3://bucket`` (or ``gs://bucket``) + its key; a folder of PDFs is the
folder, or the prefix, without a trailing slash.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

import attr
from airflow.providers.openlineage.extractors import OperatorLineage
from openlineage.client.generated.base import InputDataset, OutputDataset, RunFacet
from openlineage.client.generated.data_quality_assertions_dataset import (
    Assertion,
    DataQualityAssertionsDatasetFacet,
)
from openlineage.client.generated.output_statistics_output_dataset import (
    OutputStatisticsOutputDatasetFacet,
)
from openlineage.client.generated.schema_dataset import (
    SchemaDatasetFacet,
    SchemaDatasetFacetFields,
)

from fillpdf_provider import __version__

PROJECT = "https://github.com/fillpdf/airflow-provider-fillpdf"
#: Who wrote a facet: this package, at this version.
PRODUCER = f"{PROJECT}/tree/{__version__}"
#: The JSON schema of the quota facet, shipped in the package as ``lineage_facets.json``.
QUOTA_SCHEMA_URL = (
    f"{PROJECT}/blob/{__version__}/plugins/fillpdf_provider/lineage_facets.json"
    "#/$defs/FillPdfQuotaRunFacet"
)
QUOTA_FACET = "fillpdf_quota"
_BUCKETS = {"s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs"}


@attr.define
class FillPdfQuotaRunFacet(RunFacet):
    """The FillPDF page quota as a run left it: the pages it billed, the plan, and the pages
    left this month (``None`` where the plan sets no number)."""

    # camelCase, as OpenLineage's own facets name their fields
    pagesBilled: int
    plan: str
    pagesLeft: int | None = None
    pagesIncluded: int | None = None

    @staticmethod
    def _get_schema() -> str:
        return QUOTA_SCHEMA_URL


def dataset_name(location: str) -> tuple[str, str]:
    """``(namespace, name)`` of a path or URI under OpenLineage's naming rules."""
    text = str(location)
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme in ("", "file") or len(scheme) == 1:  # a path (a drive letter is no scheme)
        path = parts.path if scheme == "file" else text
        return "file", _no_trailing_slash(os.path.abspath(path))
    if scheme in _BUCKETS:
        return f"{_BUCKETS[scheme]}://{parts.netloc}", _no_trailing_slash(parts.path.lstrip("/"))
    return f"{scheme}://{parts.netloc}", _no_trailing_slash(parts.path) or "/"


def _no_trailing_slash(name: str) -> str:
    return name.rstrip("/") if name.rstrip("/") else name


def schema_facet(columns: Iterable[tuple[str, str | None]]) -> SchemaDatasetFacet:
    """A schema facet from ``(name, type)`` pairs."""
    fields = [SchemaDatasetFacetFields(name=name, type=kind) for name, kind in columns]
    return SchemaDatasetFacet(fields=fields, producer=PRODUCER)


def statistics_facet(
    rows: int | None, size: int | None = None, files: int | None = None
) -> OutputStatisticsOutputDatasetFacet:
    """Rows written, bytes and files, as OpenLineage's output statistics."""
    return OutputStatisticsOutputDatasetFacet(
        rowCount=rows, size=size, fileCount=files, producer=PRODUCER
    )


def input_dataset(
    location: str,
    *,
    columns: Iterable[tuple[str, str | None]] | None = None,
    assertions: DataQualityAssertionsDatasetFacet | None = None,
) -> InputDataset:
    """A dataset read, with its columns and the checks made on it where known."""
    namespace, name = dataset_name(location)
    facets: dict[str, Any] = {}
    if columns is not None:
        facets["schema"] = schema_facet(columns)
    input_facets: dict[str, Any] = {}
    if assertions is not None:
        input_facets["dataQualityAssertions"] = assertions
    return InputDataset(namespace, name, facets=facets, inputFacets=input_facets)


def output_dataset(
    location: str,
    *,
    columns: Iterable[tuple[str, str | None]] | None = None,
    rows: int | None = None,
    size: int | None = None,
    files: int | None = None,
) -> OutputDataset:
    """A dataset written, with its columns and what was written where known."""
    namespace, name = dataset_name(location)
    facets: dict[str, Any] = {}
    if columns is not None:
        facets["schema"] = schema_facet(columns)
    output_facets: dict[str, Any] = {}
    if rows is not None or size is not None or files is not None:
        output_facets["outputStatistics"] = statistics_facet(rows, size, files)
    return OutputDataset(namespace, name, facets=facets, outputFacets=output_facets)


def assertions_facet(outcomes: Iterable[Mapping[str, Any]]) -> DataQualityAssertionsDatasetFacet:
    """Each expectation of a Great Expectations result (``results`` of its JSON form) as an
    assertion: its type, whether it held, and its column where it has one."""
    assertions = []
    for outcome in outcomes:
        config = outcome.get("expectation_config") or {}
        kwargs = config.get("kwargs") or {}
        column = kwargs.get("column")
        meta = config.get("meta") or {}
        assertions.append(
            Assertion(
                assertion=str(config.get("type") or config.get("expectation_type") or "unknown"),
                success=bool(outcome.get("success")),
                column=str(column) if column is not None else None,
                severity="error",
                description=meta.get("rule") or meta.get("problem"),
            )
        )
    return DataQualityAssertionsDatasetFacet(assertions=assertions, producer=PRODUCER)


def quota_facet(pages_billed: int, account: Any) -> dict[str, FillPdfQuotaRunFacet]:
    """The run facet of a task that billed pages, from the account read before it ran."""
    left = account.pages_remaining
    facet = FillPdfQuotaRunFacet(
        pagesBilled=pages_billed,
        plan=str(account.plan),
        pagesLeft=None if left is None else max(left - pages_billed, 0),
        pagesIncluded=account.pages_included,
        producer=PRODUCER,
    )
    return {QUOTA_FACET: facet}


def lineage(
    inputs: Iterable[InputDataset] = (),
    outputs: Iterable[OutputDataset] = (),
    run_facets: Mapping[str, RunFacet] | None = None,
) -> OperatorLineage:
    """What a task read and wrote, as the OpenLineage provider takes it."""
    return OperatorLineage(
        inputs=list(inputs), outputs=list(outputs), run_facets=dict(run_facets or {})
    )
