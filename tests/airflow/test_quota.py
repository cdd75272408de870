"""The quota guard: the decision on its own, then whole runs against the real service, where
a free account defers until the month resets (and never receives a 402), a paid account
stops at its overage caps, and allowed overage bills exactly what was expected."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fillpdf_provider.account import Account
from fillpdf_provider.quota import decide, projected_overage_usd
from kits.flatkit import flat_form
from kits.servicekit import Server, mid_month_offset, start_server

DEVELOPER = Account(
    plan="developer",
    period_start="2026-11-01T00:00:00Z",
    period_end="2026-12-01T00:00:00Z",
    pages_included=25,
    pages_used=22,
    pages_remaining=3,
    overage_pages=0,
    overage_rate_usd=None,
    overage_cost_usd=None,
    max_pages_per_file=10,
    rate_limit_per_minute=10,
    hard_stop=True,
)


def account(**changes: Any) -> Account:
    return dataclasses.replace(DEVELOPER, **changes)


PRO = dict(
    plan="pro",
    pages_included=60,
    pages_used=58,
    pages_remaining=2,
    overage_rate_usd=0.9,
    max_pages_per_file=100,
    hard_stop=False,
)


@pytest.mark.parametrize("policy", ["defer", "skip", "fail"])
def test_free_plan_acts_by_policy_when_pages_do_not_fit(policy: str) -> None:
    assert decide(account(), [2, 1], policy).action == "go"
    decision = decide(account(), [2, 2], policy)
    assert decision.action == policy and "4 pages needed, 3 of 25 left" in decision.reason


def test_free_plan_has_no_overage_to_allow() -> None:
    decision = decide(account(), [5], "allow_overage", max_overage_pages=100)
    assert decision.action == "fail" and "no overage" in decision.reason


def test_a_file_over_the_plan_limit_fails_whatever_the_policy() -> None:
    assert decide(account(pages_used=0, pages_remaining=25), [11], "defer").action == "fail"


def test_paid_plan_overage_caps() -> None:
    pro = account(**PRO)
    assert decide(pro, [5], "defer").action == "defer"
    allowed = decide(pro, [5], "allow_overage", max_overage_pages=3)
    assert (allowed.action, allowed.overage_pages, allowed.overage_usd) == ("go", 3, 2.7)
    assert decide(pro, [6], "allow_overage", max_overage_pages=3).action == "fail"
    assert decide(pro, [5], "allow_overage", max_overage_usd=2.0).action == "fail"
    # overage already incurred counts toward the cap
    over = account(**{**PRO, "pages_used": 62, "pages_remaining": 0})
    assert decide(over, [2], "allow_overage", max_overage_pages=3).action == "fail"
    assert decide(over, [1], "allow_overage", max_overage_pages=3).action == "go"


def test_unlimited_accounts_always_go() -> None:
    unlimited = account(
        plan="embedded",
        pages_included=None,
        pages_remaining=None,
        max_pages_per_file=None,
        hard_stop=False,
    )
    assert decide(unlimited, [500], "fail").action == "go"


def test_projected_overage() -> None:
    pro = account(**{**PRO, "pages_used": 60})
    halfway = dt.datetime(2026, 11, 16, tzinfo=dt.UTC).timestamp()
    assert projected_overage_usd(pro, halfway) == round((120 - 60) * 0.9, 2)
    assert projected_overage_usd(account(pages_used=20), halfway) == 0.0


# --------------------------------------------------------------------------- whole runs


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("quota-service"))
    running.shift_clock(mid_month_offset())  # pages spent stay in one month
    yield running
    running.stop()


def use(monkeypatch: pytest.MonkeyPatch, service: Server, key: str) -> None:
    conn = {"conn_type": "fillpdf", "host": service.base_url, "password": key}
    monkeypatch.setenv("AIRFLOW_CONN_FILLPDF_DEFAULT", json.dumps(conn))


def spend(service: Server, key: str, *pages: int) -> None:
    with service.client(key) as client:
        for n in pages:
            response = client.post(
                "/v1/convert",
                files={"file": ("f.pdf", flat_form(n))},
                data={"detect": "fields_fast"},
            )
            assert response.status_code == 200, response.text


def inbox(tmp_path: Path, *pages: int) -> str:
    folder = tmp_path / "inbox"
    folder.mkdir()
    for i, n in enumerate(pages):
        (folder / f"form-{i}.pdf").write_bytes(flat_form(n))
    return str(folder / "*.pdf")


def statuses(service: Server, key: str) -> list[int]:
    """The statuses of every request the key made, by the service's log. Each line is
    written after its answer: a last request of the test's own is waited for first."""
    with service.client(key) as client:
        last = client.get("/v1/account").headers["x-request-id"]
    service.wait_for_requests(request_id=last)
    account = service.account_of(key)
    entries = service.log_entries()
    return [
        e["status"]
        for e in entries
        if e.get("message") == "request" and e["account"] == account and e["request_id"] != last
    ]


