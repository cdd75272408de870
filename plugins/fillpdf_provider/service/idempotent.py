"""``Idempotency-Key``: a repeated request within 24 hours gets the first answer again.

The first request with a key claims it (a row with ``done = false``); a repeat that arrives
while the first is still running waits for its answer rather than doing the work twice. A
repeat with a different body is refused: the key names one request, not a slot.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

from sqlalchemy import delete, select, update
from sqlalchemy.engine import Engine

from fillpdf_provider.service.db import idempotency, upsert
from fillpdf_provider.service.errors import ApiError

MAX_KEY_LENGTH = 255
WAIT_STEP_S = 0.05


@dataclass(frozen=True)
class Stored:
    status: int
    content_type: str
    body: bytes
    headers: dict[str, str]


def check_key(key: str) -> str:
    if not key or len(key) > MAX_KEY_LENGTH or not key.isprintable():
        raise ApiError(
            "invalid_request",
            f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} printable characters.",
            param="Idempotency-Key",
        )
    return key


def claim(
    engine: Engine,
    account_id: str,
    key: str,
    request_hash: str,
    now: float,
    retention: float,
    wait_s: float,
) -> Stored | None:
    """None if this request now owns ``key``; the stored answer if it was made before."""
    deadline = time.monotonic() + wait_s
    while True:
        with engine.begin() as conn:
            conn.execute(
                delete(idempotency).where(
                    idempotency.c.account_id == account_id,
                    idempotency.c.key == key,
                    idempotency.c.created_at <= now - retention,
                )
            )
            claimed = conn.execute(
                upsert(engine, idempotency)
                .values(
                    account_id=account_id,
                    key=key,
                    request_hash=request_hash,
                    created_at=now,
                    done=False,
                )
                .on_conflict_do_nothing()
                .returning(idempotency.c.key)
            ).scalar()
        if claimed is not None:
            return None
        with engine.connect() as conn:
            row = conn.execute(
                select(idempotency).where(
                    idempotency.c.account_id == account_id, idempotency.c.key == key
                )
            ).first()
        if row is None:  # released by a failed first attempt: try to claim it again
            continue
        if row.request_hash != request_hash:
            raise ApiError(
                "invalid_request",
                "This Idempotency-Key was used for a different request in the last 24 hours; "
                "use a new key for a new request.",
                param="Idempotency-Key",
            )
        if row.done:
            return Stored(row.status, row.content_type, row.body, json.loads(row.headers or "{}"))
        if time.monotonic() >= deadline:
            raise ApiError(
                "rate_limit_error",
                "The first request with this Idempotency-Key is still running; retry shortly.",
                param="Idempotency-Key",
                headers={"Retry-After": "1"},
            )
        time.sleep(WAIT_STEP_S)


def finish(engine: Engine, account_id: str, key: str, answer: Stored) -> None:
    with engine.begin() as conn:
        conn.execute(
            update(idempotency)
            .where(idempotency.c.account_id == account_id, idempotency.c.key == key)
            .values(
                done=True,
                status=answer.status,
                content_type=answer.content_type,
                body=answer.body,
                headers=json.dumps(answer.headers),
            )
        )


def release(engine: Engine, account_id: str, key: str) -> None:
    """Forget a claim whose request failed unexpectedly, so a retry can do the work."""
    with engine.begin() as conn:
        conn.execute(
            delete(idempotency).where(
                idempotency.c.account_id == account_id,
                idempotency.c.key == key,
                idempotency.c.done.is_(False),
            )
        )
