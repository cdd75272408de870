"""The API's errors: one exception type, one JSON body, the status of its type.

The types and their statuses are the table of ``fillpdf_provider.api_errors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from fillpdf_provider.api_errors import status_of


class EngineRefusal(Protocol):
    """What a PDF child reports of a file it refused (``isolation.EngineFailure``)."""

    error_type: str
    message: str
    param: str | None


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
        self.status = status_of(error_type)
        self.message = message
        self.param = param
        self.headers = dict(headers or {})

    def body(self) -> dict[str, object]:
        return {"error": {"type": self.error_type, "message": self.message, "param": self.param}}


def engine_error(failure: EngineRefusal, source: str) -> ApiError:
    """The API error for what a PDF child reported about the request field ``source``."""
    return ApiError(failure.error_type, failure.message, param=failure.param or source)


def _encodable(text: str) -> str:
    """``text`` with lone UTF-16 surrogates written as ``\\udXXX`` escapes."""
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
