"""What ``/v1/openapi.json`` adds to FastAPI's document: the bearer key, the fill body's schema
and the headers every answer carries.

FastAPI cannot see these: the key is checked by a dependency, the fill body is parsed by
hand (its size is checked before pydantic), and the headers are set by the middleware.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from fillpdf_provider.service.models import FillRequest

#: ``openapi_extra`` of an operation that takes the API key.
BEARER: dict[str, Any] = {"security": [{"bearer": []}]}
_REF_TEMPLATE = "#/components/schemas/{model}"


def install_openapi(app: FastAPI) -> None:
    """Make ``app.openapi()`` (built once, then cached) declare what FastAPI cannot see."""
    original = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema:
            return app.openapi_schema
        schema = original()
        _declare_components(schema.setdefault("components", {}))
        for operations in schema["paths"].values():
            for operation in operations.values():
                _declare_headers(operation)
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _declare_components(components: dict[str, Any]) -> None:
    """The bearer scheme, and FillRequest with its parts; no validation-error schemas."""
    components.setdefault("securitySchemes", {})["bearer"] = {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key from `fillpdf keys create`.",
    }
    schemas = components.setdefault("schemas", {})
    for name, definition in (
        FillRequest.model_json_schema(ref_template=_REF_TEMPLATE).get("$defs", {}).items()
    ):
        schemas.setdefault(name, definition)
    fill_schema = FillRequest.model_json_schema(ref_template=_REF_TEMPLATE)
    fill_schema.pop("$defs", None)
    schemas["FillRequest"] = fill_schema
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)  # validation errors are answered as 400 invalid_request


def _header(description: str, kind: str = "integer", *, required: bool = False) -> dict[str, Any]:
    return {"description": description, "required": required, "schema": {"type": kind}}


def _declare_headers(operation: dict[str, Any]) -> None:
    """Every answer has X-Request-Id; authenticated ones the rate-limit headers."""
    responses = operation.setdefault("responses", {})
    responses.pop("422", None)
    secured = bool(operation.get("security"))
    for status, response in responses.items():
        headers = response.setdefault("headers", {})
        headers["X-Request-Id"] = _header(
            "Identifies the request in the logs.", "string", required=True
        )
        if secured and status != "401":
            _declare_rate_headers(headers, limited=status == "429")


def _declare_rate_headers(headers: dict[str, Any], *, limited: bool) -> None:
    """The rate-limit headers: always on a 429 (with Retry-After), else when counted."""
    headers["X-RateLimit-Limit"] = _header("Requests per minute of the plan.", required=limited)
    headers["X-RateLimit-Remaining"] = _header("Requests left in this minute.", required=limited)
    headers["X-RateLimit-Reset"] = _header("Epoch second the minute ends.", required=limited)
    if limited:
        headers["Retry-After"] = _header("Seconds to wait.", required=True)
