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
    "expired": 410,
    "payload_too_large": 413,
    "unsupported_file": 415,
    "rate_limit_error": 429,
    "api_error": 500,
    "engine_error": 502,
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
        super().__init__(message)
        self.error_type = error_type
        self.status = STATUS[error_type]
        self.message = message
        self.param = param
        self.headers = dict(headers or {})

    def body(self) -> dict[str, object]:
        return {"error": {"type": self.error_type, "message": self.message, "param": self.param}}
