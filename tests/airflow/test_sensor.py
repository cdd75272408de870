"""``FillPdfQuotaSensor`` on its own, against the real service: poke mode through one client
for the whole run (closed at the end), deferrable mode deferring to the quota trigger, the
``deferrable`` default from Airflow's configuration, and a templated connection id.

Connections are counted by a TCP proxy in front of the service (servicekit's, dropping
nothing): a client per poke would open a connection per poke."""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterator
from typing import Any

import pytest
from airflow.sdk.exceptions import AirflowFailException, AirflowSensorTimeout, TaskDeferred

from fillpdf_provider.sensors import quota as sensor_module
from fillpdf_provider.sensors.quota import FillPdfQuotaSensor
from fillpdf_provider.triggers.quota import FillPdfQuotaTrigger
from kits.servicekit import DroppingProxy, Server, start_server

CONN = "fp_sensor"
PRO_PAGES = 60  # a fresh pro account has 60 pages left this month


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("sensor-service"))
    yield running
    running.stop()


@pytest.fixture
def proxy(service: Server) -> Iterator[DroppingProxy]:
    counting = DroppingProxy(service.base_url, drops=0)
    yield counting
    counting.close()


def use(monkeypatch: pytest.MonkeyPatch, host: str, key: str, conn_id: str = CONN) -> None:
    conn = {"conn_type": "fillpdf", "host": host, "password": key}
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(conn))


def account_looks(service: Server, key: str, count: int) -> int:
    """How many times the key read its account, by the service's own request log (each line
    is written after its answer: waited for until ``count`` are there)."""
    looks = service.wait_for_requests(
        count=count, account=service.account_of(key), path="/v1/account"
    )
    return len(looks)


class ThreeLooks(FillPdfQuotaSensor):
    """The sensor, whose run times out after its third look, however slow each look is."""

    def poke(self, context: Any) -> bool:
        fits = super().poke(context)
        self.looked = getattr(self, "looked", 0) + 1
        if self.looked == 3:
            self.timeout = 0  # the poke loop reads it after each look
        return fits


def sensor(**kwargs: Any) -> FillPdfQuotaSensor:
    kwargs.setdefault("fillpdf_conn_id", CONN)
    return FillPdfQuotaSensor(task_id="wait_for_quota", **kwargs)


def test_poke_mode_looks_through_one_client_and_closes_it(
    service: Server, proxy: DroppingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = service.create_key("pro")
    use(monkeypatch, proxy.url, key)
    waiting = ThreeLooks(
        task_id="wait_for_quota", fillpdf_conn_id=CONN, pages=PRO_PAGES + 1,
        deferrable=False, poke_interval=0.2, timeout=600,
    )  # fmt: skip
    client = waiting.hook.get_conn()  # the client the run will use
    with pytest.raises(AirflowSensorTimeout):
        waiting.execute({})
    assert account_looks(service, key, 3) == 3  # it looked three times...
    assert proxy.connections == 1  # ...through one connection, so one client
    with pytest.raises(RuntimeError, match="closed"):
        client.get_account()  # and closed it when the run ended


def test_poke_mode_returns_once_the_pages_fit(
    service: Server, proxy: DroppingProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = service.create_key("pro")
    use(monkeypatch, proxy.url, key)
    assert sensor(pages=PRO_PAGES, deferrable=False, poke_interval=0.2).execute({}) is None
    assert account_looks(service, key, 1) == 1


def test_deferrable_mode_defers_to_the_quota_trigger(
    service: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = service.create_key("pro")
    use(monkeypatch, service.base_url, key)
    waiting = sensor(pages=PRO_PAGES + 1, deferrable=True, poke_interval=30)
    client = waiting.hook.get_conn()
    with pytest.raises(TaskDeferred) as deferred:
        waiting.execute({})
    trigger = deferred.value.trigger
    assert isinstance(trigger, FillPdfQuotaTrigger)
    assert trigger.serialize() == (
        "fillpdf_provider.triggers.quota.FillPdfQuotaTrigger",
        {"fillpdf_conn_id": CONN, "pages": PRO_PAGES + 1, "poll_interval": 30.0},
    )
    assert deferred.value.method_name == "execute_complete"
    assert account_looks(service, key, 1) == 1  # one look before deferring
    with pytest.raises(RuntimeError, match="closed"):
        client.get_account()  # the worker's client is closed before the wait
    # room already: no deferral at all
    assert sensor(pages=2, deferrable=True).execute({}) is None


def test_the_trigger_event_completes_or_fails_the_task() -> None:
    waiting = sensor(pages=1, deferrable=True)
    waiting.execute_complete({}, {"status": "ready", "pages": 1, "remaining": 5})  # no raise
    with pytest.raises(AirflowFailException, match="key revoked"):
        waiting.execute_complete({}, {"status": "error", "message": "key revoked"})


def test_the_embedded_engine_never_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AIRFLOW_CONN_FILLPDF_DEFAULT", raising=False)
    embedded = FillPdfQuotaSensor(task_id="wait", pages=10_000, deferrable=True)
    assert embedded.execute({}) is None


@pytest.mark.parametrize(("setting", "expected"), [(None, False), ("true", True), ("false", False)])
def test_deferrable_follows_the_default_deferrable_setting(
    monkeypatch: pytest.MonkeyPatch, setting: str | None, expected: bool
) -> None:
    """The default is read when the module is imported, as in Airflow's own providers."""
    try:
        with monkeypatch.context() as patched:
            if setting is None:
                patched.delenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", raising=False)
            else:
                patched.setenv("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", setting)
            reloaded = importlib.reload(sensor_module)
            assert reloaded.FillPdfQuotaSensor(task_id="t", pages=1).deferrable is expected
            given = reloaded.FillPdfQuotaSensor(task_id="t", pages=1, deferrable=not expected)
            assert given.deferrable is not expected  # an explicit value wins
    finally:
        importlib.reload(sensor_module)


def test_the_connection_id_is_templated(service: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    key = service.create_key("pro")
    use(monkeypatch, service.base_url, key, conn_id="fp_rendered")
    waiting = FillPdfQuotaSensor(
        task_id="wait", pages=1, deferrable=False, fillpdf_conn_id="{{ params.conn }}"
    )
    assert "fillpdf_conn_id" in waiting.template_fields
    waiting.render_template_fields({"params": {"conn": "fp_rendered"}})
    assert waiting.fillpdf_conn_id == "fp_rendered"
    assert waiting.execute({}) is None
    assert waiting.hook.fillpdf_conn_id == "fp_rendered"
    assert account_looks(service, key, 1) == 1
