"""docs/api.md against the service's own OpenAPI document and the API's error table, so they
can't drift.

The document is built by ``create_app(...).openapi()`` (what ``/v1/openapi.json`` serves),
without starting a server. Every operation must have a ``### `METHOD /path``` section that
lists each error status it declares (``| 404 | `not_found` |``, the type taken from
``api_errors.ERROR_TYPES``) and a curl example; every type of that table must be in the docs'
table of error types with its status and its meaning; and every ``METHOD /v1/...`` the docs
mention must be a real operation.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fillpdf_provider.api_errors import ERROR_TYPES
from fillpdf_provider.service.app import create_app
from fillpdf_provider.service.settings import MB, Settings

DOCS = Path(__file__).resolve().parents[2] / "docs" / "api.md"
METHODS = ("get", "put", "post", "delete", "patch", "head", "options")
TYPE_OF = {entry.status: error_type for error_type, entry in ERROR_TYPES.items()}
HEADING = re.compile(r"^### `([A-Z]+) (/\S+)`$", re.MULTILINE)
MENTION = re.compile(r"\b(GET|PUT|POST|DELETE|PATCH|HEAD|OPTIONS)\s+(/v1/[^\s`\"'),;]*)")
ERROR_ROW = re.compile(r"^\s*\| (\d{3}) \| `(\w+)` \| (.*) \|$", re.MULTILINE)
CURL_URL = re.compile(r'"\$FILLPDF_URL(/v1/[^"?]*)')


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return create_app(Settings(data_dir=tmp_path_factory.mktemp("api-docs")))


@pytest.fixture(scope="module")
def openapi(app: Any) -> dict[str, Any]:
    return app.openapi()


@pytest.fixture(scope="module")
def docs() -> str:
    return DOCS.read_text(encoding="utf-8")


def _operations(openapi: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (method.upper(), path): operation
        for path, item in openapi["paths"].items()
        for method, operation in item.items()
        if method in METHODS
    }


def _sections(docs: str) -> dict[tuple[str, str], str]:
    """Each endpoint heading and its text, up to the next heading of level 2 or 3."""
    found = {}
    for match in HEADING.finditer(docs):
        end = re.compile(r"^#{2,3} ", re.MULTILINE).search(docs, match.end())
        found[(match[1], match[2])] = docs[match.end() : end.start() if end else len(docs)]
    return found


def _template(path: str) -> re.Pattern[str]:
    """A path template as a pattern: ``{conversion_id}`` matches any one segment part."""
    parts = re.split(r"\{[^}]+\}", path)
    return re.compile("[^/]+".join(re.escape(part) for part in parts))


def _same_path(mentioned: str, template: str) -> bool:
    placeholder = re.compile(r"\{[^}]+\}")
    return placeholder.sub("{}", mentioned) == placeholder.sub("{}", template)


def _error_row(status: int | str) -> str:
    return f"| {status} | `{TYPE_OF[int(status)]}` |"


def test_every_operation_has_a_section_and_no_section_is_stale(
    openapi: dict[str, Any], docs: str
) -> None:
    operations = set(_operations(openapi))
    documented = set(_sections(docs))
    assert not operations - documented, f"not in docs/api.md: {sorted(operations - documented)}"
    assert not documented - operations, f"not in the OpenAPI: {sorted(documented - operations)}"


def test_every_endpoint_mentioned_exists(openapi: dict[str, Any], docs: str) -> None:
    operations = _operations(openapi)
    stale = [
        f"{method} {path}"
        for method, path in MENTION.findall(docs)
        if not any(m == method and _same_path(path, p) for m, p in operations)
    ]
    assert not stale, f"docs/api.md names endpoints the service lacks: {stale}"
    curls = CURL_URL.findall(docs)
    assert curls, "docs/api.md has no curl example on $FILLPDF_URL"
    unknown = [
        path for path in curls if not any(_template(p).fullmatch(path) for _, p in operations)
    ]
    assert not unknown, f"curl examples on paths the service lacks: {unknown}"


def test_each_section_lists_its_errors_and_has_an_example(
    openapi: dict[str, Any], docs: str
) -> None:
    sections = _sections(docs)
    problems = []
    for (method, path), operation in _operations(openapi).items():
        text = sections.get((method, path), "")
        declared = {int(s) for s in operation["responses"] if not s.startswith("2")}
        for status in sorted(declared):
            if _error_row(status) not in text:
                problems.append(f"{method} {path}: no row {_error_row(status)!r}")
        listed = {int(s) for s in re.findall(r"^\s*\| (\d{3}) \| `", text, re.MULTILINE)}
        for status in sorted(listed - declared):
            problems.append(f"{method} {path}: lists {status}, which the OpenAPI does not")
        curls = [p for p in CURL_URL.findall(text) if _template(path).fullmatch(p)]
        if not curls:
            problems.append(f'{method} {path}: no curl example on "$FILLPDF_URL{path}"')
        if operation.get("security") and "$FILLPDF_KEY" not in text:
            problems.append(f"{method} {path}: its example sends no $FILLPDF_KEY")
    assert not problems, "\n".join(problems)


def test_every_error_type_is_documented_with_its_status(openapi: dict[str, Any], docs: str) -> None:
    assert len(TYPE_OF) == len(ERROR_TYPES), "two error types share a status"
    missing = [
        _error_row(entry.status)
        for entry in ERROR_TYPES.values()
        if _error_row(entry.status) not in docs
    ]
    assert not missing, f"error types missing from docs/api.md: {missing}"
    answered = {int(s) for op in _operations(openapi).values() for s in op["responses"]}
    untyped = sorted(s for s in answered if s >= 400 and s not in TYPE_OF)
    assert not untyped, f"the OpenAPI declares statuses with no error type: {untyped}"


def test_the_docs_table_of_error_types_is_the_apis(docs: str) -> None:
    """The table of every error type (under "Every request") is the API's, row for row: each
    type with its status and its meaning, and no other row."""
    start = docs.index("\n## Every request\n")
    section = docs[start : docs.index("\n## ", start + 1)]
    rows = ERROR_ROW.findall(section)
    documented = {error_type: (int(status), meaning) for status, error_type, meaning in rows}
    assert len(documented) == len(rows), "an error type has two rows"
    expected = {name: (entry.status, entry.meaning) for name, entry in ERROR_TYPES.items()}
    assert documented == expected


def test_limits_and_headers_are_documented(openapi: dict[str, Any], docs: str) -> None:
    settings = Settings(data_dir=Path("unused"))
    sections = _sections(docs)
    upload = f"{settings.max_upload_bytes // MB} MB"
    fill_body = f"{settings.max_fill_body_bytes // MB} MB"
    convert, fill = (
        sections.get(("POST", "/v1/convert"), ""),
        sections.get(("POST", "/v1/fill"), ""),
    )
    assert upload in convert, f"POST /v1/convert: no upload limit {upload}"
    assert fill_body in fill, f"POST /v1/fill: no body limit {fill_body}"
    headers = {
        name
        for operation in _operations(openapi).values()
        for response in operation["responses"].values()
        for name in response.get("headers", {})
    }
    assert headers, "the OpenAPI declares no response headers"
    missing = sorted(name for name in headers if f"`{name}`" not in docs)
    assert not missing, f"headers missing from docs/api.md: {missing}"
    for name in ("Idempotency-Key", "Idempotent-Replayed", "WWW-Authenticate"):
        assert f"`{name}`" in docs, name


@pytest.mark.filterwarnings("ignore:Using `httpx`")  # starlette's TestClient on httpx 0.x
def test_a_wrong_method_answers_the_tables_type(app: Any) -> None:
    """The 405 row is what the service answers (no lifespan, no PDF workers, no key)."""
    from fastapi.testclient import TestClient

    response = TestClient(app).delete("/v1/account")
    assert response.status_code == 405
    assert response.json()["error"]["type"] == TYPE_OF[405]
    assert response.headers["allow"] == "GET"
