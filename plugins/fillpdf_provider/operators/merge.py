"""``MergeManifestsOperator``: the chunks of a mapped batch joined into one manifest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from airflow.sdk import Asset, BaseOperator, Context

from fillpdf_provider.engine.batch import MANIFEST_SCHEMA
from fillpdf_provider.operators.batch import (
    CHUNK_MANIFESTS,
    chunk_manifest_name,
    merge_manifests,
)


class MergeManifestsOperator(BaseOperator):
    """Join the chunk manifests of a mapped ``BatchFillOperator`` into ``manifest.parquet``
    (``merge_manifests``), and give the run's verdict on failed rows.

    :param output_dir: the folder or URI the chunks filled into. Templated.
    :param chunks: the plan the chunks were mapped over (``plan_chunks``' ranges, or the
        task that made them): a chunk whose manifest is missing fails the merge, named.
        Without it, every chunk manifest in ``output_dir`` is merged.
    :param max_failed_rows: failed rows the run tolerates, a count or a fraction of the rows
        below 1 (default: no verdict); more fail the task after the manifest is written.
        Templated.
    :param asset: an Asset to emit an event for, with the merge's summary in its extra.
    :param storage_conn_id: connection for object-storage URIs that name none. Templated.

    XCom: the summary (rows, ok, failed, manifest, chunks, the first errors).

    Lineage: with the OpenLineage provider, the chunk manifests in, and the merged manifest
    out with its columns and rows.
    """

    template_fields: Sequence[str] = ("output_dir", "chunks", "max_failed_rows", "storage_conn_id")
    ui_color = "#fdf3e2"

    def __init__(
        self,
        *,
        output_dir: str,
        chunks: Sequence[Mapping[str, int]] | None = None,
        max_failed_rows: int | float | str | None = None,
        asset: Asset | None = None,
        storage_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if asset is not None:
            kwargs["outlets"] = [*kwargs.get("outlets", []), asset]
        super().__init__(**kwargs)
        self.output_dir = output_dir
        self.chunks = chunks
        self.max_failed_rows = max_failed_rows
        self.asset = asset
        self.storage_conn_id = storage_conn_id
        self._merged: dict[str, Any] | None = None

    def execute(self, context: Context) -> dict[str, Any]:
        chunks = list(self.chunks) if self.chunks is not None else None
        limit = self.max_failed_rows if self.max_failed_rows not in (None, "") else None
        summary = merge_manifests(
            str(self.output_dir),
            chunks=chunks,
            max_failed_rows=limit,
            conn_id=self.storage_conn_id or None,
        )
        self._merged = summary
        if self.asset is not None:
            context["outlet_events"][self.asset].extra = {"output": str(self.output_dir), **summary}
        return summary

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """For the OpenLineage provider: the chunk manifests in; the merged manifest out,
        with its columns and rows."""
        from fillpdf_provider import lineage

        base = str(self.output_dir).rstrip("/")
        chunks = list(self.chunks or [])
        inputs = [
            lineage.input_dataset(f"{base}/{CHUNK_MANIFESTS}/{chunk_manifest_name(chunk)}")
            for chunk in chunks
        ]
        merged = self._merged
        outputs = []
        if merged is not None:
            columns = [(f.name, str(f.type)) for f in MANIFEST_SCHEMA]
            outputs.append(
                lineage.output_dataset(merged["manifest"], columns=columns, rows=merged["rows"])
            )
        return lineage.lineage(inputs, outputs)
