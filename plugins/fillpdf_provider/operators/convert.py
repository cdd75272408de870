"""``ConvertOperator``: flat PDFs in, fillable PDFs and their schemas out, within the quota."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from fillpdf_provider.client import QuotaExceeded, RateLimited, schema_text
from fillpdf_provider.engine.convert import ConversionResult
from fillpdf_provider.engine.errors import SchemaError
from fillpdf_provider.engine.rebuild import schema_digest
from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.quota import POLICIES, QuotaDecision, decide, pages_of, report_gauges
from fillpdf_provider.storage import Store, expand, read_bytes
from fillpdf_provider.triggers.quota import FillPdfQuotaTrigger

BILLING_XCOM_KEY = "fillpdf_billing"


class ConvertOperator(BaseOperator):
    """Convert one or many flat PDFs into fillable ones, with a schema JSON beside each.

    Before anything is uploaded, the pages the run will bill are counted and compared with
    the account (api mode). What happens when they don't fit is ``on_quota``:

    - ``defer`` (default): wait in the triggerer until the quota has room (the developer
      plan: the next period), then convert;
    - ``skip``: skip the task; ``fail``: fail it with the numbers;
    - ``allow_overage``: on plans with overage (pro, scale), convert and pay it, but never past
      ``max_overage_pages`` / ``max_overage_usd`` (then fail before uploading).

    A 402 or 429 that still happens (another run spent the quota meanwhile) is handled by
    the same policy. Files already converted are not converted again when the task resumes.

    :param pdfs: paths, globs or URIs (``s3://inbox/*.pdf``) of flat PDFs. Templated.
    :param output_dir: folder or URI for ``NAME.fillable.pdf`` and ``NAME.schema.json``.
    :param detect: ``fields`` (every cue) or ``fields_fast``.
    :param schema: build each form exactly from this reviewed, edited schema instead of
        detecting it: the entries (a list), a conversion result (a dict with ``schema``),
        JSON text, or the path or URI of a JSON file (e.g. an edited ``NAME.schema.json``).
        Templated. A file converted with another schema (or none) is converted again.
    :param fillpdf_conn_id: the FillPDF connection (none: the embedded engine, no quota).
    :param storage_conn_id: connection for object-storage URIs that name none (default: the
        scheme's standard one, e.g. ``aws_default``).

    XCom: a list of conversion results (the API's JSON, without PDF bytes) with the paths
    of the files written.
    """

    template_fields: Sequence[str] = (
        "pdfs",
        "output_dir",
        "storage_conn_id",
        "detect",
        "schema",
        "on_quota",
        "max_overage_pages",
        "max_overage_usd",
        "poll_interval",
    )
    ui_color = "#e8f1fb"

    def __init__(
        self,
        *,
        pdfs: str | list[str],
        output_dir: str,
        detect: str = "fields",
        schema: str | list[Any] | dict[str, Any] | None = None,
        on_quota: str = "defer",
        max_overage_pages: int | None = None,
        max_overage_usd: float | None = None,
        poll_interval: float = 300.0,
        fillpdf_conn_id: str = FillPdfHook.default_conn_name,
        storage_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        if on_quota not in POLICIES and "{{" not in on_quota:
            raise ValueError(f"on_quota must be one of {POLICIES}, not {on_quota!r}.")
        super().__init__(**kwargs)
        self.pdfs = pdfs
        self.output_dir = output_dir
        self.detect = detect
        self.schema = schema
        self.on_quota = on_quota
        self.max_overage_pages = max_overage_pages
        self.max_overage_usd = max_overage_usd
        self.poll_interval = poll_interval
        self.fillpdf_conn_id = fillpdf_conn_id
        self.storage_conn_id = storage_conn_id

    def execute(self, context: Context) -> list[dict[str, Any]]:
        hook = FillPdfHook(self.fillpdf_conn_id)
        sources = expand(self.pdfs, self.storage_conn_id)
        schema = self._schema_text()
        try:
            digest = schema_digest(schema) if schema is not None else None
        except SchemaError as exc:  # the same schema fails every retry: fail now
            raise AirflowFailException(f"The schema can't build a form: {exc}") from None
        store = Store(self.output_dir, self.storage_conn_id)
        done = {s: self._done(store, s, digest) for s in sources}
        todo = {s: read_bytes(s, self.storage_conn_id) for s in sources if done[s] is None}
        if todo and hook.mode == "api":
            self._check_quota(hook, list(todo.values()), context)
        billed = 0
        for source, data in todo.items():
            try:
                result = hook.convert(data, detect=self.detect, schema=schema)
            except (QuotaExceeded, RateLimited) as exc:
                self._act(self._late_refusal(exc, list(todo.values())), context)
                raise  # not reached: _act defers, skips or fails
            billed += result.pages
            done[source] = self._write(store, source, result, digest)
        self._record_billing(context, hook, billed)
        return [done[s] for s in sources]

    def execute_complete(self, context: Context, event: dict[str, Any]) -> list[dict[str, Any]]:
        """Back from waiting for the quota: check again and convert what is left."""
        if event.get("status") != "ready":
            raise AirflowFailException(f"Waiting for the FillPDF quota failed: {event}")
        self.log.info("FillPDF quota has room again (%s pages left)", event.get("remaining"))
        return self.execute(context)

    # -- the quota guard -------------------------------------------------------------------

    def _check_quota(self, hook: FillPdfHook, pdfs: list[bytes], context: Context) -> None:
        counts = pages_of(pdfs)
        account = hook.get_account()
        report_gauges(self.fillpdf_conn_id, account)
        decision = decide(
            account,
            counts,
            self.on_quota,
            max_overage_pages=_number(self.max_overage_pages, int),
            max_overage_usd=_number(self.max_overage_usd, float),
        )
        self.log.info("FillPDF quota: %s -> %s", decision.reason, decision.action)
        self._act(decision, context)

    def _late_refusal(self, exc: Exception, pdfs: list[bytes]) -> QuotaDecision:
        pages = sum(pages_of(pdfs))
        if isinstance(exc, RateLimited):
            return QuotaDecision("defer", f"rate limited by the service: {exc}", pages)
        action = "fail" if self.on_quota == "allow_overage" else self.on_quota
        return QuotaDecision(action, f"the service refused the quota: {exc}", pages)

    def _act(self, decision: QuotaDecision, context: Context) -> None:
        if decision.action == "go":
            return
        message = f"FillPDF quota: {decision.reason}."
        if decision.action == "skip":
            raise AirflowSkipException(message)
        if decision.action == "fail":
            raise AirflowFailException(message)
        self.log.info("%s Deferring until the account has room.", message)
        self.defer(
            trigger=FillPdfQuotaTrigger(
                self.fillpdf_conn_id, decision.pages, float(self.poll_interval)
            ),
            method_name="execute_complete",
        )

    # -- outputs ---------------------------------------------------------------------------

    def _names(self, source: str) -> tuple[str, str]:
        stem = PurePosixPath(str(source)).stem
        return f"{stem}.fillable.pdf", f"{stem}.schema.json"

    def _schema_text(self) -> str | None:
        """The ``schema`` option as JSON text: given inline, as JSON text, or as a file."""
        schema = self.schema
        if schema is None or schema == "":
            return None
        if isinstance(schema, str) and not schema.lstrip().startswith(("[", "{")):
            return read_bytes(schema, self.storage_conn_id).decode("utf-8")
        return schema_text(schema)

    def _done(self, store: Store, source: str, digest: str | None) -> dict[str, Any] | None:
        """The result of an earlier attempt at ``source``, if its files are already in the
        output store (whichever worker wrote them) and were made the same way (detected, or
        built from this very schema): a resumed task never bills a file twice."""
        pdf_name, schema_name = self._names(source)
        try:
            entry = json.loads(store.read_bytes(schema_name))
        except (OSError, ValueError):
            return None
        if entry.get("source") != str(source) or not store.exists(pdf_name):
            return None
        if entry.get("built_from_schema") != digest:
            return None
        return entry

    def _write(
        self, store: Store, source: str, result: ConversionResult, digest: str | None
    ) -> dict[str, Any]:
        """The fillable PDF, then its schema JSON (which marks the file as done)."""
        pdf_name, schema_name = self._names(source)
        store.write(pdf_name, result.pdf)
        base = str(self.output_dir).rstrip("/")
        entry = {
            **result.to_dict(),
            "source": str(source),
            "fillable_pdf": f"{base}/{pdf_name}",
            "schema_json": f"{base}/{schema_name}",
        }
        if digest is not None:
            entry["built_from_schema"] = digest
        store.write(schema_name, json.dumps(entry, indent=2).encode())
        self.log.info(
            "%s: %d fields on %d pages in %d ms -> %s",
            source, entry["fields"], entry["pages"], entry["ms"], entry["fillable_pdf"],
        )  # fmt: skip
        return entry

    def _record_billing(self, context: Context, hook: FillPdfHook, pages: int) -> None:
        """What this run billed, for the quota page's table of recent runs."""
        ti = context.get("ti") if isinstance(context, dict) else None
        if ti is None or hook.mode != "api":
            return
        ti.xcom_push(key=BILLING_XCOM_KEY, value={"conn_id": self.fillpdf_conn_id,
                                                  "pages": pages, "at": time.time()})  # fmt: skip


def _number(value: Any, kind: type) -> Any:
    """A cap as given, or rendered from a template (``None`` and ``""`` mean no cap)."""
    if value is None or value == "" or value == "None":
        return None
    return kind(value)
