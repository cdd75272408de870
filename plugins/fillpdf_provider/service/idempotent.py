"""``Idempotency-Key``: a repeated request within 24 hours gets the first answer again.

The first request with a key claims it (a row with ``done = false`` naming the server
instance doing the work); a repeat that arrives while the first is still running waits for
its answer rather than doing the work twice. The wait holds no thread (the event loop sleeps
between short reads, backing off), is bounded, and ends early when the first request's
server has died: then the repeat does the work itself. A repeat with a different body is
refused: the key names one request, not a slot.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from sqlalchemy import delete, select, update
from sqlalchemy.engine import Connection, Engine

from fillpdf_provider.service import db_outage
from fillpdf_provider.service.db import idempotency, upsert
from fillpdf_provider.service.errors import ApiError

MAX_KEY_LENGTH = 255
WAIT_FIRST_S = 0.05
WAIT_MAX_S = 0.5


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


class _Running:
    """The key is claimed by a request that has not finished."""

    def __init__(self, owner: str | None) -> None:
        self.owner = owner


def _try_claim(
    engine: Engine,
    account_id: str,
    key: str,
    request_hash: str,
    now: float,
    retention: float,
    owner: str,
) -> Stored | _Running | None:
    """One attempt: None if this request now owns ``key``, else what holds it."""
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
                owner=owner,
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
        return _try_claim(engine, account_id, key, request_hash, now, retention, owner)
    if row.request_hash != request_hash:
        raise ApiError(
            "invalid_request",
            "This Idempotency-Key was used for a different request in the last 24 hours; "
            "use a new key for a new request.",
            param="Idempotency-Key",
        )
    if row.done:
        return Stored(row.status, row.content_type, row.body, json.loads(row.headers or "{}"))
    return _Running(row.owner)


async def claim(
    engine: Engine,
    account_id: str,
    key: str,
    request_hash: str,
    now: float,
    retention: float,
    *,
    owner: str,
    owner_alive: Callable[[str | None], bool],
    wait_s: float,
) -> Stored | None:
    """None if this request now owns ``key``; the stored answer if it was made before.

    While another request holds the key, poll with backoff until it finishes, its server
    is found dead (then take the key over), or ``wait_s`` passes (429 with Retry-After).
    If the database drops the connection, the claim may have been written all the same:
    releasing it is owed (a no-op if it was not).
    """
    try:
        deadline = time.monotonic() + wait_s
        step = WAIT_FIRST_S
        while True:
            state = await anyio.to_thread.run_sync(
                _try_claim, engine, account_id, key, request_hash, now, retention, owner
            )
            if not isinstance(state, _Running):
                return state
            if not await anyio.to_thread.run_sync(owner_alive, state.owner):
                await anyio.to_thread.run_sync(_take_over, engine, account_id, key, state.owner)
                continue
            if time.monotonic() >= deadline:
                raise ApiError(
                    "rate_limit_error",
                    "The first request with this Idempotency-Key is still running; retry shortly.",
                    param="Idempotency-Key",
                    headers={"Retry-After": "1"},
                )
            await asyncio.sleep(step)
            step = min(step * 2, WAIT_MAX_S)
    except Exception as error:
        if db_outage.is_passing(error):
            db_outage.owe_claim(engine, db_outage.Claim(account_id, key, now, owner))
        raise


def _take_over(engine: Engine, account_id: str, key: str, owner: str | None) -> None:
    """Drop the claim of a request whose server died (only if that owner still holds it)."""
    with engine.begin() as conn:
        conn.execute(
            delete(idempotency).where(
                idempotency.c.account_id == account_id,
                idempotency.c.key == key,
                idempotency.c.done.is_(False),
                idempotency.c.owner.is_(None) if owner is None else idempotency.c.owner == owner,
            )
        )


def finish(engine: Engine, account_id: str, key: str, answer: Stored) -> None:
    with engine.begin() as conn:
        finish_in(conn, account_id, key, answer)


def finish_in(conn: Connection, account_id: str, key: str, answer: Stored) -> None:
    """Store the answer in the caller's transaction (a conversion stores it with its row,
    so a crash between the two can never make a retry convert and bill again)."""
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


def release_or_owe(engine: Engine, claim: db_outage.Claim) -> None:
    """``release`` the claim; if the database can't take it now, the next recovery does."""
    try:
        release(engine, claim.account_id, claim.key)
    except Exception as error:
        if not db_outage.is_passing(error):
            raise
        db_outage.owe_claim(engine, claim)
        db_outage.note(
            error, "database unavailable; the Idempotency-Key is released once it takes writes"
        )


def release_exactly(engine: Engine, claim: db_outage.Claim) -> bool:
    """Release ``claim`` if it is still unfinished; never a newer claim of the same key."""
    with engine.begin() as conn:
        deleted = conn.execute(
            delete(idempotency).where(
                idempotency.c.account_id == claim.account_id,
                idempotency.c.key == claim.key,
                idempotency.c.done.is_(False),
                idempotency.c.created_at == claim.claimed_at,
                idempotency.c.owner == claim.owner,
            )
        ).rowcount
    return bool(deleted)
