"""Floods against the live service: other accounts keep being served, nothing answers 5xx.

One long conversion holds an Idempotency-Key while 60 repeats of it wait; 30 other
conversions arrive at once; meanwhile another account reads ``GET /v1/account`` in a loop.
Waiting repeats hold no thread and PDF work queues in front of a few children, so the
account reads stay fast, and every conversion is either done or told when to come back.
"""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx
import pytest
from sqlalchemy import select

from fillpdf_provider.service.db import idempotency
from kits.servicekit import Server, flat_form, start_server

# It measures latency: it runs alone, after the parallel run (see the Makefile).
pytestmark = [pytest.mark.system, pytest.mark.solo]

WAITERS = 60
CONVERTS = 30
ACCOUNT_P99_S = 1.0


@pytest.fixture(scope="module")
def flood_server(tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("flood"))
    yield running
    running.stop()


async def _claimed(server: Server, key: str) -> None:
    """Until a request has claimed the Idempotency-Key ``key``."""
    query = select(idempotency.c.key).where(idempotency.c.key == key)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with server.db.connect() as conn:
            if conn.execute(query).first() is not None:
                return
        await asyncio.sleep(0.05)
    raise AssertionError(f"no request claimed {key!r} within 60 s")


def _client(server: Server, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=server.base_url,
        headers={"Authorization": f"Bearer {key}"},
        timeout=180,
        limits=httpx.Limits(max_connections=200, max_keepalive_connections=200),
    )


async def _flood(server: Server) -> dict[str, list]:
    holder = server.create_key("enterprise")
    crowd = server.create_key("enterprise")
    reader = server.create_key("enterprise")
    long_form = flat_form(250)
    short_form = flat_form(2)
    headers = {"Idempotency-Key": "flood-1"}
    stop = asyncio.Event()
    latencies: list[float] = []
    async with (
        _client(server, holder) as held,
        _client(server, crowd) as many,
        _client(server, reader) as reads,
    ):

        async def read_account() -> None:
            while not stop.is_set():
                started = time.perf_counter()
                response = await reads.get("/v1/account")
                latencies.append(time.perf_counter() - started)
                assert response.status_code == 200, response.text
                await asyncio.sleep(0.02)

        async def convert_held() -> httpx.Response:
            return await held.post(
                "/v1/convert", files={"file": ("long.pdf", long_form)}, headers=headers
            )

        reading = asyncio.create_task(read_account())
        first = asyncio.create_task(convert_held())
        await _claimed(server, "flood-1")  # the first request holds the key
        repeats = [asyncio.create_task(convert_held()) for _ in range(WAITERS)]
        others = [
            asyncio.create_task(many.post("/v1/convert", files={"file": ("short.pdf", short_form)}))
            for _ in range(CONVERTS)
        ]
        done = await asyncio.gather(first, *repeats, *others)
        stop.set()
        await reading
    return {"first": [done[0]], "repeats": done[1 : 1 + WAITERS], "others": done[1 + WAITERS :],
            "latencies": latencies}  # fmt: skip


def test_waiting_repeats_and_a_burst_of_conversions_starve_no_one(flood_server: Server) -> None:
    result = asyncio.run(_flood(flood_server))
    first = result["first"][0]
    assert first.status_code == 200, first.text
    for response in result["repeats"]:
        assert response.status_code == 200, response.text
        assert response.headers["Idempotent-Replayed"] == "true"
        assert response.json()["conversion_id"] == first.json()["conversion_id"]
    statuses = [r.status_code for r in result["others"]]
    assert set(statuses) <= {200, 429, 503}, statuses
    for response in result["others"]:
        if response.status_code != 200:
            assert int(response.headers["Retry-After"]) >= 1
    assert statuses.count(200) >= 1
    latencies = sorted(result["latencies"])
    assert len(latencies) >= 20
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    assert p99 < ACCOUNT_P99_S, (
        f"GET /v1/account p99 {p99:.2f} s (median {statistics.median(latencies):.3f} s, "
        f"{len(latencies)} reads)"
    )
    print(f"GET /v1/account under the flood: p99 {p99:.3f} s over {len(latencies)} reads")
    assert flood_server.alive()


def test_a_full_queue_answers_503_with_retry_after(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server = start_server(
        tmp_path_factory.mktemp("small-queue"),
        env={"FILLPDF_MAX_CHILDREN": "1", "FILLPDF_MAX_QUEUE": "2"},
    )
    try:
        key = server.create_key("enterprise")
        form = flat_form(60)

        async def burst() -> list[httpx.Response]:
            async with _client(server, key) as client:
                calls = [
                    client.post("/v1/convert", files={"file": ("f.pdf", form)}) for _ in range(8)
                ]
                return await asyncio.gather(*calls)

        responses = asyncio.run(burst())
        statuses = sorted(r.status_code for r in responses)
        assert statuses.count(200) >= 3 and 503 in statuses, statuses
        busy = next(r for r in responses if r.status_code == 503)
        assert busy.json()["error"]["type"] == "service_unavailable"
        assert int(busy.headers["Retry-After"]) >= 1
        assert "retry after" in busy.json()["error"]["message"]
        with server.client(key) as client:  # nothing was billed for the refused ones
            assert client.get("/v1/account").json()["pages_used"] == 60 * statuses.count(200)
    finally:
        server.stop()


def test_the_deadline_starts_when_the_work_starts_not_while_it_queues(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Five conversions through one child take longer together than one's deadline: all pass."""
    server = start_server(
        tmp_path_factory.mktemp("one-child"),
        env={"FILLPDF_MAX_CHILDREN": "1", "FILLPDF_ENGINE_TIMEOUT": "4"},
    )
    try:
        key = server.create_key("enterprise")
        form = flat_form(60)

        async def burst() -> tuple[list[httpx.Response], float]:
            async with _client(server, key) as client:
                started = time.perf_counter()
                calls = [
                    client.post("/v1/convert", files={"file": ("f.pdf", form)}) for _ in range(5)
                ]
                responses = await asyncio.gather(*calls)
                return responses, time.perf_counter() - started

        responses, took = asyncio.run(burst())
        assert [r.status_code for r in responses] == [200] * 5, [r.text for r in responses]
        print(f"5 conversions through one child in {took:.1f} s, each with a 4 s deadline")
    finally:
        server.stop()
