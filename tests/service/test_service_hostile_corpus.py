"""The whole hostile corpus against one live server, with its memory watched.

Every crafted PDF of ``hostile.HOSTILE`` as an upload, the filter-chain bombs four at once,
absurd values in a multiline field, deeply nested JSON, lone surrogates and a body sent a
byte a second: each is answered within 10 s with a 4xx or a correct result, the server's
whole process tree stays under 1.5 GB, nothing answers 500 or 502, and no error message
shows an object address or a Python exception name.
"""

from __future__ import annotations

import base64
import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import psutil
import pytest

from kits.hostile import HOSTILE, many_fields
from kits.servicekit import Server, flat_form, start_server

pytestmark = pytest.mark.system

#: How long a test waits for an answer before calling it a hang: a guard, not a timing. The
#: service's own deadlines (5 s for headers, a body rate after 5 s) answer far sooner.
HANG_GUARD_S = 60.0
TREE_RSS_LIMIT = int(1.5 * 1024**3)
INTERNALS = re.compile(r"0x[0-9a-fA-F]{4,}|\b[A-Z][A-Za-z]*(Error|Exception)\b|Traceback")
NOTES_RECT = [72, 300, 540, 500]


class TreeMemory:
    """Peak resident memory of a process and all its descendants, sampled every 50 ms."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            total = 0
            for process in [self.root, *self.root.children(recursive=True)]:
                with contextlib.suppress(psutil.Error):
                    total += process.memory_info().rss
            self.peak = max(self.peak, total)
            self._stop.wait(0.05)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture(scope="module")
def watched() -> Iterator[tuple[Server, TreeMemory]]:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as folder:
        server = start_server(Path(folder) / "data")
        try:
            with TreeMemory(server.process.pid) as memory:
                yield server, memory
        finally:
            server.stop()


def _check(response: httpx.Response, what: str) -> None:
    assert response.status_code < 500, f"{what}: {response.status_code} {response.text[:300]}"
    if response.status_code >= 400:
        body = response.json()
        assert set(body["error"]) == {"type", "message", "param"}, body
        leaked = INTERNALS.search(body["error"]["message"])
        assert leaked is None, f"{what}: the message shows {leaked.group(0)!r}: {body}"


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_every_hostile_upload(watched: tuple[Server, TreeMemory], case: str) -> None:
    server, _ = watched
    with server.client(server.create_key("scale"), timeout=60) as client:
        response = client.post("/v1/convert", files={"file": ("x.pdf", HOSTILE[case]())})
    _check(response, case)
    if response.status_code == 200:
        assert response.json()["pages"] >= 1


def test_four_filter_chain_bombs_at_once(watched: tuple[Server, TreeMemory]) -> None:
    server, _ = watched
    key = server.create_key("scale")
    bombs = [HOSTILE["chain_bomb_flate"](), HOSTILE["chain_bomb_hex"]()] * 2

    def send(pdf: bytes) -> httpx.Response:
        with server.client(key, timeout=60) as client:
            return client.post("/v1/convert", files={"file": ("b.pdf", pdf)})

    with ThreadPoolExecutor(4) as pool:
        for response in pool.map(send, bombs):
            _check(response, "a bomb of four")
            assert 400 <= response.status_code < 500


@pytest.fixture(scope="module")
def notes_conversion(watched: tuple[Server, TreeMemory]) -> tuple[str, str]:
    """A stored conversion with one multiline text field, and its key."""
    server, _ = watched
    key = server.create_key("scale")
    schema = [{"name": "notes", "type": "text", "page": 0, "rect": NOTES_RECT, "multiline": True}]
    return key, server.convert_schema(key, schema)


@pytest.mark.parametrize(
    "value", ["W" * 3000, "word " * 200_000], ids=["unbroken-3000", "words-1MB"]
)
def test_absurd_values_in_a_multiline_field(
    watched: tuple[Server, TreeMemory], notes_conversion: tuple[str, str], value: str
) -> None:
    server, _ = watched
    key, conversion_id = notes_conversion
    body = {"conversion_id": conversion_id, "values": {"notes": value}}
    with server.client(key, timeout=60) as client:
        response = client.post("/v1/fill", json=body)
    _check(response, f"{len(value):,} characters")
    if response.status_code == 200:
        assert response.content.startswith(b"%PDF-")
    else:
        assert response.json()["error"]["param"] == "notes", response.text


@pytest.mark.parametrize(
    "raw",
    [
        b'{"values": ' + b"[" * 990 + b"]" * 990 + b"}",
        b'{"values": {"\\ud800": "x"}, "conversion_id": "conv_000000000000000000000000"}',
        b'{"values": {"a": "\\udfff"}, "conversion_id": "conv_000000000000000000000000"}',
        b'{"values": {"a": "x"}, "pdf_base64": "' + base64.b64encode(b"%PDF-1.7") + b'"',
    ],
    ids=["nested-990", "surrogate-key", "surrogate-value", "cut-short"],
)
def test_bad_json_bodies(watched: tuple[Server, TreeMemory], raw: bytes) -> None:
    server, _ = watched
    with server.client(server.create_key("scale")) as client:
        response = client.post(
            "/v1/fill", content=raw, headers={"Content-Type": "application/json"}
        )
    _check(response, raw[:40].decode())
    assert response.status_code == 400, response.text


@pytest.fixture(scope="module")
def sixty_thousand_fields() -> bytes:
    return many_fields(60_000)


def test_a_form_of_60000_fields_uploaded(
    watched: tuple[Server, TreeMemory], sixty_thousand_fields: bytes
) -> None:
    server, _ = watched
    with server.client(server.create_key("enterprise"), timeout=60) as client:
        response = client.post("/v1/convert", files={"file": ("big.pdf", sixty_thousand_fields)})
    _check(response, "60,000 fields uploaded")
    assert response.status_code == 415 and "60,000" in response.json()["error"]["message"]


@pytest.mark.parametrize("listed", [1, 60_000], ids=["one-listed", "all-listed"])
def test_a_form_of_60000_fields_filled_inline(
    watched: tuple[Server, TreeMemory], sixty_thousand_fields: bytes, listed: int
) -> None:
    server, _ = watched
    body = {
        "pdf_base64": base64.b64encode(sixty_thousand_fields).decode(),
        "fields": [{"name": f"f{i}", "type": "text"} for i in range(listed)],
        "values": {"f0": "x", "f_nope": "y"},
    }
    with server.client(server.create_key("enterprise"), timeout=60) as client:
        response = client.post("/v1/fill", json=body)
    _check(response, f"60,000 fields inline, {listed} listed")
    assert response.status_code in (400, 415), response.text


def test_a_body_sent_a_byte_a_second(watched: tuple[Server, TreeMemory]) -> None:
    server, _ = watched
    key = server.create_key("scale")
    port = int(server.base_url.rsplit(":", 1)[1])
    guard = time.monotonic() + HANG_GUARD_S
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD_S) as sock:
        sock.sendall(
            b"POST /v1/fill HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {key}\r\nContent-Length: 100000\r\n\r\n".encode()
        )
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                sock.sendall(b" ")
                sock.settimeout(1.0)
                with contextlib.suppress(TimeoutError):
                    answer += sock.recv(65536)
                assert time.monotonic() < guard, "the server never answered a slow body"
        except (BrokenPipeError, ConnectionResetError):
            pass
    status = int(answer.split(b" ", 2)[1]) if answer else 0
    assert 400 <= status < 500, answer[:300]


@pytest.mark.parametrize("sent", [b"", b"POST /v1/fill HTTP/1.1\r\nHost: x\r\nX-Slow: "])
def test_headers_sent_a_byte_a_second_or_never(
    watched: tuple[Server, TreeMemory], sent: bytes
) -> None:
    server, _ = watched
    port = int(server.base_url.rsplit(":", 1)[1])
    guard = time.monotonic() + HANG_GUARD_S
    answer = b""
    with socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD_S) as sock:
        sock.sendall(sent)
        sock.settimeout(1.0)
        while time.monotonic() < guard:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                chunk = None
            if chunk == b"":
                break  # closed by the server
            answer += chunk or b""
            if b"\r\n\r\n" in answer and answer.endswith(b"}}"):
                break  # the whole 408
            with contextlib.suppress(OSError):
                sock.sendall(b"a" if sent else b"")
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert b'"request_timeout"' in answer


def test_the_tree_stayed_small_and_the_server_serves(watched: tuple[Server, TreeMemory]) -> None:
    """Runs last in this module: the peak over everything above."""
    server, memory = watched
    assert server.alive()
    with server.client(server.create_key("scale")) as client:
        assert client.post("/v1/convert", files={"file": ("ok.pdf", flat_form(1))}).is_success
    print(f"peak RSS of the server's process tree: {memory.peak / 1024**2:,.0f} MB")
    assert 0 < memory.peak < TREE_RSS_LIMIT, f"peak {memory.peak / 1024**3:.2f} GB"
