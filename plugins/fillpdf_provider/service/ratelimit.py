"""Requests per key per minute, counted in the database so every server process agrees.

A fixed one-minute window per key: a request adds one in a single ``INSERT ... ON CONFLICT
DO UPDATE ... RETURNING``, and the count it gets back decides. Fifty requests at once
against a limit of ten give exactly ten successes, whichever process serves them.

Far from its limit, a key's requests need not each write: the write that counts one request
also sets aside a lease, up to ``LEASE_MAX`` more requests (never more than a
``LEASE_SHARE``-th of what is left), which this process then answers from memory. A lease is
counted when it is taken, so no process can let a key past its limit. What a lease has not
used after ``LEASE_S`` is given back, so near the limit, where leases shrink to nothing, a
key gets every request it is owed. A server killed with ``kill -9`` cannot give its leases
back: the key then has up to ``LEASE_MAX`` fewer requests until the minute ends.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from sqlalchemy import delete, text
from sqlalchemy.engine import Connection, Engine

from fillpdf_provider.service.db import rate_windows

#: One statement per request, on SQLite and PostgreSQL alike (both know ON CONFLICT and
#: RETURNING); plain SQL, since it runs on every authenticated request.
_COUNT = text(
    "INSERT INTO rate_windows (key_id, window_start, count) VALUES (:key_id, :window_start, 1)"
    " ON CONFLICT (key_id, window_start) DO UPDATE SET count = rate_windows.count + 1"
    " RETURNING count"
)

#: A refused request taken off the count again.
_UNCOUNT = text(
    "UPDATE rate_windows SET count = count - 1 WHERE key_id = :key_id"
    " AND window_start = :window_start"
)
#: Plain SQL, as ``_COUNT``: more requests set aside for a lease, only if all fit the limit.
_LEASE = text(
    "UPDATE rate_windows SET count = count + :extra"
    " WHERE key_id = :key_id AND window_start = :window_start AND count + :extra <= :limit"
)
#: A lease's unused requests, given back.
_GIVE_BACK = text(
    "UPDATE rate_windows SET count = count - :unused"
    " WHERE key_id = :key_id AND window_start = :window_start AND count >= :unused"
)

WINDOW_S = 60
#: Requests one lease may hold: one database write counts this many requests. At a thousand
#: requests a second a lease of 64 made twenty writes a second, each a pause that other
#: requests waited out (their 99th percentile tripled); 512 makes two or three.
LEASE_MAX = 512
#: A lease takes at most this share of what a key has left (1/16).
LEASE_SHARE = 16
#: Seconds a lease is used before what is left of it goes back.
LEASE_S = 1.0


@dataclass(frozen=True)
class RateState:
    allowed: bool
    limit: int | None
    remaining: int | None
    reset: int
    """Epoch second when the current window ends."""
    retry_after: int

    def headers(self) -> dict[str, str]:
        if self.limit is None:
            return {}
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(self.remaining),
            "X-RateLimit-Reset": str(self.reset),
        }
        if not self.allowed:
            headers["Retry-After"] = str(self.retry_after)
        return headers


def unlimited(now: float) -> RateState:
    """The state of a key without a limit: nothing is counted."""
    return _state(0, None, now)


def window_of(now: float) -> int:
    """The epoch second the window holding ``now`` starts."""
    return int(now // WINDOW_S) * WINDOW_S


def _count(conn: Connection, key_id: str, window: int, limit: int) -> int:
    """The window's count with this request; a request past the limit is not kept in it,
    so refused requests never take what a lease gives back."""
    values = {"key_id": key_id, "window_start": window}
    count = int(conn.execute(_COUNT, values).scalar_one())
    if count > limit:
        conn.execute(_UNCOUNT, values)
    return count


def _state(count: int, limit: int | None, now: float) -> RateState:
    """What a request that made the window's count ``count`` is told."""
    reset = window_of(now) + WINDOW_S
    retry_after = max(1, math.ceil(reset - now))
    if limit is None:
        return RateState(True, None, None, reset, retry_after)
    return RateState(count <= limit, limit, max(0, limit - count), reset, retry_after)


@dataclass
class Lease:
    """Requests of one key, in one window, this process may still answer without writing."""

    window: int
    left: int
    count: int
    """The window's count in the database when the lease was taken (the lease included)."""
    taken_at: float
    """``time.monotonic()`` when taken."""


