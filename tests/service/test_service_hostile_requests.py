"""Hostile requests (not hostile PDFs) against the live service: each gets a 4xx with a stable
error type and a message that says what to do, never a 500 or a library's words, and the
server keeps serving.

Bodies that nest too deep or carry lone surrogates, misnamed multipart parts, bodies cut short
or trickled in a byte at a time (sent over raw sockets, as an attacker would); the security
headers of every answer; document URLs that never follow the Host header; the API docs page
without scripts; a data folder only its owner can read.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import stat
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from fillpdf_provider.service.body_deadline import BodyDeadline, BodyTooSlow
from kits.servicekit import Server, flat_form, start_server

ERROR_KEYS = {"type", "message", "param"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    """One server with its SQLite file in its data dir (the file whose mode is checked)."""
    running = start_server(tmp_path_factory.mktemp("hostile-requests"))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def key(server: Server) -> str:
    return server.create_key("pro")


@pytest.fixture(scope="module")
def conversion_id(server: Server, key: str) -> str:
    with server.client(key) as client:
        response = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(1))})
    assert response.status_code == 200, response.text
    return response.json()["conversion_id"]


def error_of(response: httpx.Response, status: int, error_type: str) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS
    assert body["error"]["type"] == error_type
    assert "Traceback" not in response.text
    return body["error"]


# --------------------------------------------------------------------------- JSON bodies


@pytest.mark.parametrize("depth", [33, 990, 100_000])
def test_deeply_nested_json_is_400(server: Server, key: str, depth: int) -> None:
    body = b'{"conversion_id": "conv_x", "values": {"a": ' + b"[" * depth + b"]" * depth + b"}}"
    with server.client(key) as client:
        response = client.post("/v1/fill", content=body)
    error = error_of(response, 400, "invalid_request")
    assert "levels deep" in error["message"] and "RecursionError" not in error["message"]
    assert server.alive()


@pytest.mark.parametrize(
    ("template", "where", "param"),
    [
        ('{"conversion_id": "%s", "values": {"full_name": "a\\ud800"}}', "values.full_name",
         "values"),
        ('{"conversion_id": "%s", "values": {"a\\udc00b": "x"}}', 'key "a\\udc00b" in values',
         "values"),
        ('{"conversion_id": "%s", "values": {"x": [1, {"y": ["\\udfff"]}]}}',
         "values.x[1].y[0]", "values"),
        ('{"conversion_id": "%s\\ud800", "values": {}}', "conversion_id", "conversion_id"),
        ('{"conversion_id": "%s", "values": {}, "\\ud801": 1}', 'key "\\ud801" in the body',
         "\\ud801"),
        ('{"pdf_base64": "JVBERi0=", "fields": [{"name": "n\\ud800", "type": "text"}], '
         '"values": {}, "x": "%s"}', "fields[0].name", "fields"),
    ],
    ids=["value", "key", "nested", "conversion_id", "top-level key", "field name"],
)  # fmt: skip
def test_lone_surrogates_are_400_naming_where(
    server: Server, key: str, conversion_id: str, template: str, where: str, param: str
) -> None:
    body = (template % conversion_id).encode()
    for headers in ({}, {"Idempotency-Key": f"surrogate-{time.time_ns()}"}):
        with server.client(key) as client:
            response = client.post("/v1/fill", content=body, headers=headers)
        error = error_of(response, 400, "invalid_request")
        assert where in error["message"] and "surrogate" in error["message"]
        assert error["param"] == param


def test_numbers_past_pythons_digit_limit_are_400(server: Server, key: str) -> None:
    body = b'{"conversion_id": "conv_x", "values": {"a": ' + b"9" * 5000 + b"}}"
    with server.client(key) as client:
        error = error_of(client.post("/v1/fill", content=body), 400, "invalid_request")
    assert "digits" in error["message"] and "set_int_max_str_digits" not in error["message"]


# --------------------------------------------------------------------------- multipart


@pytest.mark.parametrize("name", ["pdf", "File", "x" * 200])
def test_a_misnamed_part_is_400_naming_the_parts_taken(server: Server, key: str, name: str) -> None:
    with server.client(key) as client:
        before = client.get("/v1/account").json()["pages_used"]
        response = client.post("/v1/convert", files={name: ("f.pdf", flat_form(1))})
        error = error_of(response, 400, "invalid_request")
        assert "named 'file'" in error["message"] and error["param"] == "file"
        assert "file, detect, schema" in error["message"]
        assert "1,024 bytes" not in error["message"]
        assert client.get("/v1/account").json()["pages_used"] == before
    assert not list((server.data_dir / "uploads").iterdir())


def test_a_malformed_multipart_body_is_400_in_our_words(server: Server, key: str) -> None:
    with server.client(key) as client:
        response = client.post(
            "/v1/convert",
            content=b'--xyz\r\nContent-Disposition: form-data; name="file"\r\n\r\n%PDF\r\n--xyq',
            headers={"Content-Type": "multipart/form-data; boundary=xyz"},
        )
    error = error_of(response, 400, "invalid_request")
    assert error["message"].startswith("The multipart body")


# --------------------------------------------------------------------------- raw sockets


def _address(server: Server) -> tuple[str, int]:
    parts = urlsplit(server.base_url)
    return parts.hostname or "127.0.0.1", parts.port or 80


def _head(path: str, key: str, content_type: str, length: int) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def _multipart(pdf: bytes, boundary: str = "b0undary") -> tuple[str, bytes]:
    body = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.pdf"\r\n'
            "Content-Type: application/pdf\r\n\r\n"
        ).encode()
        + pdf
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return f"multipart/form-data; boundary={boundary}", body


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 answer read off ``sock`` (status, lower-cased headers, body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"connection closed after {data!r}")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(lines[0].split()[1]), headers, body


@pytest.mark.parametrize("path", ["/v1/convert", "/v1/fill"])
def test_a_body_cut_short_is_400_logged_at_info_and_leaves_nothing(
    server: Server, key: str, path: str
) -> None:
    since = len(server.log_lines())
    if path == "/v1/convert":
        content_type, body = _multipart(flat_form(1))
    else:
        content_type, body = "application/json", b'{"values": {}, "conversion_id": "conv_x"}'
    with socket.create_connection(_address(server), timeout=20) as sock:
        sock.sendall(_head(path, key, content_type, len(body) + 50_000) + body)
        time.sleep(0.3)  # the server is now waiting for the rest
        sock.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            while sock.recv(65536):  # whatever comes back: the server closes its side
                pass
    cut_short = "client closed the connection before the end of the body"
    entries = server.wait_for_log(
        lambda entries: any(e["message"] == cut_short for e in entries), since, what=cut_short
    )
    cut = next(e for e in entries if e["message"] == cut_short)
    assert cut["level"] == "info" and cut["path"] == path
    assert cut["received"] <= len(body) and cut["content_length"] == str(len(body) + 50_000)
    mine = server.wait_for_requests(since, request_id=cut["request_id"])
    assert [(e["path"], e["status"]) for e in mine] == [(path, 400)]
    assert not [e for e in server.log_entries(since) if e["level"] in ("error", "critical")]
    assert not list((server.data_dir / "uploads").iterdir())
    with server.client(key) as client:
        assert client.get("/v1/account").status_code == 200


class _Trickle(threading.Thread):
    """Sends ``data`` one byte a second until it is sent, stopped, or the server hangs up."""

    def __init__(self, sock: socket.socket, data: bytes) -> None:
        super().__init__(daemon=True)
        self.sock, self.data, self.stop = sock, data, threading.Event()

    def run(self) -> None:
        for index in range(len(self.data)):
            if self.stop.is_set():
                return
            try:
                self.sock.send(self.data[index : index + 1])
            except OSError:
                return
            self.stop.wait(1.0)


@pytest.mark.parametrize("path", ["/v1/convert", "/v1/fill"])
def test_a_body_trickled_at_one_byte_a_second_gets_408(server: Server, key: str, path: str) -> None:
    if path == "/v1/convert":
        content_type, body = _multipart(flat_form(1))
    else:
        content_type, body = "application/json", b'{"values": {}, "conversion_id": "conv_x"}'
    since = len(server.log_lines())
    # The server's own deadline answers (408 after its grace); the timeout only guards a hang.
    with socket.create_connection(_address(server), timeout=60) as sock:
        sock.sendall(_head(path, key, content_type, len(body)))
        trickle = _Trickle(sock, body)
        trickle.start()
        try:
            status, headers, answer = _read_response(sock)
        finally:
            trickle.stop.set()
            trickle.join(5)
        try:  # and the connection is closed (reset, if a byte was still on its way)
            rest = sock.recv(65536)
        except ConnectionResetError:
            rest = b""
        assert rest == b""
    assert status == 408, answer
    assert headers["connection"] == "close"
    error = json.loads(answer)["error"]
    assert error["type"] == "request_timeout" and "KiB/s" in error["message"]
    request_id = headers["x-request-id"]
    answered = server.wait_for_requests(since, request_id=request_id)  # the last line it logs
    assert [e["status"] for e in answered] == [408]
    mine = [e for e in server.log_entries(since) if e.get("request_id") == request_id]
    assert any(e["message"] == "request body too slow" for e in mine)
    assert not list((server.data_dir / "uploads").iterdir())
    with server.client(key) as client:  # still serving, and a normal upload still works
        response = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(2))})
        assert response.status_code == 200, response.text


# --------------------------------------------------------------------------- the middleware


def _run_deadline(messages: list[tuple[float, dict]], app_reads: int, **limits: float) -> list:
    """Run ``BodyDeadline`` around an app that reads ``app_reads`` messages; each message
    arrives after its delay. Returns what the app saw and what was sent."""
    seen: list = []
    sent: list[dict] = []

    async def receive() -> dict:
        delay, message = messages.pop(0)
        await asyncio.sleep(delay)
        return message

    async def send(message: dict) -> None:
        sent.append(message)

    async def app(scope: dict, receive, send) -> None:
        for _ in range(app_reads):
            seen.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    middleware = BodyDeadline(app, **limits)  # type: ignore[arg-type]
    asyncio.run(middleware({"type": "http", "path": "/x"}, receive, send))
    return [seen, [m.get("status") for m in sent if m["type"] == "http.response.start"]]


def test_the_deadline_does_not_time_the_wait_after_the_body() -> None:
    body = {"type": "http.request", "body": b"x" * 10, "more_body": False}
    disconnect = {"type": "http.disconnect"}
    # the client waits twice the grace after its body: nothing is timed by then
    seen, statuses = _run_deadline(
        [(0.0, body), (2.0, disconnect)], 2, grace_s=1.0, min_rate=1_000_000
    )
    assert seen == [body, disconnect] and statuses == [200]


def test_the_deadline_answers_408_for_a_slow_body_the_app_did_not_answer() -> None:
    chunk = {"type": "http.request", "body": b"x", "more_body": True}
    # two bytes at once, then none for a minute: 408 once the grace (1 s) and the 2 bytes'
    # share at 100 B/s are spent, without waiting for the third
    seen, statuses = _run_deadline(
        [(0.0, chunk), (0.0, chunk), (60.0, chunk)], 3, grace_s=1.0, min_rate=100
    )
    assert len(seen) == 2 and statuses == [408]


def test_a_body_at_the_rate_passes() -> None:
    chunk = {"type": "http.request", "body": b"x" * 100, "more_body": True}
    last = {"type": "http.request", "body": b"x" * 100, "more_body": False}
    # 100 bytes every 0.1 s is ten times the minimum rate: a second of slack at each chunk
    seen, statuses = _run_deadline(
        [(0.0, chunk), (0.1, chunk), (0.1, chunk), (0.1, last)], 4, grace_s=1.0, min_rate=100
    )
    assert len(seen) == 4 and statuses == [200]


def test_a_slow_body_error_is_the_contracts_408() -> None:
    error = BodyTooSlow("slow")
    assert error.status == 408 and error.body()["error"]["type"] == "request_timeout"


# --------------------------------------------------------------------------- headers


def test_security_headers_on_every_answer(server: Server, key: str, conversion_id: str) -> None:
    with server.client(key) as client:
        url = client.get(f"/v1/conversions/{conversion_id}").json()["document_url"]
        answers = {
            "account": client.get("/v1/account"),
            "401": client.get("/v1/account", headers={"Authorization": "Bearer nope"}),
            "404": client.get("/v1/nowhere"),
            "400": client.post("/v1/fill", content=b"{"),
            "openapi": client.get("/v1/openapi.json"),
            "docs": client.get("/v1/docs"),
            "file": httpx.get(url),
        }
    for name, response in answers.items():
        assert response.headers["x-content-type-options"] == "nosniff", name
        assert response.headers["referrer-policy"] == "no-referrer", name
        assert "server" not in response.headers, name
        assert response.headers["cache-control"] == "no-store", name
    assert answers["file"].status_code == 200
    assert answers["file"].content.startswith(b"%PDF-")


def test_a_trailing_slash_is_404_not_a_redirect(server: Server, key: str) -> None:
    with server.client(key) as client:
        response = client.get("/v1/account/", headers={"Host": "evil.example"})
    error_of(response, 404, "not_found")
    assert "location" not in response.headers


def test_document_urls_never_follow_the_host_header(
    server: Server, key: str, conversion_id: str
) -> None:
    evil = {"Host": "evil.example", "X-Forwarded-Host": "evil.example"}
    with server.client(key) as client:
        made = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(1))}, headers=evil)
        again = client.get(f"/v1/conversions/{conversion_id}", headers=evil)
    for response in (made, again):
        assert response.status_code == 200, response.text
        url = response.json()["document_url"]
        assert "evil.example" not in url
        assert url.startswith(server.base_url + "/v1/files/")  # serve's bind address
    assert httpx.get(made.json()["document_url"]).status_code == 200


def test_an_app_without_a_public_url_uses_localhost(tmp_path: Path) -> None:
    from fillpdf_provider.service import Settings, create_app

    app = create_app(Settings(data_dir=tmp_path))
    assert app.state.service.settings.public_base_url == "http://localhost"


def test_serve_takes_its_public_url_from_its_bind_address() -> None:
    from fillpdf_provider.service.serving import bind_url

    assert bind_url("127.0.0.1", 8000) == "http://127.0.0.1:8000"
    assert bind_url("0.0.0.0", 80) == f"http://{socket.gethostname()}:80"
    assert bind_url("::", 8000) == f"http://{socket.gethostname()}:8000"
    assert bind_url("::1", 8000) == "http://[::1]:8000"


# --------------------------------------------------------------------------- API docs


def test_the_api_docs_are_one_page_without_scripts(server: Server) -> None:
    with server.client() as client:
        docs = client.get("/v1/docs")
        openapi = client.get("/v1/openapi.json").json()
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert (
        docs.headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    )
    page = docs.text
    assert "<script" not in page.lower()
    assert not re.findall(r"https?://", page), re.findall(r"https?://\S+", page)
    assert not re.search(r"""(src|href)\s*=\s*["']?//""", page)  # no protocol-relative URL
    for path, operations in openapi["paths"].items():
        assert path in page, path
        for method, operation in operations.items():
            assert f'id="{method}-' in page
            assert operation["summary"].replace("'", "&#x27;") in page, operation["summary"]
    for error_type in ("invalid_request", "authentication_error", "request_timeout"):
        assert f"<code>{error_type}</code>" in page
    assert "/v1/docs" not in openapi["paths"]


