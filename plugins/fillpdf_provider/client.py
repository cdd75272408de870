"""Python client of the FillPDF API, sync (``FillPdfClient``) and async (``AsyncFillPdfClient``).

Errors are typed, one class per error type of the API, each carrying the request id to quote.
Calls are retried where a retry is safe and useful: after a 429 (waiting until the server
says the window resets), a 503 (waiting its Retry-After), a 408 (a body that went too
slowly), a gateway error or a dropped connection. A conversion is billed, so every
``convert`` call sends an ``Idempotency-Key``: its retries can never bill twice.

    with FillPdfClient("https://fillpdf.example.com", api_key) as client:
        conversion = client.convert("flat.pdf")
        pdf = client.fill(conversion.conversion_id, {"full_name": "Ada Lovelace"})
"""

from __future__ import annotations

import asyncio
import datetime as dt
import io
import json
import logging
import os
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar, Protocol, Union

import httpx

from fillpdf_provider import __version__
from fillpdf_provider.account import Account as Account  # the client's own type too
from fillpdf_provider.api_errors import status_of
from fillpdf_provider.engine.schema import Field

PdfSource = Union[bytes, str, "os.PathLike[str]", IO[bytes]]
#: A schema to build a form from: JSON text, a JSON file (a path object), the entries
#: (``Field`` or dicts), or a whole conversion result.
SchemaSource = Union[
    str, "os.PathLike[str]", Mapping[str, Any], Sequence[Field | Mapping[str, Any]]
]
log = logging.getLogger(__name__)
DEFAULT_TIMEOUT = 120.0
RETRYABLE_STATUSES = frozenset({408, 429, 502, 503, 504})


# --------------------------------------------------------------------------- errors


class FillPdfApiError(Exception):
    """An answer other than 2xx from the API, or no answer at all.

    Each subclass names its API error type; its ``http_status`` is that type's status in
    ``fillpdf_provider.api_errors``. ``status`` is the status of the answer received, and
    ``None`` when there was none (no answer, or the embedded engine raised it).
    """

    error_type: ClassVar[str] = "api_error"
    http_status: ClassVar[int] = status_of("api_error")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.http_status = status_of(cls.error_type)  # a type the API lacks fails at import

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        param: str | None = None,
        request_id: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.request_id = request_id
        self.headers = dict(headers or {})

    def __str__(self) -> str:
        where = f" (request {self.request_id})" if self.request_id else ""
        return f"{self.message}{where}"


class InvalidRequest(FillPdfApiError):
    """400: the request itself is wrong (a body, a value, a field name); the message says which."""

    error_type = "invalid_request"


class AuthenticationError(FillPdfApiError):
    """401: the key is missing, malformed, unknown or revoked."""

    error_type = "authentication_error"


class QuotaExceeded(FillPdfApiError):
    """402: the file's pages do not fit in what a hard-stop plan has left this month."""

    error_type = "quota_exceeded"


class Forbidden(FillPdfApiError):
    """403: a document URL whose signature does not verify."""

    error_type = "forbidden"


class NotFound(FillPdfApiError):
    """404: no such conversion for this account, or no such path."""

    error_type = "not_found"


class MethodNotAllowed(FillPdfApiError):
    """A known path called with another method; the ``Allow`` header lists those it takes."""

    error_type = "method_not_allowed"


class Expired(FillPdfApiError):
    """410: a conversion or document URL past its 24 hours; convert again."""

    error_type = "expired"


class PayloadTooLarge(FillPdfApiError):
    """413: a fill request body over the service's size limit."""

    error_type = "payload_too_large"


class UnsupportedFile(FillPdfApiError):
    """415: not a PDF the service takes (size, pages, encryption, damage or limits)."""

    error_type = "unsupported_file"


class RateLimited(FillPdfApiError):
    """Over the plan's requests per minute; ``retry_at`` is when the window resets (UTC)."""

    error_type = "rate_limit_error"

    @property
    def retry_at(self) -> dt.datetime | None:
        wait = _wait_seconds(self.headers, time.time())
        if wait is None:
            return None
        return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=wait)


class ApiServerError(FillPdfApiError):
    """A bug on the server's side (500); quote the request id when reporting it."""

    error_type = "api_error"


class EngineError(FillPdfApiError):
    """The engine failed unexpectedly on a PDF (502 ``engine_error``; logged by the service).

    A damaged PDF, or one that overruns the service's time or memory limits, is
    ``UnsupportedFile`` (415) instead: the file is the problem, and the message says what to do.
    """

    error_type = "engine_error"


