"""``ConvertOperator``: flat PDFs in, fillable PDFs and their schemas out, within the quota."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath
from typing import Any

from airflow.sdk import BaseOperator, Context
from airflow.sdk.exceptions import AirflowFailException, AirflowSkipException

from fillpdf_provider.account import Account
from fillpdf_provider.client import QuotaExceeded, RateLimited, schema_text
from fillpdf_provider.engine.convert import ConversionResult
from fillpdf_provider.engine.errors import SchemaError
from fillpdf_provider.engine.rebuild import schema_digest
from fillpdf_provider.hooks.fillpdf import (
    NOT_RETRYABLE,
    FillPdfHook,
    InputError,
    MissingInput,
)
from fillpdf_provider.quota import POLICIES, QuotaDecision, decide, pages_of, report_gauges
from fillpdf_provider.storage import Store, expand, local_path, read_bytes
from fillpdf_provider.triggers.quota import FillPdfQuotaTrigger

BILLING_XCOM_KEY = "fillpdf_billing"
DETECT = ("fields", "fields_fast")


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

    :param pdfs: paths, globs or URIs (``s3://inbox/*.pdf``) of flat PDFs. Templated. A
        glob that matches nothing, or a file that is missing or no PDF, fails the task at
        once, named.
    :param output_dir: folder or URI for ``NAME.fillable.pdf`` and ``NAME.schema.json``.
        Templated.
    :param detect: ``fields`` (the rules and the trained scorer) or ``fields_fast`` (the
        rules alone: about three times faster, and finds fewer fields). Templated.
    :param schema: build each form exactly from this reviewed, edited schema instead of
        detecting it: the entries (a list), a conversion result (a dict with ``schema``),
        JSON text, or the path or URI of a JSON file (e.g. an edited ``NAME.schema.json``).
        Templated. A file converted with another schema (or none) is converted again.
    :param on_quota: ``defer`` (default), ``skip``, ``fail`` or ``allow_overage``, as above.
        Templated.
    :param max_overage_pages: with ``allow_overage``, the most pages billed past the quota
        (none: no cap). Templated.
    :param max_overage_usd: with ``allow_overage``, the most overage cost in USD (none: no
        cap). Templated.
    :param poll_interval: seconds between the account checks while deferred (default 300).
        Templated.
    :param fillpdf_conn_id: the FillPDF connection (default ``fillpdf_default``; when that
        does not exist, the embedded engine, with no quota). A named connection must exist.
        Templated.
    :param storage_conn_id: connection for object-storage URIs that name none (default: the
        scheme's standard one, e.g. ``aws_default``). Templated.

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
        "fillpdf_conn_id",
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
        # A bad option is a DAG error, not a run's; a templated one is checked once rendered.
        for check, value in (
            (_on_quota, on_quota), (_detect, detect), (_overage_pages, max_overage_pages),
            (_overage_usd, max_overage_usd), (_poll_interval, poll_interval),
        ):  # fmt: skip
            if not _templated(value):
                check(value, ValueError)
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
        self._converted: tuple[list[dict[str, Any]], int | None] = ([], None)
        self._account: Account | None = None

    def execute(self, context: Context) -> list[dict[str, Any]]:
        options = self._options()
        with FillPdfHook(self.fillpdf_conn_id) as hook:
            self.log.info("FillPDF: %s", hook.describe())
            sources = self._sources()
            schema, digest = self._schema_and_digest()
            store = Store(self.output_dir, self.storage_conn_id)
            done = {s: entry for s in sources if (entry := self._done(store, s, digest))}
            todo = {s: self._read(s) for s in sources if s not in done}
            metered = hook.get_conn().has_quota
            if todo and metered:
                self._check_quota(hook, list(todo.values()), context, options)
            billed = 0
            for source, data in todo.items():
                result = self._convert(hook, source, data, schema, context, options, todo)
                billed += result.pages
                done[source] = self._write(store, source, result, digest)
            if metered:
                self._record_billing(context, billed)
        self._converted = ([done[s] for s in sources], billed if metered else None)
        return self._converted[0]

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """For the OpenLineage provider: each flat PDF in; each fillable PDF and its schema
        JSON out, with the fields and their types as a schema facet; in api mode, the pages
        billed, the plan and the pages left as the ``fillpdf_quota`` run facet."""
        from fillpdf_provider import lineage

        entries, billed = self._converted
        inputs, outputs = [], []
        for entry in entries:
            fields = [(f["name"], f.get("type")) for f in entry.get("schema") or []]
            inputs.append(lineage.input_dataset(entry["source"]))
            outputs.append(lineage.output_dataset(entry["fillable_pdf"], columns=fields, files=1))
            outputs.append(lineage.output_dataset(entry["schema_json"], columns=fields, files=1))
        run_facets = {}
        if billed is not None and self._account is not None:
            run_facets = lineage.quota_facet(billed, self._account)
        return lineage.lineage(inputs, outputs, run_facets)

    def _schema_and_digest(self) -> tuple[str | None, str | None]:
        """The ``schema`` option as JSON text, and the digest that marks files built from it
        (``None, None`` to detect the fields)."""
        schema = self._schema_text()
        try:
            return schema, schema_digest(schema) if schema is not None else None
        except SchemaError as exc:  # the same schema fails every retry: fail now
            raise AirflowFailException(f"The schema can't build a form: {exc}") from None

    def _convert(
        self,
        hook: FillPdfHook,
        source: str,
        data: bytes,
        schema: str | None,
        context: Context,
        options: dict[str, Any],
        todo: dict[str, bytes],
    ) -> ConversionResult:
        """One file converted; a late quota refusal is acted on by the policy (``todo``: the
        files this run converts, whose pages a deferral waits for)."""
        try:
            return hook.convert(data, detect=options["detect"], schema=schema)
        except (QuotaExceeded, RateLimited) as exc:
            self._act(self._late_refusal(exc, list(todo.values()), options), context, options)
            raise  # not reached: _act defers, skips or fails
        except NOT_RETRYABLE as exc:  # the file, the key or the plan: a retry won't help
            if getattr(exc, "param", None) == "schema":  # it doesn't fit this file's pages
                raise InputError(
                    f"{str(source)!r}: the schema doesn't fit this PDF: {exc} Fix the schema; "
                    "the files before it are written and are not converted again."
                ) from None
            raise InputError(
                f"{str(source)!r}: {exc} Fix or remove it from pdfs; the files before it "
                "are written and are not converted again when the task runs again."
            ) from None

    def _options(self) -> dict[str, Any]:
        """The rendered options, each checked (``InputError`` names a bad one)."""
        return {
            "on_quota": _on_quota(self.on_quota, InputError),
            "detect": _detect(self.detect, InputError),
            "max_overage_pages": _overage_pages(self.max_overage_pages, InputError),
            "max_overage_usd": _overage_usd(self.max_overage_usd, InputError),
            "poll_interval": _poll_interval(self.poll_interval, InputError),
        }

    def _sources(self) -> list[str]:
        """The files ``pdfs`` names; a glob that matches nothing or a folder is named."""
        items = [self.pdfs] if isinstance(self.pdfs, str) else list(self.pdfs)
        for item in items:
            local = local_path(item)
            if local is not None and local.is_dir():
                raise InputError(
                    f"pdfs {str(item)!r} is a folder; give a glob such as "
                    f"{str(item).rstrip('/') + '/*.pdf'!r}, or the paths of its PDFs."
                )
        found: list[str] = []
        for item in items:
            try:
                found.extend(expand(item, self.storage_conn_id))
            except FileNotFoundError:  # only a glob can match nothing
                raise MissingInput(
                    f"No file matches the glob pdfs={str(item)!r}: check the folder and the "
                    "pattern (a glob is case-sensitive: *.pdf does not match FORM.PDF)."
                ) from None
        return sorted(dict.fromkeys(found))

    def _read(self, source: str) -> bytes:
        try:
            return read_bytes(source, self.storage_conn_id)
        except FileNotFoundError:
            raise MissingInput(
                f"pdfs: {str(source)!r} does not exist; fix the path or remove it from pdfs."
            ) from None

    def execute_complete(self, context: Context, event: dict[str, Any]) -> list[dict[str, Any]]:
        """Back from waiting for the quota: check again and convert what is left."""
        if event.get("status") != "ready":
            raise AirflowFailException(f"Waiting for the FillPDF quota failed: {event}")
        self.log.info("FillPDF quota has room again (%s pages left)", event.get("remaining"))
        return self.execute(context)

    # -- the quota guard -------------------------------------------------------------------

    def _check_quota(
        self, hook: FillPdfHook, pdfs: list[bytes], context: Context, options: dict[str, Any]
    ) -> None:
        counts = pages_of(pdfs)
        try:
            account = hook.get_account()
        except NOT_RETRYABLE as exc:  # a key the service refuses: the connection to fix
            raise InputError(f"Connection {self.fillpdf_conn_id!r}: {exc}") from None
        report_gauges(self.fillpdf_conn_id, account)
        self._account = account
        decision = decide(
            account,
            counts,
            options["on_quota"],
            max_overage_pages=options["max_overage_pages"],
            max_overage_usd=options["max_overage_usd"],
        )
        self.log.info("FillPDF quota: %s -> %s", decision.reason, decision.action)
        self._act(decision, context, options)

    def _late_refusal(
        self, exc: Exception, pdfs: list[bytes], options: dict[str, Any]
    ) -> QuotaDecision:
        pages = sum(pages_of(pdfs))
        if isinstance(exc, RateLimited):
            return QuotaDecision("defer", f"rate limited by the service: {exc}", pages)
        policy = options["on_quota"]
        action = "fail" if policy == "allow_overage" else policy
        return QuotaDecision(action, f"the service refused the quota: {exc}", pages)

    def _act(self, decision: QuotaDecision, context: Context, options: dict[str, Any]) -> None:
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
                self.fillpdf_conn_id, decision.pages, options["poll_interval"]
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
            try:
                return read_bytes(schema, self.storage_conn_id).decode("utf-8")
            except FileNotFoundError:
                raise MissingInput(
                    f"schema {schema!r} does not exist; give the path or URI of a schema JSON "
                    "(e.g. an edited NAME.schema.json), the schema itself, or nothing to "
                    "detect the fields."
                ) from None
        return schema_text(schema)

    def _done(self, store: Store, source: str, digest: str | None) -> dict[str, Any] | None:
        """The result of an earlier attempt at ``source``, if its files are already in the
        output store (whichever worker wrote them) and were made the same way (detected, or
        built from this very schema): a resumed task never bills a file twice."""
        pdf_name, schema_name = self._names(source)
        try:
            entry: dict[str, Any] = json.loads(store.read_bytes(schema_name))
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
            "%s: %d fields on %d page%s in %d ms -> %s", source, entry["fields"],
            entry["pages"], "" if entry["pages"] == 1 else "s", entry["ms"], entry["fillable_pdf"],
        )  # fmt: skip
        return entry

    def _record_billing(self, context: Context, pages: int) -> None:
        """What this run billed, for the quota page's table of recent runs."""
        ti = context.get("ti") if isinstance(context, dict) else None
        if ti is None:
            return
        ti.xcom_push(key=BILLING_XCOM_KEY, value={"conn_id": self.fillpdf_conn_id,
                                                  "pages": pages, "at": time.time()})  # fmt: skip


