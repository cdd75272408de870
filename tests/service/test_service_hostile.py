"""Crafted PDFs against the engine and the live service: a typed answer in seconds, never a
hang or a crash, nothing billed, and the next request served as usual."""

from __future__ import annotations

import base64
import re
import time

import pytest

from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.errors import DamagedPdfError, FillPdfError, NotAPdfError, PdfError
from fillpdf_provider.engine.filler import Template
from fillpdf_provider.engine.source import open_pdf
from kits.hostile import HOSTILE
from kits.servicekit import Server, flat_form, start_server

#: Cases whose page is there to read however their objects lie or loop: a conversion is the
#: right answer (the page's "Name:" label and its rule give one field).
CONVERTED = (
    "page_count_lie",
    "resources_contain_themselves",
    "xobject_is_the_page",
    "font_is_its_own_descendant",
    "colour_space_inside_itself",
)
REFUSED = sorted(name for name in HOSTILE if name not in CONVERTED)
#: CPU seconds the engine may spend refusing or converting one hostile file. CPU time, not
#: wall-clock time: a loaded machine slows the clock, not the work.
CPU_BUDGET_S = 10.0
#: What a message must not show: object addresses and library exception classes.
INTERNALS = re.compile(r"0x[0-9a-fA-F]{4,}|\b[A-Z][A-Za-z]+(Error|Exception|Warning)\b")


@pytest.mark.parametrize("case", REFUSED)
def test_engine_refuses_hostile_pdfs_with_typed_errors(case: str) -> None:
    data = HOSTILE[case]()
    started = time.process_time()
    with pytest.raises(PdfError) as caught:
        convert(data, "fields")
    assert time.process_time() - started < CPU_BUDGET_S
    assert isinstance(caught.value, DamagedPdfError | NotAPdfError)
    assert (
        "re-save" in caught.value.message
        or "not a PDF" in caught.value.message
        or ("not processed" in caught.value.message)
    )


@pytest.mark.parametrize("detect", ["fields", "fields_fast"])
@pytest.mark.parametrize("case", CONVERTED)
def test_engine_converts_hostile_pdfs_whose_page_can_be_read(case: str, detect: str) -> None:
    started = time.process_time()
    result = convert(HOSTILE[case](), detect)
    assert time.process_time() - started < CPU_BUDGET_S
    assert result.pages == 1
    assert [f.type for f in result.schema] == ["text"]


def _messages(data: bytes) -> list[str]:
    """The messages of the errors convert, open_pdf and Template raise on ``data``; any other
    exception fails the test."""
    messages = []
    for call in (lambda: convert(data, "fields"), lambda: open_pdf(data), lambda: Template(data)):
        try:
            call()
        except FillPdfError as exc:
            messages.append(exc.message)
    return messages


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_error_messages_show_no_library_internals(case: str) -> None:
    for message in _messages(HOSTILE[case]()):
        assert not INTERNALS.search(message), message
        assert message.rstrip().endswith("."), message


@pytest.mark.parametrize("case", REFUSED)
def test_service_answers_hostile_uploads_with_415(server: Server, case: str) -> None:
    key = server.create_key("pro")
    with server.client(key) as client:
        response = client.post("/v1/convert", files={"file": ("x.pdf", HOSTILE[case]())})
        assert response.status_code == 415, response.text
        error = response.json()["error"]
        assert error["type"] == "unsupported_file"
        assert not INTERNALS.search(error["message"]), error["message"]
        account = client.get("/v1/account").json()
        assert account["pages_used"] == 0
        ok = client.post("/v1/convert", files={"file": ("ok.pdf", flat_form(1))})
        assert ok.status_code == 200, ok.text
    assert server.alive()
    assert not list((server.data_dir / "uploads").iterdir())


@pytest.mark.parametrize("case", CONVERTED)
def test_service_converts_hostile_uploads_whose_page_can_be_read(server: Server, case: str) -> None:
    with server.client(server.create_key("pro")) as client:
        response = client.post("/v1/convert", files={"file": ("x.pdf", HOSTILE[case]())})
        assert response.status_code == 200, response.text
        assert response.json()["pages"] == 1
        assert response.json()["fields"] == 1
    assert server.alive()


@pytest.mark.parametrize("case", ["deep_nesting", "cyclic_page_tree", "content_bomb"])
def test_hostile_inline_pdfs_for_fill_are_refused(server: Server, case: str) -> None:
    body = {
        "pdf_base64": base64.b64encode(HOSTILE[case]()).decode(),
        "fields": [{"name": "a", "type": "text"}],
        "values": {"a": "x"},
    }
    with server.client(server.create_key()) as client:
        response = client.post("/v1/fill", json=body)
        assert response.status_code in (400, 415), response.text
        assert client.get("/v1/account").status_code == 200


@pytest.fixture(scope="module")
def impatient_server(tmp_path_factory: pytest.TempPathFactory):
    """A server that gives the engine 50 ms: every real conversion overruns it."""
    running = start_server(
        tmp_path_factory.mktemp("impatient"), env={"FILLPDF_ENGINE_TIMEOUT": "0.05"}
    )
    yield running
    running.stop()


def test_work_that_overruns_its_deadline_is_stopped_with_415(impatient_server: Server) -> None:
    server = impatient_server
    with server.client(server.create_key("pro")) as client:
        response = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(8))})
        assert response.status_code == 415, response.text
        assert response.json()["error"]["type"] == "unsupported_file"
        assert "longer than" in response.json()["error"]["message"]
        assert client.get("/v1/account").json()["pages_used"] == 0
    assert server.alive()
    assert not list(server.data_dir.joinpath("files").iterdir())
