"""The Python client against the real service: results, every error type, and retries.

One server on SQLite is enough here: the client sees only HTTP, and the service's own tests
cover both databases.
"""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path

import httpx
import pytest

from fillpdf_provider.client import (
    Account,
    ApiServerError,
    AsyncFillPdfClient,
    AuthenticationError,
    Conversion,
    EngineError,
    Expired,
    FillPdfApiError,
    FillPdfClient,
    Forbidden,
    InvalidRequest,
    NotFound,
    PayloadTooLarge,
    QuotaExceeded,
    RateLimited,
    RetryPolicy,
    ServiceUnavailable,
    UnsupportedFile,
)
from kits.flatkit import flat_form_schema
from kits.formkit import sample_form
from kits.hostile import truncated
from kits.servicekit import DroppingProxy, Server, flat_form, free_port, start_server

QUICK = RetryPolicy(max_retries=2, backoff_s=0.05, max_backoff_s=0.2)
NO_RETRY = RetryPolicy(max_retries=0)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("client"))
    yield running
    running.stop()


def client_for(server: Server, plan: str = "pro", **kwargs: object) -> FillPdfClient:
    return FillPdfClient(server.base_url, server.create_key(plan), **kwargs)  # type: ignore[arg-type]


def test_convert_fill_account_and_download(server: Server, tmp_path) -> None:
    path = tmp_path / "flat.pdf"
    path.write_bytes(flat_form(2))
    with client_for(server) as client:
        conversion = client.convert(path)  # streamed from the file
        assert isinstance(conversion, Conversion)
        assert conversion.pages == 2 and conversion.fields == len(conversion.schema) >= 10
        names = {f.name for f in conversion.schema}
        assert "full_name" in names
        with path.open("rb") as handle:
            again = client.convert(handle, detect="fields_fast")
        assert again.conversion_id != conversion.conversion_id
        pdf = client.fill(conversion.conversion_id, {"full_name": "Ada"})
        assert pdf.startswith(b"%PDF-")
        fillable = client.download(conversion)
        assert fillable.startswith(b"%PDF-") and b"/AcroForm" in fillable
        assert client.download(conversion.conversion_id) == fillable
        account = client.get_account()
        assert isinstance(account, Account)
        assert (account.plan, account.pages_used, account.pages_included) == ("pro", 4, 60)
        assert client.get_conversion(conversion.conversion_id).schema == conversion.schema


def test_convert_with_a_schema_builds_that_form(server: Server, tmp_path: Path) -> None:
    schema = flat_form_schema()
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"schema": schema}))
    with client_for(server) as client:
        built = [client.convert(flat_form(2), schema=given) for given in (schema, path)]
        assert built[0].schema == built[1].schema
        assert [f.name for f in built[0].schema] == [e["name"] for e in schema]
        assert client.download(built[0]) == client.download(built[1])
        assert client.get_account().pages_used == 4
        schema[1]["type"] = "phone"
        with pytest.raises(InvalidRequest) as caught:
            client.convert(flat_form(2), schema=json.dumps(schema))
        assert caught.value.param == "schema" and "schema[1] ('email')" in caught.value.message
        with pytest.raises(InvalidRequest, match="No such schema file"):
            client.convert(flat_form(2), schema=tmp_path / "missing.json")
        assert client.get_account().pages_used == 4


def test_fill_an_inline_pdf_needs_its_fields(server: Server) -> None:
    pdf, _ = sample_form()
    with client_for(server) as client:
        with pytest.raises(InvalidRequest) as caught:
            client.fill(pdf, {"full_name": "Ada"})
        assert caught.value.param == "fields"
        filled = client.fill(pdf, {"full_name": "Ada"}, fields=[{"name": "full_name",
                                                                 "type": "text"}])  # fmt: skip
        assert b"Ada" in filled