class Leases:
    """This process's leases, one per key; the event loop takes from them, threads refill."""

    def __init__(self, lease_s: float = LEASE_S) -> None:
        self.lease_s = lease_s
        self._leases: dict[str, Lease] = {}
        self._returns: list[tuple[str, Lease]] = []  # unused requests to give back
        self._lock = threading.Lock()

    def take(self, key_id: str, limit: int | None, now: float) -> RateState | None:
        """One request of ``key_id`` answered from its lease, or None if the database must
        count it (no lease, an empty or old one, or another window)."""
        if limit is None:
            return unlimited(now)
        window = window_of(now)
        with self._lock:
            lease = self._leases.get(key_id)
            if (
                lease is None
                or lease.window != window
                or lease.left <= 0
                or time.monotonic() - lease.taken_at >= self.lease_s
            ):
                return None
            lease.left -= 1
            counted_as = lease.count - lease.left  # as if each request had been written
        return _state(counted_as, limit, now)

    def count(
        self, conn: Connection, key_id: str, limit: int | None, now: float
    ) -> tuple[RateState, Lease | None]:
        """Count one request in the database, set this key's old lease aside to go back, and
        take a new one if the key is far from its limit. Joins ``conn``'s transaction: the
        new lease is answered from only once the caller has committed it and passed it to
        ``keep``."""
        if limit is None:
            return unlimited(now), None
        window = window_of(now)
        with self._lock:  # what the old lease holds goes back with the next give-back
            old = self._leases.pop(key_id, None)
            if old is not None and old.left > 0:
                self._returns.append((key_id, old))
        count = _count(conn, key_id, window, limit)
        extra = min(LEASE_MAX, (limit - count) // LEASE_SHARE)
        lease = None
        if extra > 0:
            values = {"key_id": key_id, "window_start": window, "extra": extra, "limit": limit}
            if conn.execute(_LEASE, values).rowcount == 1:
                lease = Lease(window, extra, count + extra, time.monotonic())
        return _state(count, limit, now), lease

    def keep(self, key_id: str, lease: Lease | None) -> None:
        """Answer from ``lease`` (from ``count``, now committed). Leases of one key taken by
        several threads at once merge up to ``LEASE_MAX``; the rest, and a lease of an
        earlier window, go back."""
        if lease is None:
            return
        with self._lock:
            other = self._leases.get(key_id)
            if other is not None and other.window > lease.window:
                self._returns.append((key_id, lease))
                return
            if other is not None and other.window == lease.window:
                lease.left += other.left
                lease.count = max(lease.count, other.count)
            elif other is not None:
                self._returns.append((key_id, other))
            if lease.left > LEASE_MAX:
                surplus = lease.left - LEASE_MAX
                self._returns.append((key_id, Lease(lease.window, surplus, 0, lease.taken_at)))
                lease.left = LEASE_MAX
            self._leases[key_id] = lease

    def expired(self, *, every: bool = False) -> list[tuple[str, Lease]]:
        """Remove and return the leases past ``LEASE_S`` (``every``: all of them) that still
        hold requests, to be given back."""
        now = time.monotonic()
        with self._lock:
            done = [
                (key_id, lease)
                for key_id, lease in self._leases.items()
                if every or now - lease.taken_at >= self.lease_s
            ]
            for key_id, _ in done:
                del self._leases[key_id]
            done.extend(self._returns)
            self._returns.clear()
        return [(key_id, lease) for key_id, lease in done if lease.left > 0]

    def give_back_expired(self, engine: Engine, *, every: bool = False) -> int:
        """Give back the unused requests of old leases (all leases with ``every``)."""
        # in one order in every process, so two give-backs never wait on each other
        returned = sorted(self.expired(every=every), key=lambda kl: (kl[0], kl[1].window))
        try:
            if returned:
                with engine.begin() as conn:
                    for key_id, lease in returned:
                        give_back(conn, key_id, lease.window, lease.left)
        except Exception:
            with self._lock:  # tried again next time
                self._returns.extend(returned)
            raise
        return sum(lease.left for _, lease in returned)


def give_back(conn: Connection, key_id: str, window: int, unused: int) -> None:
    """Take ``unused`` leased requests off a window's count."""
    values = {"key_id": key_id, "window_start": window, "unused": unused}
    conn.execute(_GIVE_BACK, values)


def forget_before(engine: Engine, now: float) -> int:
    """Drop finished windows (the sweeper calls this)."""
    with engine.begin() as conn:
        result = conn.execute(
            delete(rate_windows).where(rate_windows.c.window_start < now - 2 * WINDOW_S)
        )
    return result.rowcount