class RequestTimeout(FillPdfApiError):
    """The request body reached the service too slowly (408 ``request_timeout``)."""

    error_type = "request_timeout"


class ServiceUnavailable(FillPdfApiError):
    """The service is busy or restarting (503), a gateway error, or no answer at all, after
    the retries; ``retry_after`` is the server's suggested wait in seconds, if it gave one."""

    error_type = "service_unavailable"

    @property
    def retry_after(self) -> float | None:
        return _retry_after(self.headers)


#: The exception class of each error type of ``fillpdf_provider.api_errors``, in its order.
ERRORS: dict[str, type[FillPdfApiError]] = {
    cls.error_type: cls
    for cls in (
        InvalidRequest,
        AuthenticationError,
        QuotaExceeded,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        RequestTimeout,
        Expired,
        PayloadTooLarge,
        UnsupportedFile,
        RateLimited,
        ApiServerError,
        EngineError,
        ServiceUnavailable,
    )
}


def error_for(
    error_type: str,
    message: str,
    *,
    status: int | None = None,
    param: str | None = None,
    request_id: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> FillPdfApiError:
    """The exception for an API error type (the embedded mode raises the same ones)."""
    cls = ERRORS.get(error_type, FillPdfApiError)
    return cls(message, status=status, param=param, request_id=request_id, headers=headers)


def _raise_for(response: httpx.Response) -> None:
    if response.is_success:
        return
    request_id = response.headers.get("x-request-id")
    try:
        error = response.json()["error"]
        error_type, message, param = error["type"], error["message"], error.get("param")
    except (ValueError, KeyError, TypeError):
        error_type = "service_unavailable" if response.status_code >= 500 else "api_error"
        message = f"HTTP {response.status_code} from {response.request.url}: {response.text[:200]}"
        param = None
    raise error_for(
        error_type,
        message,
        status=response.status_code,
        param=param,
        request_id=request_id,
        headers=response.headers,
    )


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Conversion:
    """A conversion result: the fillable PDF's schema and where to fetch the PDF."""

    conversion_id: str
    status: str
    fields: int
    confidence: float
    pages: int
    ms: int
    schema: list[Field]
    document_url: str | None = None
    expires_at: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Conversion:
        return cls(
            conversion_id=data["conversion_id"],
            status=data["status"],
            fields=int(data["fields"]),
            confidence=float(data["confidence"]),
            pages=int(data["pages"]),
            ms=int(data["ms"]),
            schema=[Field.from_dict(entry) for entry in data["schema"]],
            document_url=data.get("document_url"),
            expires_at=data.get("expires_at"),
        )


class ConversionRef(Protocol):
    """What ``download`` needs of a conversion: its id, and its document URL if it has one
    (a ``Conversion``, or the engine's ``ConversionResult`` in the embedded mode)."""

    @property
    def conversion_id(self) -> str | None: ...

    @property
    def document_url(self) -> str | None: ...


def _document_of(conversion: str | ConversionRef) -> tuple[str, str | None]:
    """A conversion's id, and the document URL it carries (``None`` when it has none)."""
    if isinstance(conversion, str):
        return conversion, None
    if conversion.conversion_id is None:
        raise InvalidRequest("The conversion has no id to download it by.", param="conversion_id")
    return conversion.conversion_id, conversion.document_url


@dataclass(frozen=True)
class RateLimit:
    """The key's rate-limit window as the last answer gave it (``X-RateLimit-*``)."""

    limit: int
    remaining: int
    resets_at: float
    """Epoch second when the window ends, on this machine's clock: the server's reset less
    the server's ``Date``, so the two clocks need not agree."""

    @classmethod
    def from_headers(cls, headers: Mapping[str, str], now: float) -> RateLimit | None:
        lowered = {k.lower(): v.strip() for k, v in headers.items()}
        values = [
            lowered.get(f"x-ratelimit-{name}", "") for name in ("limit", "remaining", "reset")
        ]
        if not all(v.isdigit() for v in values):
            return None
        limit, remaining, reset = (int(v) for v in values)
        server_now = _http_date(lowered.get("date", "")) or now
        return cls(limit, remaining, now + min(max(reset - server_now, 0.0), 3600.0))


def _http_date(text: str) -> float | None:
    from email.utils import parsedate_to_datetime

    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


# --------------------------------------------------------------------------- retries


@dataclass
class RetryPolicy:
    """How many times and how long to wait; the waits grow exponentially, with jitter."""

    max_retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_rate_limit_wait_s: float = 65.0
    """A 429 (or a 503 with Retry-After) is waited out only if the window resets (the
    service is back) within this many seconds."""

    def backoff(self, attempt: int) -> float:
        ceiling = min(self.max_backoff_s, self.backoff_s * 2**attempt)
        return random.uniform(ceiling / 2, ceiling)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    lowered = {k.lower(): v for k, v in headers.items()}
    retry_after = lowered.get("retry-after")
    if retry_after and retry_after.strip().isdigit():
        return float(retry_after)
    return None


def _wait_seconds(headers: Mapping[str, str], now: float) -> float | None:
    retry_after = _retry_after(headers)
    if retry_after is not None:
        return retry_after
    lowered = {k.lower(): v for k, v in headers.items()}
    reset = lowered.get("x-ratelimit-reset")
    if reset and reset.strip().isdigit():
        return max(0.0, float(reset) - now)
    return None


def _retry_wait(
    policy: RetryPolicy, attempt: int, response: httpx.Response | None, error: Exception | None
) -> float | None:
    """Seconds to wait before the next attempt, or None if this outcome is final."""
    if attempt >= policy.max_retries:
        return None
    if error is not None:
        return policy.backoff(attempt)
    assert response is not None
    if response.status_code in (429, 503):
        # a 503's X-RateLimit-Reset is the key's window, not when the service is back
        wait = (
            _wait_seconds(response.headers, time.time())
            if response.status_code == 429
            else _retry_after(response.headers)
        )
        if wait is None:
            return policy.backoff(attempt)
        if wait > policy.max_rate_limit_wait_s:
            return None
        return wait + random.uniform(0, 0.25)  # spread the retries of many clients
    if response.status_code in RETRYABLE_STATUSES:
        if _is_engine_error(response):  # the same PDF fails the same way: don't retry
            return None
        return policy.backoff(attempt)
    return None


def _is_engine_error(response: httpx.Response) -> bool:
    try:
        error_type: object = response.json()["error"]["type"]
    except (ValueError, KeyError, TypeError):
        return False
    return error_type == "engine_error"


_TRANSIENT = (httpx.TransportError,)


# --------------------------------------------------------------------------- requests


@dataclass
class _Call:
    method: str
    path: str
    json: Any = None
    files: Any = None
    data: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    rewind: IO[bytes] | None = None
    absolute: bool = False

    def arguments(self) -> dict[str, Any]:
        return {"json": self.json, "files": self.files, "data": self.data, "headers": self.headers}


class _Attempts:
    """One call's attempts: what to do after each answer or failure, shared by both clients."""

    def __init__(self, client: _Base, call: _Call) -> None:
        self.client = client
        self.call = call
        self.attempt = 0
        self.start = call.rewind.tell() if call.rewind is not None else 0

    def rewind(self) -> None:
        if self.call.rewind is not None:
            self.call.rewind.seek(self.start)

    def answered(self, response: httpx.Response) -> float | None:
        """Seconds to wait before retrying, or None when ``response`` is the answer."""
        rate = RateLimit.from_headers(response.headers, time.time())
        if rate is not None:
            self.client.rate_limit = rate
        wait = _retry_wait(self.client.retry, self.attempt, response, None)
        if wait is None:
            _raise_for(response)
            return None
        self.attempt += 1
        reason = {
            429: "rate limited (429), waiting for the window to reset",
            503: "service unavailable (503), waiting as Retry-After says",
        }.get(response.status_code, f"answered {response.status_code}")
        self._log_wait(reason, wait)
        return wait

    def _log_wait(self, reason: str, wait: float) -> None:
        """Every wait is logged: a run that slows down says why and for how long."""
        log.warning(
            "%s %s: %s; retrying in %.1f s (retry %d of %d)",
            self.call.method, self.call.path, reason, wait, self.attempt,
            self.client.retry.max_retries,
        )  # fmt: skip

    def failed(self, error: Exception) -> float:
        """Seconds to wait after no answer at all, or ``ServiceUnavailable`` when out of tries."""
        wait = _retry_wait(self.client.retry, self.attempt, None, error)
        if wait is None:
            raise ServiceUnavailable(
                f"No answer from {self.client.base_url} after {self.attempt + 1} attempts "
                f"({type(error).__name__}: {error}); check the URL and the service."
            ) from error
        self.attempt += 1
        self._log_wait(f"no answer ({type(error).__name__})", wait)
        return wait


def _pdf_part(pdf: PdfSource) -> tuple[str, IO[bytes], bool]:
    """``(filename, stream, opened_here)``; bytes and paths become streams we can rewind."""
    if isinstance(pdf, bytes | bytearray | memoryview):
        return "document.pdf", io.BytesIO(bytes(pdf)), True
    if isinstance(pdf, str | os.PathLike):
        path = Path(pdf)
        try:
            return path.name, path.open("rb"), True
        except FileNotFoundError:
            raise InvalidRequest(f"No such PDF file: {path}", param="file") from None
    if not (hasattr(pdf, "seekable") and pdf.seekable()):
        return "document.pdf", io.BytesIO(pdf.read()), True
    return Path(getattr(pdf, "name", "document.pdf")).name, pdf, False


def schema_text(schema: SchemaSource) -> str:
    """``schema`` as the JSON text ``POST /v1/convert`` takes in its ``schema`` field."""
    if isinstance(schema, str):
        return schema
    if isinstance(schema, os.PathLike):
        try:
            return Path(schema).read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InvalidRequest(f"No such schema file: {schema}", param="schema") from None
    data: object = schema
    if isinstance(schema, Mapping):
        data = dict(schema)
    elif isinstance(schema, Sequence):
        data = [f.to_dict() if isinstance(f, Field) else f for f in schema]
    try:
        return json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequest(f"The schema is not JSON data ({exc}).", param="schema") from None


def _fill_body(
    target: str | bytes,
    values: Mapping[str, Any],
    fields: Sequence[Field | Mapping[str, Any]] | None,
    flatten: bool,
) -> dict[str, Any]:
    import base64

    body: dict[str, Any] = {"values": dict(values), "flatten": flatten}
    if isinstance(target, bytes | bytearray):
        if fields is None:
            raise InvalidRequest(
                "Filling a PDF sent inline needs its fields (the schema), e.g. from inspect.",
                param="fields",
            )
        body["pdf_base64"] = base64.b64encode(bytes(target)).decode()
        body["fields"] = [f.to_dict() if isinstance(f, Field) else dict(f) for f in fields]
    else:
        body["conversion_id"] = target
    return body


class _Base:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required, e.g. 'https://fillpdf.example.com'.")
        if not api_key:
            raise ValueError("api_key is required; create one with `fillpdf keys create`.")
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.rate_limit: RateLimit | None = None
        """The rate-limit window of the last answer that gave one."""
        self._timeout = (
            timeout
            if isinstance(timeout, httpx.Timeout)
            else httpx.Timeout(timeout, connect=min(10.0, float(timeout)))
        )
        self._headers = {
            "Authorization": f"Bearer {api_key}",
            "User-Agent": f"fillpdf-python/{__version__}",
        }

    def _convert_call(
        self,
        pdf: PdfSource,
        detect: str,
        idempotency_key: str | None,
        schema: SchemaSource | None = None,
    ) -> tuple[_Call, IO[bytes], bool]:
        data = {"detect": detect}
        if schema is not None:
            data["schema"] = schema_text(schema)
        name, stream, opened = _pdf_part(pdf)
        call = _Call(
            "POST",
            "/v1/convert",
            files={"file": (name, stream, "application/pdf")},
            data=data,
            headers={"Idempotency-Key": idempotency_key or f"fillpdf-{uuid.uuid4()}"},
            rewind=stream,
        )
        return call, stream, opened


class FillPdfClient(_Base):
    """Blocking client. Use it as a context manager, or call ``close()``."""

    remote = True
    """Calls go to a FillPDF service (the embedded engine's is False)."""
    has_quota = True
    """Conversions are billed against the account's plan (the embedded engine's is False)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retry=retry)
        self._http = httpx.Client(
            base_url=self.base_url,
            headers=self._headers,
            timeout=self._timeout,
            transport=transport,
        )
        # Document URLs may point at a CDN: they carry their own signature, never the key.
        self._anonymous = httpx.Client(timeout=self._timeout, transport=transport)

    def __enter__(self) -> FillPdfClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()
        self._anonymous.close()

    def check(self) -> None:
        """Nothing to prepare before the first call: the service keeps the conversions, and
        any call (``get_account``) checks the URL and the key."""

    def _send(self, call: _Call) -> httpx.Response:
        attempts = _Attempts(self, call)
        while True:
            attempts.rewind()
            http = self._anonymous if call.absolute else self._http
            try:
                response = http.request(call.method, call.path, **call.arguments())
            except _TRANSIENT as exc:
                wait = attempts.failed(exc)
            else:
                answered = attempts.answered(response)
                if answered is None:
                    return response
                wait = answered
            time.sleep(wait)

    def convert(
        self,
        pdf: PdfSource,
        *,
        detect: str = "fields",
        idempotency_key: str | None = None,
        schema: SchemaSource | None = None,
    ) -> Conversion:
        """Convert a flat PDF (bytes, a path or a file object, streamed from disk).

        With ``schema`` (a reviewed, edited schema) the service builds exactly that form
        instead of detecting one; it is billed the same.
        """
        call, stream, opened = self._convert_call(pdf, detect, idempotency_key, schema)
        try:
            return Conversion.from_json(self._send(call).json())
        finally:
            if opened:
                stream.close()

    def fill(
        self,
        target: str | bytes,
        values: Mapping[str, Any],
        *,
        fields: Sequence[Field | Mapping[str, Any]] | None = None,
        flatten: bool = False,
    ) -> bytes:
        """Fill a conversion (its id) or a fillable PDF (bytes, with its ``fields``)."""
        body = _fill_body(target, values, fields, flatten)
        return self._send(_Call("POST", "/v1/fill", json=body)).content

    def get_account(self) -> Account:
        return Account.from_json(self._send(_Call("GET", "/v1/account")).json())

    def get_conversion(self, conversion_id: str) -> Conversion:
        return Conversion.from_json(
            self._send(_Call("GET", f"/v1/conversions/{conversion_id}")).json()
        )

    def download(self, conversion: str | ConversionRef) -> bytes:
        """The fillable PDF of a conversion: through its document URL if it still has one,
        else through a freshly signed one."""
        cid, url = _document_of(conversion)
        url = url or self.get_conversion(cid).document_url
        if not url:
            raise ApiServerError(f"Conversion {cid} came back without a document_url.")
        return self._send(_Call("GET", url, absolute=True)).content


class AsyncFillPdfClient(_Base):
    """The same calls as ``FillPdfClient``, awaitable (for triggers and async code)."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(base_url, api_key, timeout=timeout, retry=retry)
        self._http = httpx.AsyncClient(
            base_url=self.base_url,
            headers=self._headers,
            timeout=self._timeout,
            transport=transport,
        )
        self._anonymous = httpx.AsyncClient(timeout=self._timeout, transport=transport)

    async def __aenter__(self) -> AsyncFillPdfClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._anonymous.aclose()

    async def _send(self, call: _Call) -> httpx.Response:
        attempts = _Attempts(self, call)
        while True:
            attempts.rewind()
            http = self._anonymous if call.absolute else self._http
            try:
                response = await http.request(call.method, call.path, **call.arguments())
            except _TRANSIENT as exc:
                wait = attempts.failed(exc)
            else:
                answered = attempts.answered(response)
                if answered is None:
                    return response
                wait = answered
            await asyncio.sleep(wait)

    async def convert(
        self,
        pdf: PdfSource,
        *,
        detect: str = "fields",
        idempotency_key: str | None = None,
        schema: SchemaSource | None = None,
    ) -> Conversion:
        call, stream, opened = self._convert_call(pdf, detect, idempotency_key, schema)
        try:
            return Conversion.from_json((await self._send(call)).json())
        finally:
            if opened:
                stream.close()

    async def fill(
        self,
        target: str | bytes,
        values: Mapping[str, Any],
        *,
        fields: Sequence[Field | Mapping[str, Any]] | None = None,
        flatten: bool = False,
    ) -> bytes:
        body = _fill_body(target, values, fields, flatten)
        return (await self._send(_Call("POST", "/v1/fill", json=body))).content

    async def get_account(self) -> Account:
        return Account.from_json((await self._send(_Call("GET", "/v1/account"))).json())

    async def get_conversion(self, conversion_id: str) -> Conversion:
        response = await self._send(_Call("GET", f"/v1/conversions/{conversion_id}"))
        return Conversion.from_json(response.json())

    async def download(self, conversion: str | ConversionRef) -> bytes:
        cid, url = _document_of(conversion)
        url = url or (await self.get_conversion(cid)).document_url
        if not url:
            raise ApiServerError(f"Conversion {cid} came back without a document_url.")
        return (await self._send(_Call("GET", url, absolute=True))).content