@pytest.mark.parametrize(
    ("cls", "make"),
    [
        (InvalidRequest, lambda c, cid: c.fill(cid, {"member": "maybe"})),
        (NotFound, lambda c, cid: c.get_conversion("conv_" + "0" * 24)),
        (UnsupportedFile, lambda c, cid: c.convert(b"not a pdf at all")),
        (UnsupportedFile, lambda c, cid: c.convert(truncated())),  # damaged: 415, not 502
        (
            PayloadTooLarge,
            lambda c, cid: c.fill(b"%PDF-" + b"0" * (19 * 1024 * 1024), {}, fields=[]),
        ),
    ],
    ids=lambda value: getattr(value, "__name__", ""),
)
def test_each_error_type_has_its_exception(server: Server, cls: type, make) -> None:
    with client_for(server, retry=QUICK) as client:
        cid = client.convert(flat_form(1)).conversion_id
        with pytest.raises(cls) as caught:
            make(client, cid)
    error = caught.value
    assert isinstance(error, FillPdfApiError)
    assert error.request_id and error.request_id.startswith("req_")
    assert error.request_id in str(error)
    assert error.status == {InvalidRequest: 400, NotFound: 404, UnsupportedFile: 415,
                            EngineError: 502, PayloadTooLarge: 413}[cls]  # fmt: skip


def test_authentication_error(server: Server) -> None:
    key = "fpk_0000000000000000_" + "x" * 43
    with (
        FillPdfClient(server.base_url, key) as client,
        pytest.raises(AuthenticationError) as caught,
    ):
        client.get_account()
    assert caught.value.status == 401


def test_quota_exceeded(server: Server) -> None:
    with client_for(server, "developer") as client:
        client.convert(flat_form(10))
        client.convert(flat_form(10))
        with pytest.raises(QuotaExceeded) as caught:
            client.convert(flat_form(6))
        assert "5 of this month's 25" in caught.value.message
        assert client.get_account().pages_used == 20


def test_forbidden_and_expired_document_urls(server: Server) -> None:
    with client_for(server) as client:
        conversion = client.convert(flat_form(1))
        assert conversion.document_url is not None
        tampered = conversion.document_url[:-4] + "0000"
        forged = Conversion(**{**conversion.__dict__, "document_url": tampered})
        with pytest.raises(Forbidden):
            client.download(forged)
        with server.clock_shifted(24 * 3600 + 5):
            with pytest.raises(Expired):
                client.download(conversion)
            with pytest.raises(Expired):
                client.fill(conversion.conversion_id, {})


