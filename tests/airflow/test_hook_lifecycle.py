"""``FillPdfHook`` closes what it opens: it is a context manager, its client lives until
``close()`` (one connection for many calls), and the operators close it when they are done.

A client nobody closed shows when it is collected: Python warns of each socket left open
(``ResourceWarning: unclosed <socket ...>``). The tests count those warnings for sockets to
the service, so nothing of ours is mocked."""

from __future__ import annotations

import gc
import json
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fillpdf_provider.hooks.fillpdf import FillPdfHook
from fillpdf_provider.operators.convert import ConvertOperator
from fillpdf_provider.operators.fill import FillOperator
from kits.flatkit import flat_form
from kits.servicekit import DroppingProxy, Server, start_server

CONN = "fp_lifecycle"


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(tmp_path_factory.mktemp("lifecycle-service"))
    yield running
    running.stop()


@pytest.fixture
def proxy(service: Server) -> Iterator[DroppingProxy]:
    counting = DroppingProxy(service.base_url, drops=0)
    yield counting
    counting.close()


@pytest.fixture
def api(service: Server, proxy: DroppingProxy, monkeypatch: pytest.MonkeyPatch) -> str:
    """A pro key behind the counting proxy, as connection ``CONN``."""
    key = service.create_key("pro")
    conn = {"conn_type": "fillpdf", "host": proxy.url, "password": key}
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN.upper()}", json.dumps(conn))
    return key


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


def sockets_left_open(run: Callable[[], object], *urls: str) -> int:
    """How many sockets to ``urls`` ``run`` left for the garbage collector to close."""
    ports = {_port(url) for url in urls}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        run()
        gc.collect()
    left = 0
    for warning in caught:
        found = re.search(r"raddr=\('127\.0\.0\.1', (\d+)\)", str(warning.message))
        if issubclass(warning.category, ResourceWarning) and found:
            left += int(found.group(1)) in ports
    return left


def test_a_hook_is_a_context_manager_that_closes_its_client(api: str, proxy: DroppingProxy) -> None:
    with FillPdfHook(CONN) as hook:
        client = hook.get_conn()
        assert hook.get_account().plan == "pro"
        assert hook.get_account().pages_used == 0
        assert proxy.connections == 1  # one client, one connection, many calls
    with pytest.raises(RuntimeError, match="closed"):
        client.get_account()
    # a closed hook opens a new client when called again
    assert hook.get_account().plan == "pro" and hook.get_conn() is not client
    hook.close()
    hook.close()  # closing twice is harmless


def test_an_unclosed_hook_is_what_the_warning_catches(api: str, proxy: DroppingProxy) -> None:
    """The check itself: a hook dropped without ``close()`` leaves its socket open."""

    def forget() -> None:
        FillPdfHook(CONN).get_account()

    def close() -> None:
        with FillPdfHook(CONN) as hook:
            hook.get_account()

    assert sockets_left_open(forget, proxy.url) == 1
    assert sockets_left_open(close, proxy.url) == 0


def test_the_embedded_hook_closes_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conn = {"conn_type": "fillpdf", "extra": {"conversions_uri": str(tmp_path)}}
    monkeypatch.setenv("AIRFLOW_CONN_FP_LOCAL", json.dumps(conn))
    with FillPdfHook("fp_local") as hook:
        result = hook.convert(flat_form(1), detect="fields_fast")
    # nothing was held open; the conversion is still in the store
    assert hook.get_conversion(str(result.conversion_id)).pdf == result.pdf


def test_the_operators_close_their_hook(
    api: str, service: Server, proxy: DroppingProxy, tmp_path: Path
) -> None:
    source = tmp_path / "flat.pdf"
    source.write_bytes(flat_form(1))
    convert = ConvertOperator(
        task_id="convert",
        pdfs=str(source),
        output_dir=str(tmp_path / "out"),
        detect="fields_fast",
        fillpdf_conn_id=CONN,
    )
    converted: list[dict[str, object]] = []
    assert sockets_left_open(lambda: converted.extend(convert.execute({})),
                             proxy.url, service.base_url) == 0  # fmt: skip
    fill = FillOperator(
        task_id="fill",
        template=str(converted[0]["conversion_id"]),
        values={"full_name": "Ada"},
        output_path=str(tmp_path / "filled.pdf"),
        fill_on="service",
        fillpdf_conn_id=CONN,
    )
    assert sockets_left_open(lambda: fill.execute({}), proxy.url, service.base_url) == 0
    assert (tmp_path / "filled.pdf").read_bytes().startswith(b"%PDF")
