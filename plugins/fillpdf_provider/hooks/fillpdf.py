"""``FillPdfHook``: convert and fill through the FillPDF API or the embedded engine, one interface.

The connection decides the mode: with a host it talks to that service (password = API key);
without one, or with ``{"mode": "embedded"}`` in its extra, everything runs in the worker on
the local engine. If the default connection ``fillpdf_default`` does not exist at all, the
hook runs embedded: it works offline with no set-up.

Both modes return the same types (the engine's ``ConversionResult``, ``bytes``, the
``Account``) and raise the same exceptions (``fillpdf_provider.client``'s error classes): the
hook holds a ``Backend`` (``fillpdf_provider.backend``) and never asks which one. It holds
the service's connections until ``close()``; use it as a context manager.
A connection no call can use is refused before any call (``InputError``: an unknown extra,
a timeout that is no number above 0, an API key without a host, a host that is no http(s)
URL), and a named connection that does not exist too (``MissingConnection``); each names
the field, the value and the fix, and fails a task without retries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from difflib import get_close_matches
from functools import cached_property
from typing import Any
from urllib.parse import SplitResult, urlsplit

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowFailException, AirflowNotFoundException

from fillpdf_provider.account import Account
from fillpdf_provider.backend import Backend, Converted
from fillpdf_provider.client import (
    DEFAULT_TIMEOUT,
    AsyncFillPdfClient,
    AuthenticationError,
    Expired,
    FillPdfApiError,
    FillPdfClient,
    Forbidden,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    PdfSource,
    RetryPolicy,
    SchemaSource,
    UnsupportedFile,
)
from fillpdf_provider.embedded import EmbeddedFillPdf, default_store
from fillpdf_provider.engine.convert import ConversionResult
from fillpdf_provider.engine.schema import Field

MODES = ("api", "embedded")
# The extras a fillpdf connection reads (``store_dir``: the older name of conversions_uri).
EXTRA_FIELDS = ("mode", "timeout", "conversions_uri", "store_dir")
API_VERSION_PATH = "/v1"  # the client adds it to every call
# What the service answers that no retry changes: the input, the key or the plan.
NOT_RETRYABLE = (
    InvalidRequest, AuthenticationError, Forbidden, NotFound, Expired, PayloadTooLarge,
    UnsupportedFile,
)  # fmt: skip


class InputError(AirflowFailException, ValueError):
    """A setting or an input no retry can change (a connection field, an operator option, a
    file that is no PDF, a value the form refuses): the message names it, the value and the
    fix, and the task fails at once instead of retrying into the same error."""


class MissingInput(AirflowFailException, FileNotFoundError):
    """An input file that is not there, or a glob that matches nothing; fails at once."""


class MissingConnection(AirflowFailException, AirflowNotFoundException):
    """A ``fillpdf_conn_id`` that names no connection; fails at once."""


def missing_connection(conn_id: str) -> MissingConnection:
    return MissingConnection(
        f"fillpdf_conn_id {conn_id!r} names no connection. Create it (Admin > Connections, "
        f"type FillPDF, or the environment variable AIRFLOW_CONN_{conn_id.upper()}), or leave "
        f"fillpdf_conn_id unset to use {FillPdfHook.default_conn_name!r} (the embedded "
        "engine, in the worker, when that connection does not exist either)."
    )


def _extra(extra: Mapping[str, Any], name: str) -> Any:
    """An extra field, as the declarative form stores it or under its legacy prefix."""
    value = extra.get(name)
    if value in (None, ""):
        value = extra.get(f"extra__fillpdf__{name}")
    return None if value == "" else value


def connection_settings(conn: Any, conn_id: str) -> dict[str, Any]:
    """Mode, base URL, key, timeout and conversions store from a ``fillpdf`` connection;
    a field filled in a way no call can use is refused (``InputError``), naming it."""
    extra = conn.extra_dejson or {}
    _refuse_unknown_extras(extra, conn_id)
    given_mode = _given_mode(extra, conn_id)
    base_url = _base_url(conn, conn_id)
    return {
        "mode": _mode(given_mode, base_url, conn, conn_id),
        "base_url": base_url,
        "api_key": conn.password,
        "timeout": _timeout(_extra(extra, "timeout"), conn_id),
        # where embedded conversions are kept: a folder, or a URI workers share
        "conversions_uri": _extra(extra, "conversions_uri") or _extra(extra, "store_dir"),
    }


def _given_mode(extra: Mapping[str, Any], conn_id: str) -> str:
    """The mode the extra names, '' when it names none; refused unless 'api' or 'embedded'."""
    given = _extra(extra, "mode")
    mode = str(given).strip().lower() if given is not None else ""
    if mode and mode not in MODES:
        raise InputError(
            f"Connection {conn_id!r}: Mode (extra 'mode') is {given!r}; set it to 'api' "
            "(call the service at the Base URL) or 'embedded' (run the engine in the worker), "
            "or leave it empty to follow the Base URL."
        )
    return mode


def _mode(mode: str, base_url: str, conn: Any, conn_id: str) -> str:
    """The mode to run in: as given, else api with a Base URL and embedded without; refused
    where the connection's other fields contradict it."""
    if not mode:
        if not base_url and conn.password:
            raise InputError(
                f"Connection {conn_id!r} has an API key (password) but no Base URL (host), "
                "so it would run the engine in the worker and never use the key: set the host "
                "to the service's URL (e.g. https://fillpdf.example.com), or set the mode to "
                "'embedded' (or clear the key) to run the engine in the worker."
            )
        mode = "api" if base_url else "embedded"
    if mode == "api" and not base_url:
        raise InputError(
            f"Connection {conn_id!r} has mode 'api' but no base URL (host): set the host to "
            "the service's URL, or set the mode to 'embedded' (or leave it empty) to run the "
            "engine in the worker."
        )
    if mode == "api" and not conn.password:
        raise InputError(
            f"Connection {conn_id!r} calls the service at {base_url} but has no API key "
            "(password): create one with `fillpdf keys create` and set it, or clear the host "
            "and the mode to run the engine in the worker."
        )
    return mode


