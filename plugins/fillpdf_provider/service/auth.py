"""Who is calling: the API key (401), then that key's requests per minute (429).

Both run before anything reads the request's body, so a refused caller costs no upload.
Most requests are answered from memory: a caller checked in the last second (callers.py)
and a rate lease (ratelimit.py); the rest read and count in the database.
"""

from __future__ import annotations

import asyncio
import time
from typing import Annotated

import anyio
from fastapi import Depends, Request

from fillpdf_provider.service import db_outage, ratelimit
from fillpdf_provider.service.errors import ApiError
from fillpdf_provider.service.keys import Caller, authenticate
from fillpdf_provider.service.state import Service, service_of


def _authenticate_and_count(
    service: Service, authorization: str | None
) -> tuple[Caller | None, ratelimit.RateState | None]:
    """The caller and its rate state after counting this request; ``(None, None)`` if no key.

    One connection for both; the read runs before the count's write transaction, so SQLite
    never has to upgrade a read snapshot to a write (which fails under load).
    """
    read_at = time.monotonic()
    with service.db.connect() as conn:
        caller = authenticate(conn, authorization)
        if caller is None:
            return None, None
        state, lease = service.rates.count(
            conn, caller.key_id, caller.plan.rate_limit_per_minute, service.now()
        )
        conn.commit()
    service.rates.keep(caller.key_id, lease)
    service.callers.put(authorization, caller, read_at)
    return caller, state


def _remembered(
    service: Service, authorization: str | None
) -> tuple[Caller | None, ratelimit.RateState | None]:
    """The caller and rate state from this process's memory, or ``(None, None)``: a caller
    checked under a second ago whose key holds a lease (no database, no thread). Once per
    half-second a request starts reading the key again beside it (``_renew``)."""
    caller = service.callers.get(authorization)
    if caller is None:
        return None, None
    state = service.rates.take(caller.key_id, caller.plan.rate_limit_per_minute, service.now())
    if state is None:
        return None, None
    if service.callers.due(caller):
        renewal = asyncio.create_task(_renew(service, authorization, caller))
        service.renewals.add(renewal)
        renewal.add_done_callback(service.renewals.discard)
    return caller, state


async def _renew(service: Service, authorization: str | None, caller: Caller) -> None:
    """Read ``caller``'s key again, beside the requests the cache answers meanwhile."""
    read_at = time.monotonic()
    renewed: Caller | None = caller
    try:
        renewed = await anyio.to_thread.run_sync(authenticate, service.db, authorization)
    except Exception as error:  # the database is away: the entry lapses as it would have
        db_outage.note(error, "a key could not be read again", key_id=caller.key_id)
        read_at = 0.0
    finally:
        service.callers.renewed(caller.key_id, renewed, read_at)


async def authorize(request: Request) -> Caller:
    """The caller of an authenticated route; its rate-limit headers go on the answer."""
    service = service_of(request)
    authorization = request.headers.get("authorization")
    caller, rate = _remembered(service, authorization)
    if caller is None:
        caller, rate = await anyio.to_thread.run_sync(
            _authenticate_and_count, service, authorization
        )
    if caller is None or rate is None:
        raise ApiError(
            "authentication_error",
            "Send a valid API key as 'Authorization: Bearer fpk_...'; keys are created with "
            "`fillpdf keys create`.",
            headers={"WWW-Authenticate": "Bearer"},
        )
    request.state.account_id = caller.account_id
    request.state.rate_headers = rate.headers()
    if not rate.allowed:
        raise ApiError(
            "rate_limit_error",
            f"Over {rate.limit} requests per minute for this key; retry after "
            f"{rate.retry_after} s (X-RateLimit-Reset).",
        )
    return caller


#: A route parameter of this type makes the route authenticated and rate limited.
Authorized = Annotated[Caller, Depends(authorize)]
