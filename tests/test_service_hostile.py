"""Crafted PDFs against the engine and the live service: a typed answer in seconds, never a
hang or a crash, nothing billed, and the next request served as usual."""

from __future__ import annotations

import base64
import time

import pytest
from hostile import HOSTILE
from servicekit import Server, flat_form, start_server

from fillpdf_provider.engine.convert import convert
from fillpdf_provider.engine.errors import DamagedPdfError, NotAPdfError, PdfError

REFUSED = sorted(name for name in HOSTILE if name != "page_count_lie")
ANSWER_WITHIN_S = 10.0


@pytest.mark.parametrize("case", REFUSED)
def test_engine_refuses_hostile_pdfs_with_typed_errors(case: str) -> None:
    data = HOSTILE[case]()
    started = time.perf_counter()
    with pytest.raises(PdfError) as caught:
        convert(data, "fields")
    assert time.perf_counter() - started < ANSWER_WITHIN_S
    assert isinstance(caught.value, DamagedPdfError | NotAPdfError)
    assert (
        "re-save" in caught.value.message
        or "not a PDF" in caught.value.message
        or ("not processed" in caught.value.message)
    )


def test_a_page_count_that_lies_is_read_as_the_pages_there_are() -> None:
    assert convert(HOSTILE["page_count_lie"](), "fields_fast").pages == 1


@pytest.mark.parametrize("case", REFUSED)
def test_service_answers_hostile_uploads_with_415_or_502(server: Server, case: str) -> None:
    key = server.create_key("pro")
    with server.client(key) as client:
        started = time.perf_counter()
        response = client.post("/v1/convert", files={"file": ("x.pdf", HOSTILE[case]())})
        took = time.perf_counter() - started
        assert response.status_code in (415, 502), response.text
        assert took < ANSWER_WITHIN_S, f"{case} took {took:.1f} s"
        error = response.json()["error"]
        assert error["type"] == ("unsupported_file" if response.status_code == 415
                                 else "engine_error")  # fmt: skip
        account = client.get("/v1/account").json()
        assert account["pages_used"] == 0
        ok = client.post("/v1/convert", files={"file": ("ok.pdf", flat_form(1))})
        assert ok.status_code == 200, ok.text
    assert server.alive()
    assert not list((server.data_dir / "uploads").iterdir())


@pytest.mark.parametrize("case", ["deep_nesting", "cyclic_page_tree", "content_bomb"])
def test_hostile_inline_pdfs_for_fill_are_refused(server: Server, case: str) -> None:
    body = {
        "pdf_base64": base64.b64encode(HOSTILE[case]()).decode(),
        "fields": [{"name": "a", "type": "text"}],
        "values": {"a": "x"},
    }
    with server.client(server.create_key()) as client:
        response = client.post("/v1/fill", json=body)
        assert response.status_code in (400, 415, 502), response.text
        assert client.get("/v1/account").status_code == 200


@pytest.fixture(scope="module")
def impatient_server(tmp_path_factory: pytest.TempPathFactory):
    """A server that gives the engine 50 ms: every real conversion overruns it."""
    running = start_server(
        tmp_path_factory.mktemp("impatient"), env={"FILLPDF_ENGINE_TIMEOUT": "0.05"}
    )
    yield running
    running.stop()


def test_work_that_overruns_its_deadline_is_stopped_with_502(impatient_server: Server) -> None:
    server = impatient_server
    with server.client(server.create_key("pro")) as client:
        response = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(8))})
        assert response.status_code == 502, response.text
        assert "longer than" in response.json()["error"]["message"]
        assert client.get("/v1/account").json()["pages_used"] == 0
    assert server.alive()
    assert not list(server.data_dir.joinpath("files").iterdir())
