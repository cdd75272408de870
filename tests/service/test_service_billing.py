"""Quota, overage, the monthly reset and rate limits, on a live server and under concurrency.

The races are real: many requests at once from an asyncio client against the server's
processes, with counters in the database (SQLite and PostgreSQL).
"""

from __future__ import annotations

import asyncio
import datetime as dt

import httpx
import pytest

from kits.servicekit import Server, flat_form, start_server


def convert(client: httpx.Client, pdf: bytes) -> httpx.Response:
    return client.post("/v1/convert", files={"file": ("f.pdf", pdf, "application/pdf")},
                       data={"detect": "fields_fast"})  # fmt: skip


def account(server: Server, key: str) -> dict:
    with server.client(key) as client:
        return client.get("/v1/account").json()


def test_account_reports_the_plan_and_live_usage(server: Server) -> None:
    key = server.create_key("developer")
    view = account(server, key)
    now = dt.datetime.fromtimestamp(server.now(), dt.UTC)
    assert view == {
        "plan": "developer",
        "period_start": now.strftime("%Y-%m-01T00:00:00Z"),
        "period_end": view["period_end"],
        "pages_included": 25,
        "pages_used": 0,
        "pages_remaining": 25,
        "overage_pages": 0,
        "overage_rate_usd": None,
        "overage_cost_usd": None,
        "max_pages_per_file": 10,
        "rate_limit_per_minute": 10,
        "hard_stop": True,
    }
    end = dt.datetime.strptime(view["period_end"], "%Y-%m-%dT%H:%M:%SZ")
    assert end.day == 1 and (end - now.replace(tzinfo=None)).days < 31


def test_free_plan_stops_at_its_quota_without_partial_billing(server: Server) -> None:
    key = server.create_key("developer")
    with server.client(key) as client:
        assert convert(client, flat_form(10)).status_code == 200
        assert convert(client, flat_form(10)).status_code == 200
        # 5 pages left: a 6-page file is refused whole, a 5-page one fits exactly
        refused = convert(client, flat_form(6))
        assert refused.status_code == 402
        error = refused.json()["error"]
        assert error["type"] == "quota_exceeded" and "5 of this month's 25" in error["message"]
        assert client.get("/v1/account").json()["pages_used"] == 20
        assert convert(client, flat_form(5)).status_code == 200
        assert convert(client, flat_form(1)).status_code == 402
        view = client.get("/v1/account").json()
    assert view["pages_used"] == 25 and view["pages_remaining"] == 0
    assert view["overage_pages"] == 0


async def _race(server: Server, keys: list[str], pdf: bytes) -> list[int]:
    clients = [server.async_client(key) for key in keys]
    try:
        calls = [
            clients[i % len(clients)].post(
                "/v1/convert", files={"file": ("f.pdf", pdf)}, data={"detect": "fields_fast"}
            )
            for i in range(20)
        ]
        return [r.status_code for r in await asyncio.gather(*calls)]
    finally:
        for client in clients:
            await client.aclose()


def test_twenty_racing_conversions_never_bill_past_the_free_quota(server: Server) -> None:
    setup = server.create_key("developer")
    account_id = server.account_of(setup)
    # Two more keys of one account: the quota is the account's, the rate limit each key's.
    first = server.create_key(account=account_id)
    second = server.create_key(account=account_id)
    with server.client(setup) as client:
        for _ in range(2):
            assert convert(client, flat_form(10)).status_code == 200
        assert convert(client, flat_form(2)).status_code == 200  # 3 pages left
    statuses = asyncio.run(_race(server, [first, second], flat_form(1)))
    assert statuses.count(200) == 3, statuses
    assert statuses.count(402) == 17, statuses
    assert account(server, setup)["pages_used"] == 25


def test_paid_plans_bill_overage_and_never_block(server: Server) -> None:
    key = server.create_key("pro")
    with server.client(key) as client:
        assert convert(client, flat_form(58)).status_code == 200
        response = convert(client, flat_form(4))
        assert response.status_code == 200
        view = client.get("/v1/account").json()
    assert view["pages_used"] == 62 and view["pages_remaining"] == 0
    assert view["overage_pages"] == 2
    assert view["overage_rate_usd"] == 0.9 and view["overage_cost_usd"] == 1.8
    assert view["hard_stop"] is False


