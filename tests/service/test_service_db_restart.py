"""PostgreSQL restarted under a flood of converts and fills: the service answers every request
in the gap with a quick 503 and ``Retry-After`` (never a 500, never a hang), bills nothing
twice and loses nothing, gives back later what it could not give back in the gap, and serves
again within seconds of the database's return, in the same process.

The cluster is the test's own (``pause``/``resume`` stop and start it on its port and data
dir), so no other test's database goes away under it.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from fillpdf_provider.service.db import conversions, idempotency, reservations, usage
from kits.pgcluster import PgCluster, find_pg_bin
from kits.servicekit import Server, flat_form, start_server

pytestmark = pytest.mark.system

#: How long the database stays down: long enough for every path (auth, claims, reservations,
#: commits, give-backs) to meet it, and for the caller cache and rate leases to run out.
OUTAGE_S = 10.0
#: No request may take longer, database down or not.
REQUEST_DEADLINE_S = 15.0
#: The service must convert and fill again within this long after the database is back.
BACK_WITHIN_S = 20.0
CLIENTS = 4
#: Pages of the conversion in flight when the database stops: still converting when it does.
LONG_PAGES = 200
#: The server's log line when it gives back what requests could not while the database was down.
SETTLED = "the database takes writes again; gave back what requests left while it could not"
_ids = itertools.count(1)


@dataclass(frozen=True)
class Outcome:
    kind: str
    idempotency_key: str
    status: int | str
    seconds: float
    retry_after: str | None
    body: Any


@pytest.fixture(scope="module")
def cluster() -> Iterator[PgCluster]:
    """A PostgreSQL of this module's own, since the test stops it."""
    if find_pg_bin() is None:
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql to run these)")
    with PgCluster(dbname="fillpdf_restart") as own:
        yield own


def _post(client: httpx.Client, kind: str, key: str, pdf: bytes, fill: dict[str, Any]) -> Outcome:
    """One request, timed; a transport error (a hang past the deadline) is its outcome."""
    started = time.monotonic()
    headers = {"Idempotency-Key": key}
    try:
        if kind == "convert":
            response = client.post("/v1/convert", files={"file": ("f.pdf", pdf)}, headers=headers)
        else:
            response = client.post("/v1/fill", json=fill, headers=headers)
    except httpx.TransportError as exc:
        return Outcome(kind, key, type(exc).__name__, time.monotonic() - started, None, None)
    body: Any = response.content
    if response.headers.get("content-type", "").startswith("application/json"):
        body = response.json()
    return Outcome(
        kind,
        key,
        response.status_code,
        time.monotonic() - started,
        response.headers.get("retry-after"),
        body,
    )


class Flood:
    """``CLIENTS`` threads, half sending converts and half fills by conversion_id, each
    request with an Idempotency-Key sent again after a 503 until it is answered, as a careful
    client does."""

    def __init__(self, server: Server, key: str, fill: dict[str, Any]) -> None:
        self.server = server
        self.key = key
        self.fill = fill
        self.pdf = flat_form(1)
        self.outcomes: list[Outcome] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._client, args=(n,), daemon=True) for n in range(CLIENTS)
        ]

    def _client(self, n: int) -> None:
        kind = "convert" if n % 2 else "fill"  # half the clients convert, half fill
        with self.server.client(self.key, timeout=REQUEST_DEADLINE_S) as client:
            while not self.stopping.is_set():
                key = f"flood-{n}-{next(_ids)}"
                while True:  # the same key again after a 503, until it is answered
                    outcome = _post(client, kind, key, self.pdf, self.fill)
                    with self._lock:
                        self.outcomes.append(outcome)
                    if outcome.status != 503:
                        break
                    self.stopping.wait(0.2)  # pacing, as a client honouring Retry-After

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self.stopping.set()
        for thread in self._threads:
            thread.join(REQUEST_DEADLINE_S + 5)
        assert not any(thread.is_alive() for thread in self._threads), "a client hangs"

    def answered(self, status: int) -> int:
        with self._lock:
            return sum(1 for outcome in self.outcomes if outcome.status == status)


def _scalar(server: Server, query: Any) -> int:
    with server.db.connect() as conn:
        return int(conn.execute(query).scalar() or 0)


def _wait(what: str, condition: Any, timeout: float, server: Server) -> float:
    """Seconds until ``condition()`` holds; fails after ``timeout`` with the server's log."""
    started = time.monotonic()
    while not condition():
        if time.monotonic() - started > timeout:
            tail = "\n".join(line[:400] for line in server.log_lines()[-30:])
            raise AssertionError(f"{what}: not within {timeout:g} s\n{tail}")
        time.sleep(0.05)
    return time.monotonic() - started


def _serves(server: Server, key: str, fill: dict[str, Any], probes: list[Outcome]) -> bool:
    """Whether a convert and a fill both succeed now (each with a key of its own)."""
    with server.client(key, timeout=REQUEST_DEADLINE_S) as client:
        for kind in ("convert", "fill"):
            probes.append(_post(client, kind, f"probe-{next(_ids)}", flat_form(1), fill))
            if probes[-1].status != 200:
                return False
    return True


