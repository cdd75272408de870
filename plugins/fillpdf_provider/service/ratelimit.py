"""Requests per key per minute, counted in the database so every server process agrees.

A fixed one-minute window per key: each request adds one in a single ``INSERT ... ON
CONFLICT DO UPDATE ... RETURNING``, and the count it gets back decides. Fifty requests at
once against a limit of ten give exactly ten successes, whichever process serves them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sqlalchemy import delete
from sqlalchemy.engine import Engine

from fillpdf_provider.service.db import rate_windows, upsert

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


def hit(engine: Engine, key_id: str, limit: int | None, now: float) -> RateState:
    """Count one request of ``key_id`` and say whether it is within ``limit``."""
    window = int(now // WINDOW_S) * WINDOW_S
    reset = window + WINDOW_S
    retry_after = max(1, math.ceil(reset - now))
    if limit is None:
        return RateState(True, None, None, reset, retry_after)
    insert = upsert(engine, rate_windows).values(key_id=key_id, window_start=window, count=1)
    statement = insert.on_conflict_do_update(
        index_elements=[rate_windows.c.key_id, rate_windows.c.window_start],
        set_={"count": rate_windows.c.count + 1},
    ).returning(rate_windows.c.count)
    with engine.begin() as conn:
        count = int(conn.execute(statement).scalar_one())
    allowed = count <= limit
    return RateState(allowed, limit, max(0, limit - count), reset, retry_after)


def forget_before(engine: Engine, now: float) -> int:
    """Drop finished windows (the sweeper calls this)."""
    with engine.begin() as conn:
        result = conn.execute(
            delete(rate_windows).where(rate_windows.c.window_start < now - 2 * WINDOW_S)
        )
    return result.rowcount
