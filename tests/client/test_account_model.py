"""One account model: the service's published schema, its answer, the client, the embedded
engine and the quota arithmetic all agree with ``fillpdf_provider.account``."""

from __future__ import annotations

import dataclasses
import datetime as dt
import types
import typing
from typing import Any, Literal

import pytest

from fillpdf_provider import client
from fillpdf_provider.account import (
    CONTRACT_FIELDS,
    Account,
    added_overage,
    overage_cost_usd,
    overage_pages,
    pages_remaining,
    projected_month_pages,
    projected_overage_usd,
    runs_out_at,
)
from fillpdf_provider.embedded import EmbeddedFillPdf
from fillpdf_provider.service import models
from kits.servicekit import Server, flat_form, start_server

JUNE = ("2025-06-01T00:00:00Z", "2025-07-01T00:00:00Z")
MID_JUNE = dt.datetime(2025, 6, 16, tzinfo=dt.UTC).timestamp()  # half of a 30-day month


def _types(annotation: Any) -> set[type]:
    """The runtime types an annotation allows (a ``Literal``'s values count as their type)."""
    if typing.get_origin(annotation) is Literal:
        return {type(value) for value in typing.get_args(annotation)}
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return set().union(*(_types(arg) for arg in typing.get_args(annotation)))
    return {type(None) if annotation is None else annotation}


def test_the_published_schema_has_the_dataclass_fields_in_its_order() -> None:
    published = models.Account.model_fields
    assert tuple(published) == CONTRACT_FIELDS
    hints = typing.get_type_hints(Account)
    for name, info in published.items():
        # the service may promise less (a plan's name, a period it always knows), never more
        assert _types(info.annotation) <= _types(hints[name]), name
    assert len(dataclasses.fields(Account)) == 13 and "extra" not in CONTRACT_FIELDS


def test_the_client_re_exports_the_one_account() -> None:
    assert client.Account is Account


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("account-model"))
    yield running
    running.stop()


@pytest.mark.parametrize("plan", ["developer", "pro"])
def test_the_services_answer_is_the_model_as_json(service: Server, plan: str) -> None:
    key = service.create_key(plan)
    with service.client(key) as http:
        assert http.post("/v1/convert", files={"file": ("f.pdf", flat_form(2))}).is_success
        answer = http.get("/v1/account").json()
    assert list(answer) == list(CONTRACT_FIELDS)
    models.Account.model_validate(answer)
    account = Account.from_json(answer)
    assert account.to_json() == answer and not account.extra
    with client.FillPdfClient(service.base_url, key) as fillpdf:
        assert fillpdf.get_account() == account


def test_fields_a_newer_service_adds_are_kept_not_refused() -> None:
    data = {**_pro(70).to_json(), "seats": 3}
    account = Account.from_json(data)
    assert account.extra == {"seats": 3} and account.to_json() == data


def test_the_embedded_engine_reports_usage_with_the_same_model(tmp_path) -> None:
    engine = EmbeddedFillPdf(tmp_path)
    engine.convert(flat_form(2))
    account = engine.get_account()
    assert (account.plan, account.pages_used, account.pages_included) == ("embedded", 2, None)
    assert (account.pages_remaining, account.overage_pages, account.overage_cost_usd) == (
        None,
        0,
        None,
    )


def _pro(used: int) -> Account:
    return Account.of_usage(
        plan="pro",
        pages_used=used,
        pages_included=60,
        overage_rate_usd=0.9,
        max_pages_per_file=100,
        rate_limit_per_minute=60,
        hard_stop=False,
        period_start=JUNE[0],
        period_end=JUNE[1],
    )


def _developer(used: int) -> Account:
    return Account.of_usage(
        plan="developer",
        pages_used=used,
        pages_included=25,
        overage_rate_usd=None,
        max_pages_per_file=10,
        rate_limit_per_minute=10,
        hard_stop=True,
        period_start=JUNE[0],
        period_end=JUNE[1],
    )


def test_overage_is_counted_one_way() -> None:
    pro = _pro(72)
    assert (pro.pages_remaining, pro.overage_pages, pro.overage_cost_usd) == (0, 12, 10.8)
    assert overage_pages(72, 60, hard_stop=True) == 0  # a hard stop refuses, never bills
    assert overage_pages(500, None, hard_stop=False) == 0  # no quota, nothing over it
    assert added_overage(58, 5, 60, hard_stop=False) == 3
    assert added_overage(62, 2, 60, hard_stop=False) == 2
    assert overage_cost_usd(3, 0.9) == 2.7 and overage_cost_usd(3, None) is None
    assert pages_remaining(70, 60) == 0 and pages_remaining(7, None) is None
    developer = _developer(25)
    assert (developer.overage_pages, developer.overage_cost_usd) == (0, None)


def test_the_projection_of_the_month() -> None:
    # 30 pages in half the month: 60 by its end
    assert projected_month_pages(_pro(30), MID_JUNE) == 60
    assert projected_overage_usd(_pro(60), MID_JUNE) == round(60 * 0.9, 2)
    # a hard-stop plan is never projected past its quota, and never into overage
    assert projected_month_pages(_developer(15), MID_JUNE) == 25
    assert projected_overage_usd(_developer(15), MID_JUNE) == 0.0
    assert (
        runs_out_at(_developer(15), MID_JUNE) == dt.datetime(2025, 6, 26, tzinfo=dt.UTC).timestamp()
    )
    assert runs_out_at(_developer(25), MID_JUNE) == MID_JUNE  # already out
    assert runs_out_at(_developer(5), MID_JUNE) is None  # lasts the month
    assert runs_out_at(_pro(59), MID_JUNE) is None  # no hard stop: it never runs out
    # the first hour is not a month's rate
    just_begun = dt.datetime(2025, 6, 1, 0, 1, tzinfo=dt.UTC).timestamp()
    assert projected_month_pages(_pro(1), just_begun) == 30 * 24