def test_a_postgres_restart_under_load_answers_503_and_loses_nothing(
    cluster: PgCluster, tmp_path: Path
) -> None:
    server = start_server(tmp_path / "data", cluster.url)
    try:
        pid = server.process.pid
        key = server.create_key("enterprise")
        with server.client(key, timeout=REQUEST_DEADLINE_S) as client:
            first = client.post("/v1/convert", files={"file": ("f.pdf", flat_form(1))})
        assert first.status_code == 200, first.text
        result = first.json()
        names = [entry["name"] for entry in result["schema"] if entry["type"] == "text"]
        fill = {"conversion_id": result["conversion_id"], "values": {names[0]: "Ada"}}

        flood = Flood(server, key, fill)
        flood.start()
        _wait("the flood converts and fills", lambda: flood.answered(200) >= 4, 30, server)

        # One long conversion holds reserved pages when the database stops: neither its
        # commit nor the give-back of its pages can reach the database.
        long_answer: list[Outcome] = []
        long_pdf = flat_form(LONG_PAGES)

        def long_convert() -> None:
            with server.client(key, timeout=REQUEST_DEADLINE_S + 30) as client:
                long_answer.append(_post(client, "convert", "long-1", long_pdf, fill))

        long_thread = threading.Thread(target=long_convert, daemon=True)
        long_thread.start()
        _wait(
            "the long conversion reserves its pages",
            lambda: (
                _scalar(server, select(func.count()).select_from(reservations)) > 0
                and _scalar(server, select(func.max(reservations.c.pages))) == LONG_PAGES
            ),
            30,
            server,
        )

        cluster.pause()
        down_at = time.monotonic()
        _wait("requests answered 503 in the gap", lambda: flood.answered(503) >= 5, 10, server)
        time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down_at)))  # the outage itself
        cluster.resume()
        probes: list[Outcome] = []
        back = _wait("a convert and a fill succeed", lambda: _serves(server, key, fill, probes),
                     BACK_WITHIN_S, server)  # fmt: skip
        flood.stop()
        long_thread.join(REQUEST_DEADLINE_S + 30)

        outcomes = flood.outcomes + long_answer + probes
        statuses = sorted({str(o.status) for o in outcomes})
        assert {o.status for o in outcomes} <= {200, 503}, statuses
        slowest = max(outcomes, key=lambda o: o.seconds)
        assert slowest.seconds < REQUEST_DEADLINE_S, slowest
        unavailable = [o for o in outcomes if o.status == 503]
        for outcome in unavailable:
            assert outcome.body["error"]["type"] == "service_unavailable", outcome
            assert outcome.retry_after is not None and outcome.retry_after.isdigit(), outcome
        database = [o for o in unavailable if "database" in o.body["error"]["message"]]
        assert database, [o.body for o in unavailable]
        assert "retry" in database[0].body["error"]["message"].lower()
        assert {o.kind for o in database} == {"convert", "fill"}

        (long_outcome,) = long_answer
        assert long_outcome.status == 503, long_outcome  # it could not be recorded

        # Recovery gives back what the gap left: the long conversion's pages and claims.
        _wait(
            "no reservation or unfinished claim left",
            lambda: (
                _scalar(server, select(func.count()).select_from(reservations)) == 0
                and _scalar(
                    server,
                    select(func.count())
                    .select_from(idempotency)
                    .where(idempotency.c.done.is_(False)),
                )
                == 0
            ),
            BACK_WITHIN_S,
            server,
        )
        entries = server.wait_for_log(
            lambda entries: any(e["message"] == SETTLED for e in entries), what=SETTLED
        )
        given_back = [e for e in entries if e["message"] == SETTLED]
        assert any(e["released_reservations"] for e in given_back), given_back
        billed = _scalar(server, select(func.coalesce(func.sum(usage.c.pages_used), 0)))
        pages = _scalar(server, select(func.coalesce(func.sum(conversions.c.pages), 0)))
        assert billed == pages
        # Every conversion is one a client was answered with: none made twice for one key.
        answered = {
            o.body["conversion_id"] for o in outcomes if o.kind == "convert" and o.status == 200
        }
        with server.db.connect() as conn:
            stored = set(conn.execute(select(conversions.c.id)).scalars())
        assert stored == answered | {result["conversion_id"]}

        # The long conversion's key was released: sent again it runs once, then replays.
        with server.client(key, timeout=60) as client:
            again = _post(client, "convert", "long-1", long_pdf, fill)
            replay = client.post(
                "/v1/convert",
                files={"file": ("f.pdf", long_pdf)},
                headers={"Idempotency-Key": "long-1"},
            )
        assert again.status == 200, again
        assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
        assert replay.json()["conversion_id"] == again.body["conversion_id"]
        billed_after = _scalar(server, select(func.coalesce(func.sum(usage.c.pages_used), 0)))
        assert billed_after == billed + LONG_PAGES

        assert server.alive() and server.process.pid == pid
        assert not any("unhandled error" in line for line in server.log_lines())
        print(
            f"outage {OUTAGE_S:g} s: {len(outcomes)} requests, {len(unavailable)} answered 503, "
            f"slowest {slowest.seconds:.2f} s; serving again {back:.2f} s after the restart"
        )
    finally:
        server.stop()
