"""The quota guard keeps within the plan's rate limit while it waits: it polls no faster than
half the plan's requests a minute, waits out a used-up window instead of retrying into 429s,
and logs each wait with its reason, the time of the next look and when the quota resets.

Against the real service: a developer key (10 requests a minute, hard stop at 25 pages)
whose quota is spent, watched by the trigger the sensor defers to."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import re
import time
from typing import Any

import pytest

from fillpdf_provider.account import Account
from fillpdf_provider.client import RateLimit
from fillpdf_provider.triggers.quota import FillPdfQuotaTrigger, next_poll
from kits.flatkit import flat_form
from kits.servicekit import Server, mid_month_offset, start_server


def logged(capsys: pytest.CaptureFixture[str]) -> list[str]:
    """The trigger's log lines (the task log writes them through structlog to stdout)."""
    lines = capsys.readouterr().out.splitlines()
    return [line for line in lines if "[fillpdf_provider.triggers.quota." in line]


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("quota-pacing"))
    running.shift_clock(mid_month_offset())  # the spent pages stay in one month
    yield running
    running.stop()


def spent_developer_key(service: Server, monkeypatch: pytest.MonkeyPatch, own: set[str]) -> str:
    """A developer key with 1 of its 25 pages left, set as the default connection; the ids
    of the requests that spent it go into ``own``."""
    key = service.create_key("developer")
    client, ids = service.own_requests(key)
    with client:
        for pages in (10, 10, 4):
            response = client.post(
                "/v1/convert",
                files={"file": ("f.pdf", flat_form(pages))},
                data={"detect": "fields_fast"},
            )
            assert response.status_code == 200, response.text
    own |= ids
    conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))
    return key


def looks(service: Server, key: str, own: set[str]) -> list[dict[str, Any]]:
    """The request lines of the key's requests that the test did not make itself."""
    account = service.account_of(key)
    return [
        e
        for e in service.log_entries()
        if e.get("message") == "request"
        and e.get("account") == account
        and e["request_id"] not in own
    ]


def watch(trigger: FillPdfQuotaTrigger, service: Server, key: str, own: set[str]) -> list[int]:
    """Run the trigger until its first look is logged, then ``QUIET_S`` more seconds, in which
    it must look no more; the statuses of its looks."""

    async def main() -> None:
        events = trigger.run()
        task = asyncio.ensure_future(events.__anext__())
        deadline = time.monotonic() + LOOK_TIMEOUT_S
        while not looks(service, key, own):  # a request's line is written after its answer
            assert not task.done(), task.result()
            assert time.monotonic() < deadline, "the trigger never looked"
            await asyncio.sleep(0.05)
        await asyncio.sleep(QUIET_S)
        assert not task.done(), task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await events.aclose()

    asyncio.run(main())
    return [e["status"] for e in looks(service, key, own)]


#: How long a test waits for the trigger's first look, and then watches it not look again
#: (its next look is 12 s away, or a minute away in a used-up window).
LOOK_TIMEOUT_S = 60
QUIET_S = 6