def test_the_document_url_is_fetched_without_the_api_key(server: Server) -> None:
    seen: list[httpx.Request] = []

    def record(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        with httpx.Client() as real:
            forwarded = httpx.Request(
                request.method, request.url, headers=request.headers, content=request.read()
            )
            return real.send(forwarded)

    with FillPdfClient(server.base_url, server.create_key("pro"),
                       transport=httpx.MockTransport(record)) as client:  # fmt: skip
        client.download(client.convert(flat_form(1)))
    download = [r for r in seen if "/v1/files/" in r.url.path]
    assert download and "authorization" not in download[0].headers
    assert all("authorization" in r.headers for r in seen if "/v1/files/" not in r.url.path)


def test_server_errors_are_typed_and_gateway_errors_are_retried() -> None:
    calls = {"n": 0}

    def answer(request: httpx.Request) -> httpx.Response:
        calls["n"] += 1
        if request.url.path == "/v1/account" and calls["n"] == 1:
            return httpx.Response(503, text="upstream unavailable")
        if request.url.path == "/v1/account":
            return httpx.Response(
                500,
                headers={"X-Request-Id": "req_1"},
                json={"error": {"type": "api_error", "message": "bug; quote req_1", "param": None}},
            )
        return httpx.Response(404)

    transport = httpx.MockTransport(answer)
    client = FillPdfClient("http://fillpdf.test", "k", retry=QUICK, transport=transport)
    with client, pytest.raises(ApiServerError) as caught:
        client.get_account()
    assert calls["n"] == 2 and caught.value.request_id == "req_1"


def test_no_answer_at_all_is_service_unavailable_after_retries() -> None:
    client = FillPdfClient(f"http://127.0.0.1:{free_port()}", "k", retry=QUICK)
    with client, pytest.raises(ServiceUnavailable) as caught:
        client.get_account()
    assert "after 3 attempts" in caught.value.message


def test_rate_limited_without_retries_says_when_to_come_back(server: Server) -> None:
    with server.fresh_rate_window(), client_for(server, "developer", retry=NO_RETRY) as client:
        for _ in range(10):
            client.get_account()
        with pytest.raises(RateLimited) as caught:
            client.get_account()
    error = caught.value
    assert error.status == 429 and error.retry_at is not None
    assert 0 < (error.retry_at.timestamp() - time.time()) <= 61


def test_a_429_is_waited_out_until_the_window_resets(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    key = server.create_key("developer")
    with server.fresh_rate_window() as shift, FillPdfClient(server.base_url, key) as client:
        for _ in range(10):
            client.get_account()
        # 3 s before the end of the same window, so the wait is short but real
        with server.clock_shifted(shift + 56):
            started = time.monotonic()
            account = client.get_account()  # 429 first; the client waits for the next window
            waited = time.monotonic() - started
    assert account.plan == "developer"
    assert waited >= 1.0, waited
    # the wait is logged with its reason and length: until the window's end, not longer
    (line,) = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert "GET /v1/account: rate limited (429)" in line
    assert 1.0 <= float(line.split("retrying in ")[1].split(" s")[0]) <= 4.0, line


def test_a_convert_retried_after_a_dropped_connection_bills_once(server: Server) -> None:
    key = server.create_key("pro")
    proxy = DroppingProxy(server.base_url, drops=1)
    try:
        with FillPdfClient(proxy.url, key, retry=QUICK) as client:
            conversion = client.convert(flat_form(3))
        assert proxy.dropped == 1 and proxy.connections >= 2
    finally:
        proxy.close()
    with FillPdfClient(server.base_url, key) as direct:
        assert direct.get_account().pages_used == 3  # the server converted twice, billed once
        assert direct.get_conversion(conversion.conversion_id).pages == 3


def test_without_retries_a_dropped_connection_surfaces(server: Server) -> None:
    proxy = DroppingProxy(server.base_url, drops=1)
    try:
        key = server.create_key("pro")
        client = FillPdfClient(proxy.url, key, retry=NO_RETRY)
        with client, pytest.raises(ServiceUnavailable):
            client.get_account()
    finally:
        proxy.close()


def test_async_client(server: Server) -> None:
    async def main() -> None:
        async with AsyncFillPdfClient(server.base_url, server.create_key("pro"),
                                      retry=QUICK) as client:  # fmt: skip
            conversion = await client.convert(io.BytesIO(flat_form(1)))
            pdf = await client.fill(conversion.conversion_id, {"city": "Lyon"})
            assert pdf.startswith(b"%PDF-")
            assert (await client.get_account()).pages_used == 1
            assert (await client.download(conversion)).startswith(b"%PDF-")
            assert (await client.get_conversion(conversion.conversion_id)).pages == 1
            with pytest.raises(NotFound):
                await client.get_conversion("conv_" + "1" * 24)
            with pytest.raises(UnsupportedFile):
                await client.convert(b"GIF89a")
            built = await client.convert(flat_form(2), schema=flat_form_schema())
            assert [f.name for f in built.schema] == [e["name"] for e in flat_form_schema()]
            assert built.schema[4].widgets and len(built.schema[4].widgets) == 2

    asyncio.run(main())


def test_async_client_retries_a_dropped_convert_and_bills_once(server: Server) -> None:
    key = server.create_key("pro")
    proxy = DroppingProxy(server.base_url, drops=1)

    async def main() -> None:
        async with AsyncFillPdfClient(proxy.url, key, retry=QUICK) as client:
            await client.convert(flat_form(2))

    try:
        asyncio.run(main())
    finally:
        proxy.close()
    with FillPdfClient(server.base_url, key) as direct:
        assert direct.get_account().pages_used == 2


def test_constructor_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="base_url"):
        FillPdfClient("", "k")
    with pytest.raises(ValueError, match="keys create"):
        FillPdfClient("http://x", "")
