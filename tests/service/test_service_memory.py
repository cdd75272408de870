"""What a server process keeps in memory to answer without the database: checked callers
and rate leases. Neither may let a revoked key in for more than a second, nor a key past
its limit, whichever of two server processes answers."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from fillpdf_provider.service import keys
from fillpdf_provider.service.callers import TTL_S
from fillpdf_provider.service.ratelimit import LEASE_SHARE
from kits.servicekit import Server, start_server

#: Concurrent connections kept busy, so both processes hold the caller and leases.
CONNECTIONS = 8
DEADLINE_S = 60


@pytest.fixture(scope="module")
def two_workers(database_url: str, tmp_path_factory: pytest.TempPathFactory):
    running = start_server(tmp_path_factory.mktemp("memory"), database_url, workers=2)
    yield running
    running.stop()


async def _hammer(
    client: httpx.AsyncClient, seen: list[tuple[float, float, int]], stop: asyncio.Event
) -> None:
    while not stop.is_set():
        started = time.monotonic()
        response = await client.get("/v1/account")
        seen.append((started, time.monotonic(), response.status_code))


async def _revoke_under_load(
    server: Server, key: str
) -> tuple[list[tuple[float, float, int]], float, float]:
    """Requests (start, end, status) from before to well after the key is revoked, and when the
    revocation began and was committed."""
    seen: list[tuple[float, float, int]] = []
    stop = asyncio.Event()
    async with server.async_client(key) as client:
        workers = [asyncio.create_task(_hammer(client, seen, stop)) for _ in range(CONNECTIONS)]
        deadline = time.monotonic() + DEADLINE_S
        while sum(status == 200 for _, _, status in seen) < 200 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        key_id = keys.bearer_key(f"Bearer {key}")["id"]  # type: ignore[index]
        revoking = time.monotonic()
        assert await asyncio.to_thread(keys.revoke_key, server.db, key_id, time.time())
        revoked_at = time.monotonic()
        settled = revoked_at + TTL_S
        while sum(start > settled for start, _, _ in seen) < 100 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.gather(*workers)
    return seen, revoking, revoked_at


def test_a_revoked_key_is_refused_within_a_second_by_every_process(two_workers: Server) -> None:
    key = two_workers.create_key("enterprise", rate_limit_per_minute=10_000_000)
    seen, revoking, revoked_at = asyncio.run(_revoke_under_load(two_workers, key))
    before = [status for _, end, status in seen if end < revoking]
    after = [status for start, _, status in seen if start > revoked_at + TTL_S]
    assert before and set(before) == {200}
    assert len(after) >= 100 and set(after) == {401}, sorted(set(after))


async def _burst(server: Server, key: str, n: int) -> list[int]:
    async with server.async_client(key) as client:
        answers = await asyncio.gather(*(client.get("/v1/account") for _ in range(n)))
    return [answer.status_code for answer in answers]


def test_leases_never_let_a_key_past_its_limit_and_give_back_what_they_hold(
    two_workers: Server,
) -> None:
    limit = 10 * LEASE_SHARE  # far enough from the limit for leases of several requests
    key = two_workers.create_key("enterprise", rate_limit_per_minute=limit)
    with two_workers.fresh_rate_window(), two_workers.client(key) as client:
        statuses = asyncio.run(_burst(two_workers, key, limit + 40))
        allowed = statuses.count(200)
        assert allowed <= limit and set(statuses) <= {200, 429}
        # What leases still hold comes back within a second: the key gets all it is owed
        deadline = time.monotonic() + DEADLINE_S
        while allowed < limit and time.monotonic() < deadline:
            answer = client.get("/v1/account")
            allowed += answer.status_code == 200
            if answer.status_code == 429:
                time.sleep(0.05)
        assert allowed == limit
        assert [client.get("/v1/account").status_code for _ in range(20)] == [429] * 20
