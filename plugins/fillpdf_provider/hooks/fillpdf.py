"""``FillPdfHook``: convert and fill through the FillPDF API or the embedded engine, one interface.

The connection decides the mode: with a host it talks to that service (password = API key);
without one, or with ``{"mode": "embedded"}`` in its extra, everything runs in the worker on
the local engine. If the default connection ``fillpdf_default`` does not exist at all, the
hook runs embedded: it works offline with no set-up.

Both modes return the same types (the engine's ``ConversionResult``, ``bytes``, the client's
``Account``) and raise the same exceptions (``fillpdf_provider.client``'s error classes).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from fillpdf_provider.client import (
    DEFAULT_TIMEOUT,
    Account,
    AsyncFillPdfClient,
    Conversion,
    FillPdfApiError,
    FillPdfClient,
    PdfSource,
    RetryPolicy,
    SchemaSource,
)
from fillpdf_provider.embedded import EmbeddedFillPdf
from fillpdf_provider.engine.convert import ConversionResult
from fillpdf_provider.engine.schema import Field

MODES = ("api", "embedded")


def _extra(extra: Mapping[str, Any], name: str) -> Any:
    """An extra field, as the declarative form stores it or under its legacy prefix."""
    value = extra.get(name)
    if value in (None, ""):
        value = extra.get(f"extra__fillpdf__{name}")
    return None if value == "" else value


def connection_settings(conn: Any, conn_id: str) -> dict[str, Any]:
    """Mode, base URL, key, timeout and conversions store from a ``fillpdf`` connection."""
    extra = conn.extra_dejson or {}
    mode = _extra(extra, "mode") or ("api" if conn.host else "embedded")
    if mode not in MODES:
        raise ValueError(f"Connection {conn_id!r}: mode must be 'api' or 'embedded', not {mode!r}.")
    base_url = ""
    if conn.host:
        host = conn.host if "://" in conn.host else f"{conn.schema or 'https'}://{conn.host}"
        base_url = f"{host.rstrip('/')}:{conn.port}" if conn.port else host.rstrip("/")
    if mode == "api" and not base_url:
        raise ValueError(
            f"Connection {conn_id!r} has mode 'api' but no base URL (host): set the host to "
            "the service's URL, or set the mode to 'embedded' (or leave it empty) to run the "
            "engine in the worker."
        )
    if mode == "api" and not conn.password:
        raise ValueError(
            f"Connection {conn_id!r} calls the service at {base_url} but has no API key "
            "(password): create one with `fillpdf keys create` and set it, or clear the host "
            "and the mode to run the engine in the worker."
        )
    timeout = _extra(extra, "timeout")
    return {
        "mode": mode,
        "base_url": base_url,
        "api_key": conn.password,
        "timeout": float(timeout) if timeout is not None else DEFAULT_TIMEOUT,
        # where embedded conversions are kept: a folder, or a URI workers share
        "conversions_uri": _extra(extra, "conversions_uri") or _extra(extra, "store_dir"),
    }


def backend_for(
    settings: dict[str, Any], *, timeout: float | None = None, retry: RetryPolicy | None = None
) -> FillPdfClient | EmbeddedFillPdf:
    """The embedded engine or a client of the service, as ``settings`` say."""
    if settings["mode"] == "embedded":
        return EmbeddedFillPdf(settings.get("conversions_uri"))
    return FillPdfClient(
        settings["base_url"],
        settings["api_key"],
        timeout=timeout if timeout is not None else settings["timeout"],
        retry=retry,
    )


class FillPdfHook(BaseHook):
    """Convert flat PDFs and fill forms, on a FillPDF service or in the worker.

    :param fillpdf_conn_id: connection of type ``fillpdf``: host = base URL of the API,
        password = API key, extra ``{"mode": "api" | "embedded", "timeout": seconds,
        "conversions_uri": folder or URI}``. Embedded conversions are kept in
        ``conversions_uri`` (default: a folder under ``$AIRFLOW_HOME``); workers on separate
        hosts need a shared one, such as ``s3://bucket/fillpdf-conversions``.
    """

    conn_name_attr = "fillpdf_conn_id"
    default_conn_name = "fillpdf_default"
    conn_type = "fillpdf"
    hook_name = "FillPDF"

    def __init__(self, fillpdf_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fillpdf_conn_id = fillpdf_conn_id

    # -- configuration ------------------------------------------------------------------

    @cached_property
    def settings(self) -> dict[str, Any]:
        """Mode, base URL, key, timeout and store folder, from the connection."""
        try:
            conn = self.get_connection(self.fillpdf_conn_id)
        except AirflowNotFoundException:
            if self.fillpdf_conn_id != self.default_conn_name:
                raise
            return {"mode": "embedded", "conversions_uri": None}
        return connection_settings(conn, self.fillpdf_conn_id)

    @classmethod
    async def async_client_for(cls, conn_id: str) -> AsyncFillPdfClient | None:
        """An async client for ``conn_id`` (for triggers), or None in embedded mode."""
        try:
            conn = await cls.aget_connection(conn_id)
        except AirflowNotFoundException:
            if conn_id != cls.default_conn_name:
                raise
            return None
        settings = connection_settings(conn, conn_id)
        if settings["mode"] != "api":
            return None
        return AsyncFillPdfClient(
            settings["base_url"], settings["api_key"], timeout=settings["timeout"]
        )

    @property
    def mode(self) -> str:
        return self.settings["mode"]

    def get_conn(self) -> FillPdfClient | EmbeddedFillPdf:
        """The client of the service, or the embedded engine with its local store."""
        return self._backend

    @cached_property
    def _backend(self) -> FillPdfClient | EmbeddedFillPdf:
        return backend_for(self.settings)

    def get_async_client(self) -> AsyncFillPdfClient:
        """An async client of the service (api mode only), e.g. for a trigger."""
        settings = self.settings
        if settings["mode"] != "api":
            raise ValueError("The async client needs a connection in api mode.")
        return AsyncFillPdfClient(
            settings["base_url"], settings["api_key"], timeout=settings["timeout"]
        )

    # -- the interface ------------------------------------------------------------------

    def convert(
        self, pdf: PdfSource, detect: str = "fields", *, schema: SchemaSource | None = None
    ) -> ConversionResult:
        """Detect the fields of a flat PDF (bytes, a path or a file object), or, with
        ``schema`` (a reviewed, edited one), build exactly that form with no detection."""
        backend = self._backend
        if isinstance(backend, EmbeddedFillPdf):
            return backend.convert(pdf, detect=detect, schema=schema)
        return self._result(backend.convert(pdf, detect=detect, schema=schema), backend)

    def fill(
        self,
        conversion_id_or_pdf: str | bytes,
        values: Mapping[str, Any],
        *,
        fields: Sequence[Field | Mapping[str, Any]] | None = None,
        flatten: bool = False,
    ) -> bytes:
        """Fill a conversion (by id) or a fillable PDF (bytes, with its ``fields``)."""
        return self._backend.fill(conversion_id_or_pdf, values, fields=fields, flatten=flatten)

    def get_account(self) -> Account:
        return self._backend.get_account()

    def get_conversion(self, conversion_id: str) -> ConversionResult:
        backend = self._backend
        if isinstance(backend, EmbeddedFillPdf):
            return backend.get_conversion(conversion_id)
        return self._result(backend.get_conversion(conversion_id), backend)

    def test_connection(self) -> tuple[bool, str]:
        """Check the connection the way the Airflow UI's Test button does."""
        try:
            account = self.get_account()
        except (FillPdfApiError, ValueError) as exc:
            return False, str(exc)
        if self.mode == "embedded":
            return True, "Embedded engine ready (no service, no limits)."
        remaining = account.pages_remaining
        left = f"{remaining} pages left" if remaining is not None else "no page limit"
        return True, f"Connected to {self.settings['base_url']}: plan {account.plan}, {left}."

    @staticmethod
    def _result(conversion: Conversion, client: FillPdfClient) -> ConversionResult:
        """The API's answer in the engine's type, with the fillable PDF downloaded."""
        return ConversionResult(
            pdf=client.download(conversion),
            schema=conversion.schema,
            pages=conversion.pages,
            ms=conversion.ms,
            status=conversion.status,
            conversion_id=conversion.conversion_id,
            document_url=conversion.document_url,
        )