def test_a_waiting_guard_stays_inside_the_plans_rate_limit(
    service: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    own: set[str] = set()
    key = spent_developer_key(service, monkeypatch, own)
    # Asked to look every half second: 14 looks in 7 s would be 429s after the 7th.
    trigger = FillPdfQuotaTrigger("fillpdf_default", pages=3, poll_interval=0.5)
    assert watch(trigger, service, key, own) == [200]  # one look; the next is 12 s later
    waits = logged(capsys)
    assert len(waits) == 1, waits
    wait = waits[0]
    assert "3 pages needed, 1 of 25 left" in wait
    assert re.search(r"Looking again at \d\d:\d\d:\d\d UTC \(in 12 s\)", wait), wait
    assert "50% of the developer plan's 10 requests a minute" in wait
    assert "no overage" in wait and re.search(r"resets at \d{4}-\d\d-01 00:00:00 UTC", wait)


def test_a_used_up_window_is_waited_out_not_retried_into(
    service: Server, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    own: set[str] = set()
    key = spent_developer_key(service, monkeypatch, own)
    client, ids = service.own_requests(key)
    with client:  # another task uses up the minute's requests
        while (used_up := client.get("/v1/account")).status_code != 429:
            pass
    own |= ids
    window_resets = int(used_up.headers["X-RateLimit-Reset"])
    # The window is fixed to the server's minute. Put the server's clock back to the start of
    # the window just used up, so its reset is a minute away, however long the set-up took
    # and wherever in the minute the test runs (still the same window, so still used up).
    back = window_resets - 59 - service.now()
    resets_here = window_resets - (service.clock_offset() + back)  # on this machine's clock
    trigger = FillPdfQuotaTrigger("fillpdf_default", pages=3, poll_interval=0.5)
    with service.clock_shifted(service.clock_offset() + back):
        assert watch(trigger, service, key, own) == [429]  # one look, then a wait for the reset
    waits = logged(capsys)
    assert len(waits) == 1 and "over its rate limit" in waits[0], waits
    found = re.search(r"looking again at (\d\d):(\d\d):(\d\d) UTC", waits[0])
    assert found, waits[0]
    hour, minute, second = (int(g) for g in found.groups())
    reset = time.gmtime(resets_here)  # to the second (Retry-After rounds up)
    resets_at = reset.tm_hour * 3600 + reset.tm_min * 60 + reset.tm_sec
    looks_at = hour * 3600 + minute * 60 + second
    assert 0 <= (looks_at - resets_at) % 86400 <= 2, (waits[0], resets_here)


SPENT_DEVELOPER = Account(
    plan="developer", period_start="2026-11-01T00:00:00Z", period_end="2026-12-01T00:00:00Z",
    pages_included=25, pages_used=24, pages_remaining=1, overage_pages=0,
    overage_rate_usd=None, overage_cost_usd=None, max_pages_per_file=10,
    rate_limit_per_minute=10, hard_stop=True,
)  # fmt: skip


def account(**changes: Any) -> Account:
    return dataclasses.replace(SPENT_DEVELOPER, **changes)


NOW = 1_795_000_000.0  # 2026-11-18, well inside the period


def test_the_pace_is_the_slower_of_the_poll_interval_and_the_plans_share() -> None:
    assert next_poll(account(), None, 1, NOW).seconds == 12
    assert next_poll(account(), None, 300, NOW).seconds == 300
    assert next_poll(account(rate_limit_per_minute=60, plan="pro"), None, 1, NOW).seconds == 2
    assert next_poll(account(rate_limit_per_minute=None), None, 0.1, NOW).seconds == 1


def test_a_window_used_up_by_others_waits_for_its_reset() -> None:
    used_up = RateLimit(limit=10, remaining=0, resets_at=NOW + 40)
    wait = next_poll(account(), used_up, 1, NOW)
    assert wait.seconds == 41 and "used this minute's 10 requests" in wait.reason
    assert next_poll(account(), RateLimit(10, 3, NOW + 40), 1, NOW).seconds == 12


def test_the_guard_looks_right_after_the_quota_resets_but_not_faster_than_its_pace() -> None:
    end = 1_796_083_200.0  # 2026-12-01T00:00:00Z
    assert next_poll(account(), None, 3600, end - 100).seconds == 101
    assert next_poll(account(), None, 3600, end - 2).seconds == 12


def test_rate_limit_headers_are_read_against_the_servers_own_clock() -> None:
    headers = {
        "X-RateLimit-Limit": "10",
        "X-RateLimit-Remaining": "0",
        "X-RateLimit-Reset": "1795000060",
        "Date": "Wed, 18 Nov 2026 11:06:40 GMT",  # 1_795_000_000
    }
    rate = RateLimit.from_headers(headers, now=NOW + 500)  # this machine's clock is ahead
    assert rate == RateLimit(10, 0, NOW + 560)
    assert RateLimit.from_headers({"X-RateLimit-Limit": "10"}, NOW) is None


def test_a_connection_the_trigger_cannot_use_fails_the_task_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_TYPO", raising=False)

    async def first_event(trigger: FillPdfQuotaTrigger) -> dict:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("no event")

    missing = asyncio.run(first_event(FillPdfQuotaTrigger("fillpdf_typo", pages=3)))
    assert (
        missing["status"] == "error"
        and "'fillpdf_typo' names no connection" in (missing["message"])
    )
    conn = {"conn_type": "fillpdf", "host": "http://127.0.0.1:9", "password": "k",
            "extra": {"timeout": "abc"}}  # fmt: skip
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_BAD", json.dumps(conn))
    bad = asyncio.run(first_event(FillPdfQuotaTrigger("fillpdf_bad", pages=3)))
    assert bad["status"] == "error" and "'abc'" in bad["message"], bad
