"""The client's answers to 408 and 503: typed exceptions like every other error type, and a 503
retried after the server's Retry-After (as a 429 is), never after the key's rate window. And
its exception classes: exactly one for each error type of the API's table."""

from __future__ import annotations

import time

import httpx
import pytest

from fillpdf_provider import client as client_module
from fillpdf_provider.api_errors import ERROR_TYPES
from fillpdf_provider.client import (
    ERRORS,
    FillPdfApiError,
    FillPdfClient,
    MethodNotAllowed,
    RequestTimeout,
    RetryPolicy,
    ServiceUnavailable,
    error_for,
)

QUICK = RetryPolicy(max_retries=2, backoff_s=0.05, max_backoff_s=0.2)


def _error(status: int, error_type: str, headers: dict[str, str] | None = None) -> httpx.Response:
    body = {"error": {"type": error_type, "message": f"{error_type} for a test", "param": None}}
    return httpx.Response(
        status, json=body, headers={"X-Request-Id": "req_test", **(headers or {})}
    )


def _client(answers: list[httpx.Response], calls: list[float], **kwargs) -> FillPdfClient:
    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(time.monotonic())
        return answers.pop(0) if answers else httpx.Response(200, json={"plan": "pro"})

    return FillPdfClient(
        "http://fillpdf.test", "k", transport=httpx.MockTransport(answer), **kwargs
    )


def test_the_new_error_types_map_to_their_exceptions() -> None:
    assert isinstance(error_for("request_timeout", "slow", status=408), RequestTimeout)
    unavailable = error_for("service_unavailable", "busy", headers={"Retry-After": "7"})
    assert isinstance(unavailable, ServiceUnavailable)
    assert unavailable.retry_after == 7


def test_a_503_is_retried_after_its_retry_after() -> None:
    calls: list[float] = []
    # the key's window ends in a minute: a 503 must not wait for that
    busy = _error(503, "service_unavailable", {"Retry-After": "1", "X-RateLimit-Reset": "0"})
    with _client([busy], calls, retry=QUICK) as client:
        assert client.get_account().plan == "pro"
    assert len(calls) == 2
    assert 1.0 <= calls[1] - calls[0] < 30.0  # after Retry-After, long before the minute


def test_a_503_whose_wait_is_too_long_is_raised_typed() -> None:
    calls: list[float] = []
    busy = _error(503, "service_unavailable", {"Retry-After": "3600"})
    with (
        _client([busy], calls, retry=QUICK) as client,
        pytest.raises(ServiceUnavailable) as caught,
    ):
        client.get_account()
    assert len(calls) == 1
    error = caught.value
    assert error.status == 503 and error.retry_after == 3600
    assert error.request_id == "req_test"


def test_a_408_is_retried_then_raised_typed() -> None:
    calls: list[float] = []
    slow = [_error(408, "request_timeout", {"Connection": "close"}) for _ in range(3)]
    with _client(slow, calls, retry=QUICK) as client, pytest.raises(RequestTimeout) as caught:
        client.get_account()
    assert len(calls) == 3
    assert caught.value.status == 408 and caught.value.request_id == "req_test"


def test_one_exception_class_per_error_type_of_the_api() -> None:
    classes = [
        value
        for value in vars(client_module).values()
        if isinstance(value, type)
        and issubclass(value, FillPdfApiError)
        and value is not FillPdfApiError
        and value.__module__ == client_module.__name__
    ]
    assert sorted(cls.error_type for cls in classes) == sorted(ERROR_TYPES)
    assert {cls.error_type: cls for cls in classes} == ERRORS
    for error_type, cls in ERRORS.items():
        assert cls.http_status == ERROR_TYPES[error_type].status, cls
        error = error_for(error_type, "A test.", status=cls.http_status)
        assert type(error) is cls and error.status == cls.http_status


def test_a_405_is_method_not_allowed() -> None:
    calls: list[float] = []
    wrong = _error(405, "method_not_allowed", {"Allow": "GET"})
    with _client([wrong], calls, retry=QUICK) as client, pytest.raises(MethodNotAllowed) as caught:
        client.get_account()
    assert len(calls) == 1  # never retried: the same method is refused again
    assert caught.value.status == 405 and caught.value.headers["allow"] == "GET"


def test_an_unknown_error_type_is_the_base_class() -> None:
    error = error_for("teapot", "Short and stout.", status=418)
    assert type(error) is FillPdfApiError and error.status == 418
