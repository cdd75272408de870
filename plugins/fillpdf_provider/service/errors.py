"""The API's errors: one exception type, one JSON body, the contract's status codes."""

from __future__ import annotations

from collections.abc import Mapping

STATUS: dict[str, int] = {
    "invalid_request": 400,
    "authentication_error": 401,
    "quota_exceeded": 402,
    "forbidden": 403,
    "not_found": 404,
    "method_not_allowed": 405,
    "request_timeout": 408,
    "expired": 410,
    "payload_too_large": 413,
    "unsupported_file": 415,
    "rate_limit_error": 429,
    "api_error": 500,
    "engine_error": 502,
    "service_unavailable": 503,
}


class ApiError(Exception):
    """An answer other than 2xx: ``{"error": {"type", "message", "param"}}``."""

    def __init__(
        self,
        error_type: str,
        message: str,
        *,
        param: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        # A message or param may quote the request, and a lone surrogate from a JSON escape
        # cannot be encoded as UTF-8: escaped here, the answer is always sendable.
        message = _encodable(message)
        param = _encodable(param) if param is not None else None
        super().__init__(message)
        self.error_type = error_type
        self.status = STATUS[error_type]
        self.message = message
        self.param = param
        self.headers = dict(headers or {})

    def body(self) -> dict[str, object]:
        return {"error": {"type": self.error_type, "message": self.message, "param": self.param}}


def _encodable(text: str) -> str:
    """``text`` with lone UTF-16 surrogates written as ``\\udXXX`` escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
