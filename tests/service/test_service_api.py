"""The /v1 API end to end on a live server: every endpoint, every error row of the contract.

Each test makes its own key (a fresh account) so quota and rate limits don't leak between
tests. The module runs once on SQLite and once on PostgreSQL (see ``database_url``).
"""

from __future__ import annotations

import base64
import io
import json
import re
from urllib.parse import parse_qs, urlparse

import httpx
import pdfplumber
import pytest
from pypdf import PdfReader

from kits import script_gallery
from kits.formkit import sample_form
from kits.servicekit import Server, flat_form

ERROR_KEYS = {"type", "message", "param"}


def error_of(response: httpx.Response, status: int, error_type: str) -> dict:
    """The error body, after checking the status, the type and the envelope."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["x-request-id"].startswith("req_")
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == ERROR_KEYS
    assert body["error"]["type"] == error_type
    assert len(body["error"]["message"]) > 20
    return body["error"]


def convert(client: httpx.Client, pdf: bytes, **fields: str) -> httpx.Response:
    return client.post("/v1/convert", files={"file": ("form.pdf", pdf, "application/pdf")},
                       data=fields)  # fmt: skip


def pages_used(client: httpx.Client) -> int:
    return int(client.get("/v1/account").json()["pages_used"])


@pytest.fixture(scope="module")
def one_page() -> bytes:
    return flat_form(1)


@pytest.fixture(scope="module")
def converted(server: Server, one_page: bytes) -> tuple[str, dict]:
    """A key and the conversion it made of the one-page flat form."""
    key = server.create_key("pro")
    with server.client(key) as client:
        response = convert(client, one_page)
    assert response.status_code == 200, response.text
    return key, response.json()


# --------------------------------------------------------------------------- authentication


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer not-a-key",
        "Bearer fpk_0123456789abcdef_" + "A" * 43,  # well-formed, unknown
    ],
)
def test_missing_or_invalid_keys_get_401(server: Server, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    with server.client() as client:
        for method, path in (
            ("GET", "/v1/account"),
            ("POST", "/v1/fill"),
            ("POST", "/v1/convert"),
            ("GET", "/v1/conversions/conv_x"),
        ):
            response = client.request(method, path, headers=headers)
            error_of(response, 401, "authentication_error")
            assert "x-ratelimit-limit" not in response.headers


def test_a_real_key_id_with_the_wrong_secret_is_refused(server: Server) -> None:
    key = server.create_key()
    forged = key[:-4] + ("AAAA" if not key.endswith("AAAA") else "BBBB")
    with server.client(forged) as client:
        error_of(client.get("/v1/account"), 401, "authentication_error")
    with server.client(key) as client:
        assert client.get("/v1/account").status_code == 200


def test_keys_are_stored_as_hashes_only(server: Server) -> None:
    key = server.create_key()
    secret = key.split("_", 2)[2]
    with server.db.connect() as conn:
        dump = json.dumps([list(map(str, row)) for row in conn.exec_driver_sql(
            "SELECT * FROM api_keys")])  # fmt: skip
    assert secret not in dump
    assert key.split("_")[1] in dump  # the key id is kept, to find the row


# --------------------------------------------------------------------------- convert


def test_convert_returns_the_contract_result(server: Server, converted: tuple[str, dict]) -> None:
    _, result = converted
    assert result["status"] == "converted"
    assert re.fullmatch(r"conv_[0-9a-f]{24}", result["conversion_id"])
    assert result["pages"] == 1
    assert isinstance(result["ms"], int) and result["ms"] >= 0
    assert result["fields"] == len(result["schema"]) >= 5
    assert 0 < result["confidence"] <= 1
    names = {entry["name"] for entry in result["schema"]}
    assert {"full_name", "email", "city", "member", "newsletter"} <= names
    for entry in result["schema"]:
        assert re.fullmatch(r"[a-z0-9_]+", entry["name"])
        assert entry["type"] in {"text", "date", "checkbox", "radio", "choice", "signature"}
        assert entry["page"] == 0 and len(entry["rect"]) == 4
        assert 0 <= entry["confidence"] <= 1
        assert {"label", "required", "multiline", "max_length", "options"} <= set(entry)
    types = {entry["name"]: entry["type"] for entry in result["schema"]}
    assert types["member"] == "checkbox" and types["full_name"] == "text"
    assert result["expires_at"].endswith("Z")


def test_document_url_serves_the_fillable_pdf(server: Server, converted: tuple[str, dict]) -> None:
    _, result = converted
    url = result["document_url"]
    assert url.startswith(server.base_url + f"/v1/files/{result['conversion_id']}.pdf?")
    response = httpx.get(url)  # no API key: the signature is the credential
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/pdf"
    fields = PdfReader(io.BytesIO(response.content)).get_fields() or {}
    assert {entry["name"] for entry in result["schema"]} <= set(fields)


def test_fields_fast_mode(server: Server, one_page: bytes) -> None:
    with server.client(server.create_key()) as client:
        response = convert(client, one_page, detect="fields_fast")
    assert response.status_code == 200, response.text
    assert response.json()["fields"] >= 5


@pytest.mark.parametrize(
    ("files", "data", "param"),
    [
        (None, {"detect": "fields"}, "file"),
        ({"document": ("f.pdf", b"%PDF-1.4", "application/pdf")}, None, "file"),
        ({"file": ("f.pdf", b"%PDF-1.4", "application/pdf")}, {"detect": "everything"}, "detect"),
    ],
)
def test_convert_request_errors_are_400(
    server: Server, files: dict | None, data: dict | None, param: str
) -> None:
    key = server.create_key()
    with server.client(key) as client:
        response = client.post("/v1/convert", files=files, data=data)
        if files is None:  # no multipart body at all
            error = error_of(response, 400, "invalid_request")
        else:
            error = error_of(response, 400, "invalid_request")
        assert error["param"] == param
        assert pages_used(client) == 0


def test_convert_with_a_json_body_is_400(server: Server) -> None:
    with server.client(server.create_key()) as client:
        error = error_of(client.post("/v1/convert", json={"file": "x"}), 400, "invalid_request")
    assert "multipart/form-data" in error["message"]


def test_malformed_multipart_is_400(server: Server) -> None:
    with server.client(server.create_key()) as client:
        response = client.post(
            "/v1/convert",
            content=b'--xyz\r\nContent-Disposition: form-data; name="file"\r\n\r\n%PDF-1.4 trunc',
            headers={"Content-Type": "multipart/form-data; boundary=xyz"},
        )
        error_of(response, 400, "invalid_request")
        assert pages_used(client) == 0


@pytest.mark.parametrize(
    ("make", "words"),
    [
        (lambda: b"GIF89a not a pdf at all" * 10, "not a PDF"),
        (lambda: flat_form(1, password="secret"), "password"),
        (lambda: flat_form(11), "at most 10"),
    ],
    ids=["not-a-pdf", "encrypted", "over-plan-pages"],
)
def test_unsupported_files_are_415_and_bill_nothing(server: Server, make, words: str) -> None:
    with server.client(server.create_key("developer")) as client:
        error = error_of(convert(client, make()), 415, "unsupported_file")
        assert words in error["message"]
        assert error["param"] == "file"
        assert pages_used(client) == 0


def test_uploads_over_25_mb_are_refused_before_the_body_is_kept(server: Server) -> None:
    big = b"%PDF-1.4\n" + b"0" * (25 * 1024 * 1024 + 10)
    with server.client(server.create_key("pro")) as client:
        error = error_of(convert(client, big), 415, "unsupported_file")
        assert "25 MB" in error["message"]
        assert pages_used(client) == 0
    assert not list((server.data_dir / "uploads").iterdir())


def test_a_pdf_that_cannot_be_processed_is_415_and_bills_nothing(server: Server) -> None:
    broken = flat_form(1)
    broken = broken[: len(broken) // 2]  # no xref, no trailer, page tree cut
    broken = broken.replace(b"/Type /Pages", b"/Type /Pagez")
    with server.client(server.create_key()) as client:
        response = convert(client, broken)
        error = error_of(response, 415, "unsupported_file")  # the file's fault: never a 502
        assert "re-save" in error["message"]
        assert pages_used(client) == 0
        assert client.get("/v1/account").status_code == 200  # still serving


# --------------------------------------------------------------------------- fill


def values_for(schema: list[dict]) -> dict[str, object]:
    values: dict[str, object] = {}
    for entry in schema:
        if entry["type"] == "checkbox":
            values[entry["name"]] = True
        elif entry["type"] in ("text", "date"):
            values[entry["name"]] = f"Value of {entry['name']}"
    return values


def test_fill_by_conversion_id_gives_a_visible_deterministic_pdf(
    server: Server, converted: tuple[str, dict]
) -> None:
    key, result = converted
    values = values_for(result["schema"])
    body = {"conversion_id": result["conversion_id"], "values": values}
    with server.client(key) as client:
        before = pages_used(client)
        first = client.post("/v1/fill", json=body)
        second = client.post("/v1/fill", json=body)
        assert pages_used(client) == before  # fill never touches the quota
    assert first.status_code == 200, first.text
    assert first.headers["content-type"] == "application/pdf"
    assert first.content == second.content
    fields = PdfReader(io.BytesIO(first.content)).get_fields() or {}
    assert fields["full_name"].get("/V") == "Value of full_name"
    assert fields["member"].get("/V") not in (None, "/Off")
    flat = client_fill_flat(server, key, result, values)
    with pdfplumber.open(io.BytesIO(flat)) as pdf:
        text = pdf.pages[0].extract_text()
    assert "Value of full_name" in text and "Value of email" in text
    assert not (PdfReader(io.BytesIO(flat)).get_fields() or {})


def client_fill_flat(server: Server, key: str, result: dict, values: dict) -> bytes:
    with server.client(key) as client:
        response = client.post(
            "/v1/fill",
            json={"conversion_id": result["conversion_id"], "values": values, "flatten": True},
        )
    assert response.status_code == 200, response.text
    return response.content


def test_fill_an_inline_pdf_with_its_fields(server: Server) -> None:
    pdf, _ = sample_form()
    with server.client(server.create_key()) as client:
        fields_response = [{"name": "full_name", "type": "text"}]
        body = {
            "pdf_base64": base64.b64encode(pdf).decode(),
            "fields": fields_response,
            "values": {"full_name": "Ada Lovelace"},
        }
        response = client.post("/v1/fill", json=body)
        assert response.status_code == 200, response.text
        assert pages_used(client) == 0
    filled = PdfReader(io.BytesIO(response.content)).get_fields() or {}
    assert filled["full_name"]["/V"] == "Ada Lovelace"


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"values": {}}, "conversion_id", "exactly one"),
        (
            {"conversion_id": "conv_x", "pdf_base64": "JVBERi0=", "values": {}},
            "conversion_id",
            "exactly one",
        ),
        ({"conversion_id": "conv_x"}, "values", "values"),
        ({"pdf_base64": "JVBERi0=", "values": {}}, "fields", "fields"),
        ({"pdf_base64": "%%%not base64", "fields": [], "values": {}}, "pdf_base64", "base64"),
        ({"conversion_id": "conv_x", "values": []}, "values", "values"),
        ({"conversion_id": "conv_x", "values": {}, "flatten": "yes"}, "flatten", "flatten"),
        ({"conversion_id": "conv_x", "values": {}, "colour": "red"}, "colour", "colour"),
    ],
)
def test_malformed_fill_requests_are_400(
    server: Server, body: dict, param: str, words: str
) -> None:
    with server.client(server.create_key()) as client:
        error = error_of(client.post("/v1/fill", json=body), 400, "invalid_request")
    assert error["param"] == param
    assert words in error["message"]


def test_fill_body_that_is_not_json_is_400(server: Server) -> None:
    with server.client(server.create_key()) as client:
        response = client.post("/v1/fill", content=b"{not json",
                               headers={"content-type": "application/json"})  # fmt: skip
        error_of(response, 400, "invalid_request")


def test_values_of_the_wrong_type_or_unknown_names_are_400(
    server: Server, converted: tuple[str, dict]
) -> None:
    key, result = converted
    cid = result["conversion_id"]
    with server.client(key) as client:
        wrong = client.post("/v1/fill", json={"conversion_id": cid, "values": {"member": "maybe"}})
        error = error_of(wrong, 400, "invalid_request")
        assert error["param"] == "member" and "not a checkbox value" in error["message"]
        wrong = client.post("/v1/fill", json={"conversion_id": cid, "values": {"email": 42}})
        assert error_of(wrong, 400, "invalid_request")["param"] == "email"
        unknown = client.post("/v1/fill", json={"conversion_id": cid, "values": {"emial": "x"}})
        error = error_of(unknown, 400, "invalid_request")
        assert error["param"] == "emial" and "'email'" in error["message"]


def test_fill_bodies_over_25_mb_are_413(server: Server) -> None:
    huge = json.dumps({"pdf_base64": "A" * (25 * 1024 * 1024 + 100), "fields": [], "values": {}})
    with server.client(server.create_key()) as client:
        error_of(
            client.post(
                "/v1/fill", content=huge.encode(), headers={"content-type": "application/json"}
            ),
            413,
            "payload_too_large",
        )


def test_unknown_and_foreign_conversions_are_404(
    server: Server, converted: tuple[str, dict]
) -> None:
    _, result = converted
    other = server.create_key("pro")
    with server.client(other) as client:
        for cid in (result["conversion_id"], "conv_" + "0" * 24, "nonsense"):
            error = error_of(client.get(f"/v1/conversions/{cid}"), 404, "not_found")
            assert error["param"] == "conversion_id"
            response = client.post("/v1/fill", json={"conversion_id": cid, "values": {}})
            error_of(response, 404, "not_found")


def test_get_conversion_gives_a_fresh_document_url(
    server: Server, converted: tuple[str, dict]
) -> None:
    key, result = converted
    with server.client(key) as client:
        again = client.get(f"/v1/conversions/{result['conversion_id']}")
    assert again.status_code == 200
    body = again.json()
    assert body["schema"] == result["schema"] and body["pages"] == result["pages"]
    assert httpx.get(body["document_url"]).status_code == 200


def test_tampered_document_urls_are_403(server: Server, converted: tuple[str, dict]) -> None:
    _, result = converted
    url = urlparse(result["document_url"])
    query = parse_qs(url.query)
    base = f"{server.base_url}{url.path}"
    later = int(query["expires"][0]) + 3600
    for params in (
        {"expires": later, "signature": query["signature"][0]},
        {"expires": query["expires"][0], "signature": "0" * 64},
        {"expires": query["expires"][0]},
        {},
    ):
        error_of(httpx.get(base, params=params), 403, "forbidden")
    other = base.replace(result["conversion_id"], "conv_" + "1" * 24)
    error_of(httpx.get(other, params={k: v[0] for k, v in query.items()}), 403, "forbidden")


# --------------------------------------------------------------------------- idempotency


def test_idempotent_convert_returns_the_first_answer_and_bills_once(
    server: Server, one_page: bytes
) -> None:
    with server.client(server.create_key()) as client:
        headers = {"Idempotency-Key": "order-42"}
        files = {"file": ("form.pdf", one_page, "application/pdf")}
        first = client.post("/v1/convert", files=files, headers=headers)
        second = client.post("/v1/convert", files=files, headers=headers)
        assert first.status_code == second.status_code == 200
        assert first.json() == second.json()
        assert second.headers.get("idempotent-replayed") == "true"
        assert pages_used(client) == 1
        other = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(2))},
                            headers=headers)  # fmt: skip
        assert error_of(other, 400, "invalid_request")["param"] == "Idempotency-Key"
        fresh = client.post("/v1/convert", files=files, headers={"Idempotency-Key": "order-43"})
        assert fresh.json()["conversion_id"] != first.json()["conversion_id"]
        assert pages_used(client) == 2


def test_idempotency_keys_belong_to_their_account(server: Server, one_page: bytes) -> None:
    files = {"file": ("form.pdf", one_page, "application/pdf")}
    headers = {"Idempotency-Key": "shared-name"}
    with server.client(server.create_key()) as a, server.client(server.create_key()) as b:
        first = a.post("/v1/convert", files=files, headers=headers)
        second = b.post("/v1/convert", files=files, headers=headers)
        assert first.json()["conversion_id"] != second.json()["conversion_id"]
        assert pages_used(b) == 1


def test_idempotent_fill(server: Server, converted: tuple[str, dict]) -> None:
    key, result = converted
    body = {"conversion_id": result["conversion_id"], "values": {"city": "Lyon"}}
    with server.client(key) as client:
        first = client.post("/v1/fill", json=body, headers={"Idempotency-Key": "fill-1"})
        second = client.post("/v1/fill", json=body, headers={"Idempotency-Key": "fill-1"})
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert second.headers["content-type"] == "application/pdf"


# --------------------------------------------------------------------------- the envelope


def test_every_response_has_a_request_id_and_errors_are_json(server: Server) -> None:
    key = server.create_key()
    with server.client(key) as client:
        seen = set()
        for response in (
            client.get("/v1/account"),
            client.get("/v1/nowhere"),
            client.delete("/v1/account"),
            httpx.get(server.base_url + "/v1/openapi.json"),
        ):
            assert response.headers["x-request-id"].startswith("req_")
            seen.add(response.headers["x-request-id"])
        assert len(seen) == 4
        error_of(client.get("/v1/nowhere"), 404, "not_found")
        assert client.delete("/v1/account").status_code == 405


def test_authenticated_responses_carry_rate_limit_headers(server: Server) -> None:
    with server.client(server.create_key("developer")) as client:
        for response in (
            client.get("/v1/account"),
            client.get("/v1/conversions/conv_missing"),
            client.post("/v1/fill", json={}),
        ):
            assert response.headers["x-ratelimit-limit"] == "10"
            assert int(response.headers["x-ratelimit-remaining"]) >= 0
            assert int(response.headers["x-ratelimit-reset"]) > 1_700_000_000


def test_logs_are_json_lines_with_request_ids(server: Server) -> None:
    with server.client(server.create_key()) as client:
        request_id = client.get("/v1/account").headers["x-request-id"]
    # every line of the log is one JSON object
    assert all(line.startswith("{") and json.loads(line) for line in server.log_lines())
    mine = server.wait_for_requests(request_id=request_id)  # written after the answer
    assert [(e["status"], e["path"], e["method"]) for e in mine] == [(200, "/v1/account", "GET")]


def test_openapi_document_describes_the_api(server: Server) -> None:
    schema = httpx.get(server.base_url + "/v1/openapi.json").json()
    paths = schema["paths"]
    assert {"/v1/convert", "/v1/fill", "/v1/account", "/v1/conversions/{conversion_id}",
            "/v1/files/{conversion_id}.pdf"} <= set(paths)  # fmt: skip
    assert "multipart/form-data" in paths["/v1/convert"]["post"]["requestBody"]["content"]
    assert {"402", "415", "429", "502"} <= set(paths["/v1/convert"]["post"]["responses"])
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def test_fill_values_in_every_script(server: Server) -> None:
    """Arabic, Hebrew, Devanagari, Thai and CJK values through the service, flattened: each
    reads back from its box, right-to-left letters in order from the right."""
    with server.client(server.create_key()) as client:
        body = {
            "pdf_base64": base64.b64encode(script_gallery.form()).decode(),
            "fields": [{"name": name, "type": "text"} for name in script_gallery.VALUES],
            "values": script_gallery.values(),
            "flatten": True,
        }
        response = client.post("/v1/fill", json=body)
        assert response.status_code == 200, response.text
    script_gallery.check_read_back(response.content)