def _templated(value: Any) -> bool:
    return isinstance(value, str) and "{{" in value


def _no_cap(value: Any) -> bool:
    """``None``, ``""`` and a rendered ``None`` mean no cap."""
    return value is None or value == "" or value == "None"


def _on_quota(value: Any, error: Callable[[str], Exception]) -> str:
    if value not in POLICIES:
        raise error(f"on_quota must be one of {POLICIES}, not {value!r}.")
    return str(value)


def _detect(value: Any, error: Callable[[str], Exception]) -> str:
    if value not in DETECT:
        raise error(
            f"detect must be one of {DETECT}, not {value!r}: fields (the rules and the "
            "trained scorer) or fields_fast (the rules alone, about three times faster)."
        )
    return str(value)


def _overage_pages(value: Any, error: Callable[[str], Exception]) -> int | None:
    if _no_cap(value):
        return None
    number = _as_number(value)
    if number is None or number < 0 or number != int(number):
        raise error(
            f"max_overage_pages must be a whole number of pages, 0 or more (or None for no "
            f"cap), not {value!r}."
        )
    return int(number)


def _overage_usd(value: Any, error: Callable[[str], Exception]) -> float | None:
    if _no_cap(value):
        return None
    number = _as_number(value)
    if number is None or number < 0:
        raise error(
            f"max_overage_usd must be an amount in USD, 0 or more (or None for no cap), "
            f"not {value!r}."
        )
    return number


def _poll_interval(value: Any, error: Callable[[str], Exception]) -> float:
    number = _as_number(value)
    if number is None or number <= 0:
        raise error(
            f"poll_interval must be a number of seconds above 0, not {value!r} (the account "
            "is checked that often while the task waits for quota)."
        )
    return number


def _as_number(value: Any) -> float | None:
    """A finite number from a number or its text; None for anything else."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None
