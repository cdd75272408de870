"""Requests per key per minute, counted in the database so every server process agrees.

A fixed one-minute window per key: each request adds one in a single ``INSERT ... ON
CONFLICT DO UPDATE ... RETURNING``, and the count it gets back decides. Fifty requests at
once against a limit of ten give exactly ten successes, whichever process serves them.
"""

from __future__ import annotations

import math
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

WINDOW_S = 60


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


def hit(db: Engine | Connection, key_id: str, limit: int | None, now: float) -> RateState:
    """Count one request of ``key_id`` and say whether it is within ``limit``.

    On a ``Connection`` the count joins the caller's transaction, which commits it.
    """
    window = int(now // WINDOW_S) * WINDOW_S
    reset = window + WINDOW_S
    retry_after = max(1, math.ceil(reset - now))
    if limit is None:
        return RateState(True, None, None, reset, retry_after)
    values = {"key_id": key_id, "window_start": window}
    if isinstance(db, Engine):
        with db.begin() as conn:
            count = int(conn.execute(_COUNT, values).scalar_one())
    else:
        count = int(db.execute(_COUNT, values).scalar_one())
    allowed = count <= limit
    return RateState(allowed, limit, max(0, limit - count), reset, retry_after)


def forget_before(engine: Engine, now: float) -> int:
    """Drop finished windows (the sweeper calls this)."""
    with engine.begin() as conn:
        result = conn.execute(
            delete(rate_windows).where(rate_windows.c.window_start < now - 2 * WINDOW_S)
        )
    return result.rowcount