def test_enterprise_limits_come_from_the_account(server: Server) -> None:
    key = server.create_key(
        "enterprise",
        pages_included=3,
        overage_rate_usd=0.25,
        max_pages_per_file=4,
        rate_limit_per_minute=1000,
        hard_stop=False,
    )
    with server.client(key) as client:
        assert convert(client, flat_form(5)).status_code == 415
        assert convert(client, flat_form(4)).status_code == 200
        view = client.get("/v1/account").json()
        assert client.get("/v1/account").headers["x-ratelimit-limit"] == "1000"
    assert view["plan"] == "enterprise"
    assert (view["pages_used"], view["overage_pages"], view["overage_cost_usd"]) == (4, 1, 0.25)


def test_fill_does_not_touch_the_quota_on_an_exhausted_account(server: Server) -> None:
    key = server.create_key("developer")
    with server.client(key) as client:
        result = convert(client, flat_form(10)).json()
        convert(client, flat_form(10))
        convert(client, flat_form(5))
        assert convert(client, flat_form(1)).status_code == 402
        filled = client.post(
            "/v1/fill", json={"conversion_id": result["conversion_id"], "values": {}}
        )
        assert filled.status_code == 200
        assert client.get("/v1/account").json()["pages_used"] == 25


async def _burst(server: Server, key: str, n: int) -> list[httpx.Response]:
    async with server.async_client(key) as client:
        return list(await asyncio.gather(*(client.get("/v1/account") for _ in range(n))))


def test_fifty_parallel_requests_against_a_limit_of_ten(server: Server) -> None:
    key = server.create_key("developer")  # 10 requests per minute
    with server.fresh_rate_window():
        responses = asyncio.run(_burst(server, key, 50))
        window_ends = int(server.now() // 60 * 60 + 60)
    ok = [r for r in responses if r.status_code == 200]
    limited = [r for r in responses if r.status_code == 429]
    assert len(ok) == 10 and len(limited) == 40
    for response in limited:
        assert response.json()["error"]["type"] == "rate_limit_error"
        assert response.headers["x-ratelimit-limit"] == "10"
        assert response.headers["x-ratelimit-remaining"] == "0"
        assert int(response.headers["x-ratelimit-reset"]) == window_ends
        assert 1 <= int(response.headers["retry-after"]) <= 60
    remaining = sorted(int(r.headers["x-ratelimit-remaining"]) for r in ok)
    assert remaining == list(range(10))
    # Another key of its own is not limited by this one
    with server.client(server.create_key("developer")) as client:
        assert client.get("/v1/account").status_code == 200


def test_the_limit_resets_with_the_next_minute(server: Server) -> None:
    key = server.create_key("developer")
    with server.fresh_rate_window() as shift, server.client(key) as client:
        asyncio.run(_burst(server, key, 12))
        assert client.get("/v1/account").status_code == 429
        with server.clock_shifted(shift + 60):
            assert client.get("/v1/account").status_code == 200


def test_usage_resets_at_the_month_boundary(server: Server) -> None:
    key = server.create_key("developer")
    with server.client(key) as client:
        assert convert(client, flat_form(10)).status_code == 200
        assert convert(client, flat_form(10)).status_code == 200
        assert convert(client, flat_form(10)).status_code == 402
        now = dt.datetime.fromtimestamp(server.now(), dt.UTC)
        first = (now.replace(day=28) + dt.timedelta(days=4)).replace(
            day=1, hour=0, minute=0, second=5, microsecond=0
        )
        with server.clock_shifted(server.clock_shift() + (first - now).total_seconds()):
            view = client.get("/v1/account").json()
            assert view["pages_used"] == 0 and view["pages_remaining"] == 25
            assert view["period_start"] == first.strftime("%Y-%m-01T00:00:00Z")
            assert convert(client, flat_form(10)).status_code == 200
        assert client.get("/v1/account").json()["pages_used"] == 20


@pytest.fixture(scope="module")
def two_workers(database_url: str, tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("workers"), database_url, workers=2)
    running.start_mid_month()
    yield running
    running.stop()


def test_two_server_processes_enforce_one_limit_and_one_quota(two_workers: Server) -> None:
    server = two_workers
    key = server.create_key("developer")
    with server.fresh_rate_window():
        responses = asyncio.run(_burst(server, key, 50))
    assert [r.status_code for r in responses].count(200) == 10
    setup = server.create_key("developer")
    first = server.create_key(account=server.account_of(setup))
    second = server.create_key(account=server.account_of(setup))
    with server.client(setup) as client:
        for _ in range(2):
            assert convert(client, flat_form(10)).status_code == 200
        assert convert(client, flat_form(2)).status_code == 200
    statuses = asyncio.run(_race(server, [first, second], flat_form(1)))
    assert statuses.count(200) == 3 and statuses.count(402) == 17, statuses