def _refuse_unknown_extras(extra: Mapping[str, Any], conn_id: str) -> None:
    """A typo'd extra would be ignored without a word (a ``timout`` keeps the default)."""
    for key in extra:
        name = key.removeprefix("extra__fillpdf__")
        if name in EXTRA_FIELDS:
            continue
        close = get_close_matches(name, EXTRA_FIELDS, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise InputError(
            f"Connection {conn_id!r}: extra {key!r} is not a setting of a fillpdf connection; "
            f"{hint}It reads {', '.join(repr(k) for k in EXTRA_FIELDS)}. Rename or remove it."
        )


def _base_url(conn: Any, conn_id: str) -> str:
    """The service's root URL from host, schema and port ('' without a host). A URL copied
    with the API's ``/v1`` keeps working: the client adds that to every call."""
    if not conn.host:
        return ""
    host = conn.host.strip()
    if "://" not in host:
        host = f"{conn.schema or 'https'}://{host}"
    parts = urlsplit(host)
    port = _port(parts)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or port == -1:
        raise InputError(
            f"Connection {conn_id!r}: Base URL (host) {conn.host!r} is not a URL the client can "
            "call; give the service's http:// or https:// address, e.g. "
            "https://fillpdf.example.com, or leave the host empty to run the engine in the "
            "worker."
        )
    netloc = parts.netloc
    if conn.port and port is None:
        netloc = f"{netloc}:{conn.port}"
    return f"{parts.scheme.lower()}://{netloc}{_without_api_version(parts.path)}"


def _port(parts: SplitResult) -> int | None:
    """The URL's port, None without one, -1 for one that is no number."""
    try:
        return parts.port  # a port that is no number raises here
    except ValueError:
        return -1


def _without_api_version(path: str) -> str:
    """The service's root path: without a trailing slash or the API's ``/v1``."""
    path = path.rstrip("/")
    if path.lower().endswith(API_VERSION_PATH):
        path = path[: -len(API_VERSION_PATH)]
    return path


def _timeout(value: Any, conn_id: str) -> float:
    """Seconds per request: a finite number above 0 (default ``DEFAULT_TIMEOUT``)."""
    if value is None:
        return DEFAULT_TIMEOUT
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or seconds <= 0:
        raise InputError(
            f"Connection {conn_id!r}: Timeout (seconds) (extra 'timeout') is {value!r}; give a "
            f"number of seconds above 0, or leave it empty for the default "
            f"({DEFAULT_TIMEOUT:g})."
        )
    return seconds


def backend_for(
    settings: dict[str, Any], *, timeout: float | None = None, retry: RetryPolicy | None = None
) -> Backend:
    """The embedded engine or a client of the service, as ``settings`` say; the caller
    closes it."""
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
        ``conversions_uri``, by default in ``$FILLPDF_EMBEDDED_STORE``, else
        ``$AIRFLOW_HOME/fillpdf/conversions``, else ``~/.cache/fillpdf/conversions``
        (``embedded.default_store``); workers on separate hosts need a shared one, such as
        ``s3://bucket/fillpdf-conversions``. Without a
        connection of that id: the embedded engine for ``fillpdf_default``, an error for any
        other id.
    """

    conn_name_attr = "fillpdf_conn_id"
    default_conn_name = "fillpdf_default"
    conn_type = "fillpdf"
    hook_name = "FillPDF"

    def __init__(self, fillpdf_conn_id: str = default_conn_name, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.fillpdf_conn_id = fillpdf_conn_id

    def __enter__(self) -> FillPdfHook:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the service's connections (api mode); a later call opens new ones."""
        backend: Backend | None = self.__dict__.pop("_backend", None)
        if backend is not None:
            backend.close()

    # -- configuration ------------------------------------------------------------------

    @cached_property
    def settings(self) -> dict[str, Any]:
        """Mode, base URL, key, timeout and store folder, from the connection."""
        try:
            conn = self.get_connection(self.fillpdf_conn_id)
        except AirflowNotFoundException:
            if self.fillpdf_conn_id != self.default_conn_name:
                raise missing_connection(self.fillpdf_conn_id) from None
            return {"mode": "embedded", "conversions_uri": None, "defined": False}
        return connection_settings(conn, self.fillpdf_conn_id)

    @classmethod
    async def async_client_for(cls, conn_id: str) -> AsyncFillPdfClient | None:
        """An async client for ``conn_id`` (for triggers), or None in embedded mode."""
        try:
            conn = await cls.aget_connection(conn_id)
        except AirflowNotFoundException:
            if conn_id != cls.default_conn_name:
                raise missing_connection(conn_id) from None
            return None
        settings = connection_settings(conn, conn_id)
        if settings["mode"] != "api":
            return None
        return AsyncFillPdfClient(
            settings["base_url"], settings["api_key"], timeout=settings["timeout"]
        )

    @property
    def mode(self) -> str:
        """``api`` or ``embedded``: how the connection is read, for messages and logs."""
        return str(self.settings["mode"])

    def describe(self) -> str:
        """Where calls go, for a task's log: the first thing to check when a run surprises."""
        settings, conn_id = self.settings, self.fillpdf_conn_id
        if settings["mode"] == "api":
            return f"connection {conn_id!r}: api mode, the service at {settings['base_url']}"
        store = self._store_location()
        if settings.get("defined") is False:
            return (
                f"no connection {conn_id!r}: the embedded engine, in the worker (conversions "
                f"kept in {store})"
            )
        return f"connection {conn_id!r}: embedded mode (conversions kept in {store})"

    def conversion_location(self, conversion_id: str) -> str:
        """Where a conversion lives, as a URI (for lineage): the service's resource in api
        mode, the file in the embedded store otherwise."""
        settings = self.settings
        if settings["mode"] == "api":
            return f"{str(settings['base_url']).rstrip('/')}/v1/conversions/{conversion_id}"
        return f"{self._store_location().rstrip('/')}/{conversion_id}.pdf"

    def _store_location(self) -> str:
        """Where the embedded engine keeps conversions, as the connection says."""
        return str(self.settings.get("conversions_uri") or default_store())

    def get_conn(self) -> Backend:
        """The client of the service, or the embedded engine with its local store; open
        until ``close()``."""
        return self._backend

    @cached_property
    def _backend(self) -> Backend:
        return backend_for(self.settings)

    def get_async_client(self) -> AsyncFillPdfClient:
        """An async client of the service (api mode only), e.g. for a trigger."""
        settings = self.settings
        if settings["mode"] != "api":
            raise InputError(
                f"Connection {self.fillpdf_conn_id!r} is in {settings['mode']} mode; the async "
                "client calls a service, so it needs a connection in api mode (a Base URL "
                "and an API key)."
            )
        return AsyncFillPdfClient(
            settings["base_url"], settings["api_key"], timeout=settings["timeout"]
        )

    # -- the interface ------------------------------------------------------------------

    def convert(
        self, pdf: PdfSource, detect: str = "fields", *, schema: SchemaSource | None = None
    ) -> ConversionResult:
        """Detect the fields of a flat PDF (bytes, a path or a file object), or, with
        ``schema`` (a reviewed, edited one), build exactly that form with no detection."""
        return self._result(self._backend.convert(pdf, detect=detect, schema=schema))

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
        return self._result(self._backend.get_conversion(conversion_id))

    def test_connection(self) -> tuple[bool, str]:
        """Check the connection the way the Airflow UI's Test button does."""
        try:
            backend = self._backend
            account = backend.get_account()
            backend.check()
        except (FillPdfApiError, ValueError) as exc:
            return False, str(exc)
        if not backend.has_quota:
            return True, (
                "Embedded engine ready (no service, no limits); conversions are kept in "
                f"{self._store_location()}."
            )
        remaining = account.pages_remaining
        left = f"{remaining} pages left" if remaining is not None else "no page limit"
        return True, f"Connected to {self.settings['base_url']}: plan {account.plan}, {left}."

    def _result(self, conversion: Converted) -> ConversionResult:
        """A conversion in the engine's type, with its fillable PDF (downloaded in api mode;
        in hand already in the embedded one)."""
        return ConversionResult(
            pdf=self._backend.download(conversion),
            schema=conversion.schema,
            pages=conversion.pages,
            ms=conversion.ms,
            status=conversion.status,
            conversion_id=conversion.conversion_id,
            document_url=conversion.document_url,
        )