def test_an_unknown_path_points_to_the_api_docs_for_people(server: Server) -> None:
    """Someone who opens the service's root in a browser is sent to the reference they can
    read, which is there, and to the OpenAPI document, which is there too."""
    with server.client() as client:
        for path in ("/", "/v1", "/v1/nowhere"):
            message = error_of(client.get(path), 404, "not_found")["message"]
            assert f"No such endpoint: {path}." in message, message
            named = re.findall(r"(/v1/\w+(?:\.\w+)?)", message.partition(f"{path}.")[2])
            assert named[:2] == ["/v1/docs", "/v1/openapi.json"], message
            docs, openapi = client.get(named[0]), client.get(named[1])
            assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
            assert openapi.status_code == 200 and "paths" in openapi.json()


# --------------------------------------------------------------------------- the data folder


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_data_folder_is_the_owners_alone(server: Server, conversion_id: str) -> None:
    data = server.data_dir
    for folder in (data, data / "files", data / "uploads"):
        assert _mode(folder) == 0o700, folder
    assert _mode(data / "fillpdf.db") == 0o600
    assert _mode(data / "signing.key") == 0o600
    converted = list((data / "files").iterdir())
    assert converted and all(_mode(f) == 0o600 for f in converted)


def test_prepare_tightens_a_data_folder_found_open(tmp_path: Path) -> None:
    from fillpdf_provider.service import Settings

    data = tmp_path / "data"
    (data / "files").mkdir(parents=True)
    for folder in (data, data / "files"):
        folder.chmod(0o775)
    database = data / "fillpdf.db"
    database.write_bytes(b"")
    database.chmod(0o644)
    elsewhere = tmp_path / "db" / "other.db"
    Settings(data_dir=data).prepare()
    Settings(data_dir=tmp_path / "d2", database_url=f"sqlite:///{elsewhere}").prepare()
    assert [_mode(p) for p in (data, data / "files", data / "uploads")] == [0o700] * 3
    assert _mode(database) == 0o600 and _mode(elsewhere) == 0o600