def account_reads(service: Server, key: str) -> int:
    """How many times the key has read its account so far, by the service's log."""
    account = service.account_of(key)
    return sum(
        1
        for e in service.log_entries()
        if e.get("message") == "request" and e["account"] == account and e["path"] == "/v1/account"
    )


def next_month_offset(service: Server) -> float:
    """The clock offset that puts the server 5 s into the month after its own."""
    now = dt.datetime.fromtimestamp(service.now(), dt.UTC)
    first = (now.replace(day=28) + dt.timedelta(days=4)).replace(
        day=1, hour=0, minute=0, second=5, microsecond=0
    )
    return service.clock_offset() + (first - now).total_seconds()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {timeout:g} s"
        time.sleep(0.05)


def test_free_account_defers_until_the_reset_and_never_gets_402(
    dagbag, service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = service.create_key("developer")
    spend(service, key, 10, 10, 2)  # 3 pages left
    use(monkeypatch, service, key)
    out = tmp_path / "out"
    conf = {
        "inbox": inbox(tmp_path, 2, 3),
        "output": str(out),
        "poll_interval": 1,
        "detect": "fields_fast",
    }
    shifted = threading.Event()
    month_ahead = next_month_offset(service)
    same_month = service.clock_offset()

    def reset_later() -> None:
        # The operator reads the account, defers, and the trigger reads it again: the run
        # is waiting in the triggerer once the key has read its account twice.
        wait_until(lambda: account_reads(service, key) >= 2, "the deferral")
        service.shift_clock(month_ahead)
        shifted.set()

    threading.Thread(target=reset_later, daemon=True).start()
    try:
        run = dagbag.get_dag("fillpdf_convert_inbox").test(run_conf=conf)
        assert run.state == "success"
        assert shifted.is_set(), "the run finished before the reset: it did not wait"
        assert sorted(p.name for p in out.glob("*.fillable.pdf")) == [
            "form-0.fillable.pdf",
            "form-1.fillable.pdf",
        ]
        with service.client(key) as client:
            assert client.get("/v1/account").json()["pages_used"] == 5  # the new month's
        seen = statuses(service, key)
        assert 402 not in seen and seen.count(200) >= 5
    finally:
        service.shift_clock(same_month)


def test_paid_plan_stops_at_the_overage_cap_before_uploading(
    dagbag, service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = service.create_key("pro")
    spend(service, key, 50, 8)  # 58 of 60 used
    use(monkeypatch, service, key)
    conf = {
        "inbox": inbox(tmp_path, 3, 3),
        "output": str(tmp_path / "out"),
        "on_quota": "allow_overage",
        "max_overage_pages": 3,
        "detect": "fields_fast",
    }
    run = dagbag.get_dag("fillpdf_convert_inbox").test(run_conf=conf)
    assert run.state == "failed"
    assert not list((tmp_path / "out").glob("*.pdf")) if (tmp_path / "out").exists() else True
    with service.client(key) as client:
        view = client.get("/v1/account").json()
    assert view["pages_used"] == 58 and view["overage_pages"] == 0


def test_allowed_overage_bills_exactly_what_was_expected(
    dagbag, service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    key = service.create_key("pro")
    spend(service, key, 50, 8)
    use(monkeypatch, service, key)
    conf = {
        "inbox": inbox(tmp_path, 2, 3),
        "output": str(tmp_path / "out"),
        "on_quota": "allow_overage",
        "max_overage_pages": 3,
        "max_overage_usd": 5,
        "detect": "fields_fast",
    }
    run = dagbag.get_dag("fillpdf_convert_inbox").test(run_conf=conf)
    assert run.state == "success"
    with service.client(key) as client:
        view = client.get("/v1/account").json()
    assert (view["pages_used"], view["overage_pages"], view["overage_cost_usd"]) == (63, 3, 2.7)


@pytest.mark.parametrize(("policy", "state"), [("skip", "skipped"), ("fail", "failed")])
def test_skip_and_fail_policies(
    dagbag,
    service: Server,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    policy: str,
    state: str,
) -> None:
    key = service.create_key("developer")
    spend(service, key, 10, 10, 4)
    use(monkeypatch, service, key)
    conf = {"inbox": inbox(tmp_path, 2), "output": str(tmp_path / "out"), "on_quota": policy}
    run = dagbag.get_dag("fillpdf_convert_inbox").test(run_conf=conf)
    ti = run.get_task_instance("convert")
    assert ti is not None and ti.state == state
    assert 402 not in statuses(service, key)


def test_the_sensor_waits_in_the_triggerer(service: Server, monkeypatch) -> None:
    import asyncio

    from fillpdf_provider.triggers.quota import FillPdfQuotaTrigger

    key = service.create_key("developer")
    spend(service, key, 10, 10, 4)
    use(monkeypatch, service, key)
    trigger = FillPdfQuotaTrigger("fillpdf_default", pages=3, poll_interval=0.5)
    assert trigger.serialize()[1] == {
        "fillpdf_conn_id": "fillpdf_default",
        "pages": 3,
        "poll_interval": 0.5,
    }

    async def first_event() -> dict:
        async for event in trigger.run():
            return event.payload
        raise AssertionError("no event")

    async def main() -> dict:
        task = asyncio.create_task(first_event())
        deadline = time.monotonic() + 120
        while not account_reads(service, key):  # its first look, logged after the answer
            assert not task.done(), task.result()
            assert time.monotonic() < deadline, "the trigger never looked"
            await asyncio.sleep(0.05)
        assert not task.done()  # 1 page left, 3 needed: still waiting
        service.shift_clock(next_month_offset(service))
        return await asyncio.wait_for(task, 60)

    same_month = service.clock_offset()
    try:
        payload = asyncio.run(main())
    finally:
        service.shift_clock(same_month)
    assert payload["status"] == "ready" and payload["remaining"] == 25


def test_the_quota_page_data_lists_billed_runs_and_reports_gauges(
    dagbag, service: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow.sdk.observability.stats import Stats

    from fillpdf_provider.ui.quota_data import quota_overview

    gauges: dict[str, float] = {}
    monkeypatch.setattr(Stats, "gauge", lambda name, value, *a, **k: gauges.update({name: value}))
    key = service.create_key("pro")
    use(monkeypatch, service, key)
    conf = {
        "inbox": inbox(tmp_path, 2, 2),
        "output": str(tmp_path / "out"),
        "detect": "fields_fast",
    }
    run = dagbag.get_dag("fillpdf_convert_inbox").test(run_conf=conf)
    assert run.state == "success"
    assert gauges["fillpdf.pages_used"] == 0 and gauges["fillpdf.pages_remaining"] == 60
    assert gauges["fillpdf.pages_included"] == 60
    overview = quota_overview()
    row = next(r for r in overview["connections"] if r["conn_id"] == "fillpdf_default")
    assert (row["plan"], row["pages_used"], row["pages_remaining"]) == ("pro", 4, 56)
    billed = [r for r in overview["recent_runs"] if r["run_id"] == run.run_id]
    assert billed and billed[0]["pages"] == 4 and billed[0]["conn_id"] == "fillpdf_default"
